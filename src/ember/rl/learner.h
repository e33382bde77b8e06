// The learner: GRPO or PPO over the groups the rollouts produce, through the shared training step
// (train/train_step.h, as `ember train`). Each group's chunks get their advantages as the group
// arrives and join a queue; every micro_batch chunks of it, across groups, form a micro-batch at
// once, whose clipped-ratio loss (grpo.h) is the step's loss hook (TrainStep::add: autocast,
// backward into the accumulated gradients); step() runs the partial micro-batch left, then ends
// the TrainStep: the gradients scaled by 1 / the terms accumulated, clipped by global norm,
// AdamW. How chunks split into micro-batches changes only the order of the sums. The ratio is against the
// log-probabilities recorded at sampling time, whichever weights version sampled them.
// KL to the starting policy is measured on the same terms (no gradient).
// Data-parallel (collectives given): each rank accumulates its own groups; step() sums the
// gradients over the ranks (TrainStep), and every figure of StepStats is the job's (the ranks'
// sums, then the ratios), so all ranks step together, on the same weights.
//
// GRPO: every chunk of a trajectory has the trajectory's group-relative advantage (grpo.h).
// PPO: each chunk has its own GAE advantage from its reward and the values recorded at
// sampling (value_head.h), normalised over the group's chunks; the value head is fitted to
// the GAE returns (0.5 (V - R)^2 per chunk) by a TrainStep and AdamW of its own (value_lr), on
// the prefix features the log-probability pass computes anyway.
//
// flow_noise (noise_head.h): the std head is trained with the policy, in its optimizer (the
// same learning rate, clipping and AdamW), by the surrogate and the entropy bonus: the loss is
// the surrogate's sum minus entropy_bonus times the chunks' mean entropy per term. The KL to the
// start measures the start's policy under the start's head.
#pragma once

#include <array>
#include <memory>
#include <unordered_map>

#include "ember/rl/flow_noise.h"
#include "ember/rl/noise_head.h"
#include "ember/rl/trajectory.h"
#include "ember/rl/value_head.h"
#include "ember/train/train_step.h"

namespace ember::rl {

struct LearnerOptions {
  FlowNoise noise;
  bool ppo = false;  // else GRPO
  double gamma = 0.99, gae_lambda = 0.95, value_lr = 1e-3;
  double clip = 0.2;
  double lr = 1e-4;
  double grad_clip_norm = 1.0;
  int micro_batch = 16;
  int kl_every = 1;  // the reference's KL on every N-th micro-batch (a measurement only)
  bool train_prefix = true;  // false: the prefix's parameters frozen (model::is_prefix_parameter)
  // GRPO: a group whose mean success lies outside [filter_low, filter_high] is left out (at a
  // high success rate most groups all succeed and carry no signal; πRL keeps [0.1, 0.9])
  double filter_low = 0.0, filter_high = 1.0;
  double weight_decay = 0.0;  // the policy's AdamW
  std::array<double, 2> betas = {0.9, 0.95};  // πRL's
  double eps = 1e-8;
  double entropy_bonus = 0;  // flow_noise: the entropy's weight in the loss (πRL: 0.005)
  // train_prefix false: each micro-batch's prefix is encoded once, without gradients, for the
  // policy and the reference (model::PolicyModuleImpl::refresh_prefix); reuse_prefix false (the
  // tests' comparison): each call encodes its own
  bool reuse_prefix = true;
  // and kept for the later passes over the same chunks (several epochs; rl_loop passes them in
  // the same order), up to this many bytes of prefix states (0: none kept)
  int64_t prefix_cache_bytes = 0;
};

struct StepStats {
  double loss = 0;       // surrogate loss per term
  double kl = 0;         // k3 per term, to the starting policy (over the measured micro-batches)
  double clip_frac = 0;  // terms with |ratio - 1| > clip
  double grad_norm = 0;
  int64_t terms = 0;     // chunk x denoising step terms with an advantage
  int64_t chunks = 0, groups = 0, flat_groups = 0;  // flat: equal returns, no signal
  int64_t filtered_groups = 0;  // GRPO: mean success outside the filter (LearnerOptions)
  int64_t micro_batches = 0;  // the learner's passes (forward and backward) in the step, all ranks
  double success = 0, ret = 0;  // over the groups' episodes
  double value_loss = 0;        // PPO: 0.5 (V - R)^2 per chunk, before the step
  double entropy = 0;           // flow_noise: the mean entropy per step, row and dim of the chunks
  double noise_std = 0;         // flow_noise: the head's std over those (the chunks' geometric means, averaged)
};

// Sums values over the ranks in one collective (a tensor on device, the collectives'); values
// unchanged without collectives.
std::vector<double> sum_over_ranks(dist::Collectives* ranks, std::vector<double> values, const at::Device& device);

class Learner {
 public:
  // policy: trained in place (kept in eval mode: no dropout, so the log-probabilities are the
  // sampler's; options.train_prefix false: its prefix's parameters set not to require gradients); reference: the starting weights (frozen);
  // value: PPO's value head, trained in place (required with options.ppo). noise_head:
  // flow_noise's std head, trained in place (required with it). ranks: the data-parallel job's
  // collectives (null: one process); the weights must already agree.
  Learner(std::shared_ptr<model::PolicyModuleImpl> policy, std::shared_ptr<model::PolicyModuleImpl> reference, at::Device device, LearnerOptions options,
          ValueHead value = nullptr, std::shared_ptr<dist::Collectives> ranks = nullptr, NoiseHead noise_head = nullptr);
  Learner(const Learner&) = delete;  // the steps hold references to the states
  Learner& operator=(const Learner&) = delete;

