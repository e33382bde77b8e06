#pragma once
// `ember rl --resume`: which checkpoint a run continues from, what it must keep of the flags the
// run being resumed had, and the restore of the learner's state (policy, optimizers, value and
// noise heads) and of the run's counters from that checkpoint.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "ember/rl/learner.h"
#include "ember/rl/rl_config.h"
#include "ember/train/checkpoint_dir.h"

namespace ember::rl {

// --resume: `flag` must have the value `now` that the run being resumed had (its rl_config.json);
// `before`: the value in files from before the flag. Throws kInvalidArgument naming both.
void must_keep(const std::filesystem::path& checkpoint, const std::string& flag, const std::string& now, const std::string& before);

// The latest complete checkpoint of --output_dir with --resume (the sampler's flags checked
// against it); nullopt for a fresh run, which must not find checkpoints there.
std::optional<train::CheckpointRef> resume_point(const RlConfig& c);

// The run's counters at the checkpoint resumed.
struct Resumed {
  int64_t step = 0, env_steps = 0;
};

// Loads a checkpoint's policy, optimizer states and heads into the learner; its counters.
Resumed restore(const std::filesystem::path& dir, Learner& learner, const at::Device& device);

}  // namespace ember::rl
