// The supervised training engine: composes the dataset, the policy, the loader, AdamW with
// warmup + cosine, checkpoints and metrics (torchtitan's shape: each part owns its config; the
// trainer wires them and is itself checkpointable: step, RNG states, loader position).
//
// A step: the rank's micro-batches (packed under the token budget) each contribute
// loss_sum / global_count to the gradient, where global_count is the number of real action
// entries of the whole step over all ranks, so the result does not depend on how packing or
// ranks split the work. Then gradients are averaged over ranks (a Collectives hook), clipped by
// global norm, and AdamW steps at the schedule's learning rate.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/dist/collectives.h"
#include "ember/train/train_config.h"

namespace ember::train {

using dist::Collectives;

struct TrainResult {
  int64_t first_step = 0;     // the step the run started at (> 0 on resume)
  int64_t steps_done = 0;     // the step count at the end
  std::vector<std::pair<int64_t, double>> losses;  // (step, loss) of every step run
  std::string last_checkpoint;
  int stopped_by = 0;  // SIGINT / SIGTERM that ended the run early (core/stop_signal.h), else 0
};

struct TrainerHooks {
  std::shared_ptr<Collectives> collectives;  // null: one process
  // Called after each step (tests use it to stop a run early, as a crash would).
  std::function<bool(int64_t step)> keep_going;
  bool quiet = false;  // no terminal output
};

// Runs config (already validated). Throws Error for bad input (naming the file/flag) before any
// step runs, and for failures during the run.
TrainResult train(const TrainConfig& config, const TrainerHooks& hooks = {});

}  // namespace ember::train
