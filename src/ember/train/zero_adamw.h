// ZeRO-1 AdamW: the optimizer state (exp_avg, exp_avg_sq, step) sharded across the ranks of a
// job. Each rank owns a contiguous range of parameters (balanced by element count), keeps the
// state of those only and updates them with the fused AdamW kernel; then every rank's updated
// parameters are broadcast from their owner (an all-gather of the shards, in ~25 MB buckets).
// The trainer hands owners() to its collectives (set_gradient_owners): each gradient bucket is
// then summed onto its owner only (a reduce per bucket, ZeRO's reduce-scatter), the other
// ranks drop their copy, and clipping sums the ranks' squared norms. Each rank reads only its
// own shard of the gradients.
//
// Checkpoints hold the full state under AdamW's names (state() gathers it), so a run saved with
// any number of ranks, sharded or not, resumes on any other.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ember/train/optimizer.h"
#include "ember/dist/collectives.h"

namespace ember::train {

// The owner of each parameter: ranks get contiguous ranges of the list, split where the running
// element count crosses k * total / world. A rank may own nothing (more ranks than parameters).
std::vector<int> shard_owners(const std::vector<int64_t>& numels, int world);

class ZeroAdamW final : public Optimizer {
 public:
  // params: every trainable parameter, in the same order on every rank. collectives must not be
  // null; it is used from the caller's thread.
  ZeroAdamW(model::NamedTensors params, AdamWOptions options, std::shared_ptr<Collectives> collectives);

  // Collective: updates this rank's parameters, then broadcasts every shard from its owner.
  void step(double lr, const at::Tensor& grad_multiplier = {}) override;
  void zero_grad() override;
  // Collective: the full state on every rank (each shard broadcast from its owner), in
  // AdamW::state()'s order and names.
  model::NamedTensors state() const override;
  // Takes this rank's entries from a full state (extra entries are ignored; a missing one of
  // this rank's throws Error kInvalidArgument naming `what`).
  void load_state(const std::map<std::string, at::Tensor>& tensors, const std::string& what) override;
  int64_t local_state_bytes() const override { return local_->local_state_bytes(); }

  const std::vector<int>& owners() const { return owner_; }

 private:
  std::vector<at::Tensor> owned_by(int rank) const;  // detached parameter tensors of one shard

  model::NamedTensors params_;
  std::shared_ptr<Collectives> collectives_;
  std::vector<int> owner_;          // per parameter
  std::unique_ptr<AdamW> local_;    // over this rank's parameters only
};

// The trainer's optimizer: ZeroAdamW when zero == 1 and collectives is set (more than one rank),
// else the replicated AdamW.
std::unique_ptr<Optimizer> make_optimizer(model::NamedTensors params, AdamWOptions options, int64_t zero,
                                          std::shared_ptr<Collectives> collectives);

// One log line: optimizer-state bytes per rank, replicated vs what this rank holds.
std::string optimizer_memory_line(const Optimizer& optimizer, const model::NamedTensors& params, int world);

}  // namespace ember::train
