// A training run's checkpoints: each holds the policy files (policy_checkpoint.h), the
// optimizer's state, trainer_state.json (step, the loader's global position, seed, world size,
// the RNG states) and the run's configuration, written as a whole (checkpoint_dir.h) so that
// `--resume=true` continues bit for bit on any number of ranks.
#pragma once

#include <ATen/ATen.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "ember/data/sampler.h"
#include "ember/train/checkpoint_dir.h"
#include "ember/train/optimizer.h"
#include "ember/train/policy_checkpoint.h"
#include "ember/train/train_config.h"

namespace ember::train {

// What every run's checkpoint holds, `ember train`'s and `ember rl`'s: the policy files and
// optimizer states (FILE.safetensors) beside a JSON state whose "step" is the directory's.
// Loads dir's weights into params (by name) after checking the directory's checksums.
void restore_policy(const std::filesystem::path& dir, model::NamedTensors& params);
// Loads file (an optimizer state written by Optimizer::state) into optimizer, on device.
void restore_optimizer(const std::filesystem::path& file, Optimizer& optimizer, const at::Device& device);
// state["step"], refused (kCorruption naming file) unless it is dir's own step.
int64_t checked_step(const nlohmann::json& state, const std::filesystem::path& file, const std::filesystem::path& dir);

class Checkpointer {
 public:
  // main_rank: the rank that writes (every rank calls save(): the optimizer's state is
  // collective under ZeRO-1).
  Checkpointer(const TrainConfig& config, std::filesystem::path output_dir, at::Device device, int world_size, bool main_rank);

  // Whether the run saves after `step` updates (every --save_freq and at the end).
  bool due(int64_t step) const;
  // Writes checkpoints/step_<step>/ (main rank; "" elsewhere) and returns its path. next: the
  // loader's position after this step. The policy's files come from `policy` (shape, spec,
  // tokenizer and module).
  std::string save(int64_t step, const data::LoaderPosition& next, const PolicyBundle& policy, Optimizer& optimizer);

  struct Restored {
    int64_t step = 0;
    data::LoaderPosition position;
  };
  // Loads dir's weights into params (by name), the optimizer's state and the RNG states (the
  // CPU generator; the CUDA one when both sides have it). Throws Error naming the file at fault.
  Restored restore(const std::filesystem::path& dir, model::NamedTensors& params, Optimizer& optimizer) const;

 private:
  const TrainConfig& config_;
  std::filesystem::path output_dir_;
  at::Device device_;
  int world_size_;
  bool main_rank_;
  CheckpointWriter writer_;
};

}  // namespace ember::train
