// The policies of an RL run: the starting one (a checkpoint, or a fresh preset for runs from
// scratch), and copies of it for the rollout and the reference (KL) sides.
#pragma once

#include <string>
#include <vector>

#include "ember/rl/rl_config.h"
#include "ember/sim/tasks.h"
#include "ember/train/policy_checkpoint.h"

namespace ember::rl {

// config.checkpoint loaded on device (eval mode), or a fresh config.preset policy for the
// simulator's cameras, state and actions (identity normalisation; a tokenizer trained on the
// tasks' prompts), seeded by config.seed. Throws Error naming the checkpoint's file at fault,
// kInvalidArgument when its features are not the simulator's. config.denoise_steps > 0: the
// policy's flow_steps set to it (train::use_flow_steps: its checkpoints then record them, so
// evaluation and deployment sample as the RL run did).
train::PolicyBundle starting_policy(const RlConfig& config, const std::vector<const sim::TaskSpec*>& tasks, const at::Device& device);

// (copies of the policy for the rollout and the reference: train::copy_module)

}  // namespace ember::rl
