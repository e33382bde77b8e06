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

#include "ember/train/train_config.h"

namespace ember::train {

// Collective operations over the ranks of a job (implemented on c10d by the dist layer). All
// calls are collective: every rank makes them in the same order.
class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual int local_rank() const = 0;
  virtual int local_world_size() const = 0;  // ranks on this host
  // Sums each tensor in place across ranks (gradients: bucketed by the implementation).
  virtual void all_reduce_sum(std::vector<at::Tensor>& tensors) = 0;
  virtual double all_reduce_sum(double value) = 0;
  // Copies root's tensors into every other rank's (same shapes and dtypes on every rank).
  virtual void broadcast(std::vector<at::Tensor>& tensors, int root) = 0;
  // Gradient sync overlapped with the backward pass. attach_gradients(params) once: the
  // implementation may hook each parameter's gradient accumulation. arm_gradient_sync() before
  // a step's last backward: from then on a bucket's all-reduce may start as soon as all its
  // gradients are accumulated. reduce_gradients(grads) after that backward (grads[i] is
  // params[i].grad(), all defined) completes the sum over ranks. The defaults sum after the
  // backward pass.
  virtual void attach_gradients(const std::vector<at::Tensor>& params) { (void)params; }
  // ZeRO: owners[i] is the rank that updates params[i] (after attach_gradients). An
  // implementation that returns true then sums each gradient onto its owner only (a reduce per
  // bucket, no bucket spanning two owners: ZeRO's reduce-scatter), and reduce_gradients leaves
  // the gradients of other ranks' parameters undefined. false: gradients stay all-reduced.
  virtual bool set_gradient_owners(const std::vector<int>& owners) {
    (void)owners;
    return false;
  }
  virtual void arm_gradient_sync() {}
  virtual void reduce_gradients(std::vector<at::Tensor>& grads) { all_reduce_sum(grads); }
  virtual void barrier() = 0;
};

struct TrainResult {
  int64_t first_step = 0;     // the step the run started at (> 0 on resume)
  int64_t steps_done = 0;     // the step count at the end
  std::vector<std::pair<int64_t, double>> losses;  // (step, loss) of every step run
  std::string last_checkpoint;
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
