// A trained checkpoint as a closed-loop policy for ember's simulator (sim/policy.h): each
// environment's observation becomes a policy sample exactly as a dataset frame collected by
// `ember sim collect` would (same camera keys, state normalisation, prompt), the batch is
// packed and sampled in one call, and the chunks come back in the dataset's action units,
// clamped to the simulator's [-1, 1].
#pragma once

#include <memory>

#include "ember/sim/policy.h"
#include "ember/train/policy_checkpoint.h"
#include "ember/train/sampler.h"

namespace ember::eval {

using train::PolicyBundle;

// The dataset item an observation corresponds to, as `ember sim collect` records it: both
// cameras, the state under `state_key`, the instruction as the task. Throws kInternal when the
// observation came without camera images.
data::Item observation_item(const sim::Observation& obs, const std::string& instruction, const std::string& state_key);

// A normalised action chunk [H, >= action_dim] in the simulator's units, clamped to [-1, 1].
sim::ActionChunk action_chunk(const model::SampleBuilder& builder, const at::Tensor& actions);

// The chunks of a policy already in memory for a batch of observations: each observation built
// into a sample by `builder` (the policy's features), packed, sampled in one call of `sampler`
// (bf16 on CUDA), returned in the simulator's units. What CheckpointSimPolicy::act does once loaded.
std::vector<sim::ActionChunk> act_with(train::Sampler& sampler, const model::SampleBuilder& builder, const std::string& state_key,
                                       const std::vector<sim::PolicyInput>& inputs);

// A policy in memory as a closed-loop policy, e.g. `ember rl`'s learner between two steps (its
// --eval_freq), sampled eagerly (the weights stay as they train). The module and the builder must
// outlive it; the caller sets eval mode.
class ModuleSimPolicy : public sim::Policy {
 public:
  ModuleSimPolicy(model::PolicyModuleImpl& module, model::PolicyShape shape, const model::SampleBuilder& builder, std::string state_key,
                  at::Device device, std::string name)
      : sampler_(module, std::move(shape), device, {.cuda_graphs = false}), builder_(builder), state_key_(std::move(state_key)),
        name_(std::move(name)) {}
  std::vector<sim::ActionChunk> act(const std::vector<sim::PolicyInput>& inputs) override {
    return act_with(sampler_, builder_, state_key_, inputs);
  }
  std::string name() const override { return name_; }

 private:
  train::Sampler sampler_;
  const model::SampleBuilder& builder_;
  std::string state_key_;
  std::string name_;
};

class CheckpointSimPolicy : public sim::Policy {
 public:
  // Loads the checkpoint (or the latest under an output directory, or a LeRobot pi0.5
  // directory, whose prompts need `tokenizer_path`) on `device` ("auto", "cuda", "cpu"). Throws
  // Error naming the checkpoint's file at fault, or kInvalidArgument when its cameras are not
  // the simulator's (after rename_map), or rename_map is malformed or names an unknown camera.
  // rename_map: JSON text, simulator camera -> the policy camera it fills (--rename_map).
  // cuda_graphs: the engine (train/sampler.h: bf16 weights, CUDA graphs); false: the eager
  // sampler on the weights as loaded (bf16 autocast), as before the engine. flow_steps > 0: the
  // policy samples with that many denoising steps instead of its own (--policy.num_steps).
  CheckpointSimPolicy(const std::string& checkpoint, const std::string& device, uint64_t seed,
                      const std::string& tokenizer_path = "", const std::string& rename_map = "", bool cuda_graphs = true,
                      int flow_steps = 0);
  std::vector<sim::ActionChunk> act(const std::vector<sim::PolicyInput>& inputs) override;
  std::string name() const override { return bundle_.module->type() + "/" + bundle_.shape.preset; }

 private:
  PolicyBundle bundle_;
  std::unique_ptr<model::SampleBuilder> builder_;
  at::Device device_;
  std::unique_ptr<train::Sampler> sampler_;  // bf16 weights, CUDA graphs (train/sampler.h)
};

// Registers "checkpoint" with the simulator's policy registry (for `ember eval --checkpoint`).
void register_checkpoint_sim_policy();

}  // namespace ember::eval
