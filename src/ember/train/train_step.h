// The one training step of a policy: `ember train`, `ember bench policy` (synthetic batches) and
// the RL learner all run it, so what the benchmark measures is the step users run.
//
// A step: the rank's micro-batches (packed under the token budget) each contribute
// loss_sum / divisor to the gradient. One process divides by the step's count of real action
// entries. Ranks divide by a constant common to all of them and, after the gradients are summed,
// correct them by constant / global count on the device (their hosts do not meet every step), so
// the result does not depend on how packing or ranks split the work. Then the gradients are
// clipped by global norm (and scaled) inside AdamW's update, at the schedule's learning rate.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "ember/dist/collectives.h"
#include "ember/model/policy_type.h"
#include "ember/train/loader.h"
#include "ember/train/optimizer.h"
#include "ember/train/train_config.h"

namespace ember::train {

// The policy and its optimizer, built from the run's configuration on a device.
struct PolicyState {
  model::PolicyShape shape;                          // the data's shapes (arch->base())
  std::shared_ptr<const model::PolicyArch> arch;     // what the policy is (policy_type.h)
  std::shared_ptr<model::PolicyModuleImpl> module;   // the policy, whatever its type
  model::NamedTensors params;      // every parameter by name, as checkpoints see them
  std::vector<at::Tensor> param_list;  // those the optimizer trains (a frozen backbone's are not)
  std::unique_ptr<Optimizer> optimizer;
  // ZeRO-1 with collectives that sum each gradient onto its owner: the clipping sums the ranks'
  // squared norms over these collectives (null otherwise)
  Collectives* norm_over_ranks = nullptr;
};

// Builds the policy `arch` describes on device with config.policy's build options (FP8,
// parameters in config.policy.param_dtype, --policy.tune_backbone; train mode) and AdamW
// (replicated, or ZeRO-1 per config.dist.zero) over its trainable parameters, and attaches their
// gradients to the collectives (null: one process). Uses the global RNG (seed it first).
PolicyState build_policy_state(const TrainConfig& config, std::shared_ptr<const model::PolicyArch> arch, at::Device device,
                               const std::shared_ptr<Collectives>& collectives);
// The one builder of a trained module's state (build_policy_state's, the RL learner's policy and
// value head): `module`'s parameters, named with `prefix`, and AdamW with `optimizer`'s settings
// over those that require gradients (ZeRO-1 with zero = 1 and collectives of several ranks),
// their gradients attached to the collectives (null: none). extra: more trained parameters by
// name (the RL learner's noise head), in the optimizer and param_list but not in params (the
// checkpoints' policy files).
PolicyState optimizer_state(std::shared_ptr<torch::nn::Module> module, const std::string& prefix, const OptimizerConfig& optimizer,
                            int64_t zero = 0, const std::shared_ptr<Collectives>& collectives = nullptr,
                            const model::NamedTensors& extra = {});


// What a step measured. loss and grad_norm stay on the device until someone reads them.
struct StepOutput {
  at::Tensor loss;       // 0-d: mean over the real action values of the step (every rank's)
  at::Tensor grad_norm;  // 0-d: global gradient norm before clipping
  double flops = 0;      // this rank's training FLOPs on real tokens (model::train_flops)
};

// Optional timing inside a step (`ember bench policy --phases`): called after the copy to the
// device, the forward pass, the backward pass and the optimizer update.
enum class StepPhase { kCopy, kForward, kBackward, kOptimizer };
using PhaseMark = std::function<void(StepPhase)>;

class TrainStep {
 public:
  // state must outlive the step. common_divisor: the ranks' loss divisor (about the global count
  // of real action values; used only with collectives). autocast: bf16 autocast around forward
  // and backward (bf16 compute on CUDA, or bf16 parameters).
  TrainStep(PolicyState& state, at::Device device, double grad_clip_norm, bool autocast,
            std::shared_ptr<Collectives> collectives, double common_divisor);

  // One optimizer step on batch (this rank's micro-batches, on the host) at learning rate lr:
  // begin(), add() with the policy's flow-matching loss per micro-batch, finish().
  StepOutput run(const TrainBatch& batch, double lr, const PhaseMark& mark = nullptr);

  // The step in parts, for callers whose loss is their own and whose micro-batches arrive over
  // time (the RL learner). begin() clears the gradients and fixes the step's divisor (ranks: the
  // common divisor; one process: `divisor`, 1 when the count is not known yet). add() is the loss
  // hook: it runs loss_sum() (a 0-d sum over the micro-batch's terms) under the step's autocast
  // and backpropagates it / divisor; last: the step's last micro-batch (ranks start the gradient
  // sync on it). Returns the loss sum, detached. finish() sums over ranks, scales the gradients
  // by divisor / loss_count (the step's terms, every rank's), clips them and steps the optimizer.
  // Only these three touch state.optimizer, state.param_list and state.norm_over_ranks, so a
  // state without a policy module (RL's value head) can use them.
  void begin(double divisor = 1.0);
  at::Tensor add(const std::function<at::Tensor()>& loss_sum, bool last = false, const PhaseMark& mark = nullptr);
  StepOutput finish(double lr, double loss_count, const PhaseMark& mark = nullptr);

 private:
  PolicyState& state_;
  at::Device device_;
  double grad_clip_norm_;
  bool autocast_;
  std::shared_ptr<Collectives> collectives_;
  double common_divisor_;
  // the step under way (begin() to finish())
  at::Tensor loss_sum_;
  double divisor_ = 1.0;
};

}  // namespace ember::train