  // Adds a group (copies its chunks): its full micro-batches' gradients now, the rest with the
  // next group's chunks or at step().
  void accumulate(const Group& group);
  // One optimizer step over what was accumulated since the last one (none when no term of any
  // rank had an advantage), at the learning rate times lr_scale (the warm-up's factor);
  // returns its figures and starts the next accumulation. Collective.
  StepStats step(double lr_scale = 1.0);
  // The KL from the sampling policy to the current weights over the terms accumulated since the
  // last step() (k3 of the ratio, per term; 0 with none), the partial micro-batch run first.
  // Collective. (--rl.target_kl)
  double pass_kl();
  // Drops what was accumulated since the last step(), and the chunks still queued, without an
  // optimizer step. Every rank calls it where the others do (it sums nothing).
  void discard();
  // Drops the prefixes kept for later passes (LearnerOptions::prefix_cache_bytes): the passes
  // over this batch of chunks are done.
  void forget_prefixes();
  // the bytes of prefix states kept for later passes
  int64_t kept_prefix_bytes() const { return kept_bytes_; }

  train::Optimizer& optimizer() { return *state_.optimizer; }
  // every parameter of the policy, the frozen ones too (checkpoints; the optimizer's are the trained)
  model::NamedTensors& params() { return state_.params; }
  std::shared_ptr<model::PolicyModuleImpl> policy() { return state_.module; }
  ValueHead value() { return value_; }
  // PPO: the value head's parameters and optimizer (checkpointed beside the policy's)
  model::NamedTensors& value_params() { return value_state_.params; }
  train::Optimizer* value_optimizer() { return value_state_.optimizer.get(); }
  // flow_noise: the std head (its moments are in optimizer()'s state, named noise_head.*)
  NoiseHead noise_head() { return noise_head_; }
  model::NamedTensors& noise_params() { return noise_params_; }

 private:
  // returns: PPO's value targets (empty for GRPO)
  void micro_step(const std::vector<const ChunkRecord*>& chunks, const std::vector<double>& advantages,
                  const std::vector<double>& returns);
  void accumulate_ppo(const Group& group);
  // runs the queue's full micro-batches (all: and the partial one left)
  void drain(bool all);
  // forgets the accumulation: the step's figures, gradients and counters
  void reset_accumulation();
  // the frozen prefix of a micro-batch: the one kept from an earlier pass over the same chunks,
  // else null (chain_log_prob encodes it); keep_prefix stores it for later passes
  std::shared_ptr<const model::PrefixState> kept_prefix(const std::vector<const ChunkRecord*>& chunks);
  void keep_prefix(const std::vector<const ChunkRecord*>& chunks, std::shared_ptr<const model::PrefixState> prefix);

  std::shared_ptr<dist::Collectives> ranks_;
  std::shared_ptr<model::PolicyModuleImpl> reference_;
  ValueHead value_;
  NoiseHead noise_head_ = nullptr, reference_noise_head_ = nullptr;  // flow_noise: trained; the start's (the KL's)
  model::NamedTensors noise_params_;             // noise_head_'s, named noise_head.<name>
  at::Device device_;
  LearnerOptions options_;
  // the policy's parameters and AdamW, and the value head's (no module: TrainStep's parts only)
  train::PolicyState state_, value_state_;
  std::unique_ptr<train::TrainStep> step_, value_step_;
  int64_t value_terms_ = 0;
  struct Pending {
    ChunkRecord chunk;
    double advantage = 0, ret = 0;  // ret: PPO's value target
  };
  std::vector<Pending> pending_;  // chunks with advantages, not in a micro-batch yet
  StepStats acc_;
  at::Tensor clipped_, kl_sum_, old_kl_sum_, entropy_sum_, std_sum_;
  int64_t kl_terms_ = 0, micro_batches_ = 0;
  int64_t episodes_ = 0;
  // prefixes kept between passes, by their micro-batch's first chunk's chain; a micro-batch
  // reuses one only if its chunks are the same (their chains, held here, are the same tensors)
  struct KeptPrefix {
    std::vector<at::Tensor> chains;
    std::shared_ptr<const model::PrefixState> prefix;
  };
  std::unordered_map<const void*, KeptPrefix> kept_;
  int64_t kept_bytes_ = 0;
};

// The figures of several optimizer steps as one (--rl.minibatches: a pass's steps): counts
// summed, success and return weighted by groups, the loss, KL, clip fraction and gradient norm
// by terms, the value loss, entropy and std by chunks.
StepStats combine(const std::vector<StepStats>& steps);

}  // namespace ember::rl
