// What every policy type (pi05.h, groot.h) offers the trainer, inference, evaluation, RL and the
// benchmark: a flow-matching loss over a collated batch, action sampling, the FLOPs of a step,
// and the sampling hooks (the prefix once per request, velocities over it). Layers above model/
// hold only this interface; policy_type.h builds a policy of any registered type.
#pragma once

#include <torch/nn/module.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ember/core/error.h"
#include "ember/model/flops.h"
#include "ember/model/policy_inputs.h"
#include "ember/model/policy_shape.h"

namespace ember::model {

struct LossOut {
  at::Tensor loss;          // scalar: sum over counted entries / their count
  at::Tensor loss_sum;      // scalar: sum of squared errors over counted entries
  at::Tensor count;         // scalar: number of counted entries
};

// What a policy type keeps of a batch's prefix (images, prompt, state) between velocity calls.
struct PrefixState {
  virtual ~PrefixState() = default;
  // the bytes its tensors hold (RL's learner bounds what it keeps between passes by it)
  virtual int64_t bytes() const = 0;
};

class PolicyModuleImpl : public torch::nn::Module {
 public:
  // Flow-matching loss. noise [n, H, max_action_dim] and time [n] are drawn (from the current
  // generator) when not given; tests pass them to compare layouts.
  virtual LossOut loss(const PolicyInputs& in, std::optional<at::Tensor> noise = std::nullopt,
                       std::optional<at::Tensor> time = std::nullopt) = 0;
  // The flow-matching times [n] of uniform draws u [n] in [0, 1): what loss() draws from when
  // not given a time (the trainer draws a step's noise and times at once, so that how the step
  // is split into micro-batches does not change them).
  virtual at::Tensor flow_time(const at::Tensor& u) const = 0;
  // Integrates the flow from noise (drawn when not given): [n, H, max_action_dim] normalised actions.
  virtual at::Tensor sample_actions(const PolicyInputs& in, std::optional<at::Tensor> noise = std::nullopt) = 0;
  // Training FLOPs (forward + backward, model/flops.h's counting) of a step on the host-side
  // batch `in`: its real tokens (`real`), or what its layout computes, padding included.
  double step_flops(const PolicyInputs& in, bool real) const {
    return work_flops(real ? real_work(in, base_shape()) : layout_work(in, base_shape()));
  }
  // Training FLOPs of `work` (a frozen backbone's forward counted once, without its backward).
  virtual double work_flops(const StepWork& work) const = 0;
  // the registered type's name (policy.json's "type")
  virtual std::string type() const = 0;
  // The shapes the data side reads (cameras, image size, prompt, horizon, action dims, flow steps).
  virtual const PolicyShape& base_shape() const = 0;

  // --- sampling hooks (RL's stochastic chains, serving): one time convention for every type,
  // pi0's: t = 1 is noise, t = 0 the actions, an Euler step x_{t-dt} = x_t - dt * v.
  // The prefix of `in` (its samples' images, prompts and states), computed once. Under grad mode
  // it carries gradients where the policy's prefix parameters do.
  virtual std::shared_ptr<const PrefixState> encode_prefix(const PolicyInputs& in) = 0;
  // The prefix of `in` from `frozen`, encode_prefix(in) of a module whose prefix parameters
  // (is_prefix_parameter) held the values this one's hold: what they computed is shared, what
  // other parameters compute (groot's state encoder) is computed again, with this module's
  // weights and under the current grad mode. RL's learner with the prefix frozen encodes each
  // chunk's prefix once, without gradients, for the trained policy, the reference and every
  // pass (rl/learner.h). The default encodes again.
  virtual std::shared_ptr<const PrefixState> refresh_prefix(const PolicyInputs& in, std::shared_ptr<const PrefixState> frozen) {
    (void)frozen;
    return encode_prefix(in);
  }
  // Velocity [m*n, H, A] of noisy actions x_t [m*n, H, A] at times t [m*n] over encode_prefix(in)
  // (n = in.samples; m copies of the samples, copy-major: row i*n + j is sample j). Dropout off.
  // Padded action dims (past the sample's embodiment) are 0 or the trained path's velocity;
  // callers never read them.
  virtual at::Tensor prefix_velocity(const PolicyInputs& in, const PrefixState& prefix, const at::Tensor& x_t,
                                     const at::Tensor& t) = 0;
  // prefix_velocity's velocity, and in `hidden` the action expert's last hidden states
  // [m*n, H, expert_width()] (after its final norm, before the output projection), which RL's
  // learned exploration noise reads (rl/noise_head.h). A type without them: kUnsupported.
  virtual at::Tensor prefix_velocity_hidden(const PolicyInputs& in, const PrefixState& prefix, const at::Tensor& x_t,
                                            const at::Tensor& t, at::Tensor& hidden) {
    (void)in, (void)prefix, (void)x_t, (void)t, (void)hidden;
    throw Error(ErrorKind::kUnsupported, type() + " policies do not expose their action expert's hidden states (--rl.noise_method flow_noise reads them; use sde or every_step)");
  }
  virtual int64_t expert_width() const { return 0; }
  // [n, prefix_feature_dim()] float32, no gradient: each sample's prefix pooled (RL's critic reads it).
  virtual at::Tensor prefix_features(const PolicyInputs& in, const PrefixState& prefix) = 0;
  virtual int64_t prefix_feature_dim() const = 0;
  // Whether parameter `name` computes the prefix (frozen by `ember rl --rl.train expert`).
  virtual bool is_prefix_parameter(const std::string& name) const = 0;

  // Whether sample_actions on CUDA may be captured in a CUDA graph (train/sampler.h): for a
  // batch's tensor shapes and its plan's host numbers it makes no host copy or synchronisation
  // and no shape that depends on tensor values. False by default.
  virtual bool graph_safe() const { return false; }
  // Converts the weights to `dtype` for inference, the ones the type keeps in float32 excepted;
  // false (nothing changed) for a type without it. Training state (gradients, moments) is not
  // kept consistent: for modules that only sample.
  virtual bool to_param_dtype(at::ScalarType /*dtype*/) { return false; }

  // Names of the linear layers on the FP8 path (empty: none, or a type without FP8).
  virtual std::vector<std::string> fp8_layer_names() { return {}; }
  // Runs the forward of what the policy keeps frozen in training (groot's backbone) on `in`, for
  // `ember bench policy`'s timing; false (and nothing run) when nothing is frozen.
  virtual bool frozen_forward(const PolicyInputs& /*in*/) { return false; }
  // Adds how the module was built to its policy.json (informational; default nothing).
  virtual void annotate(nlohmann::json& /*policy_json*/) const {}
};

}  // namespace ember::model
