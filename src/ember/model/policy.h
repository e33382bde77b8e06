// What every policy type (pi05.h, groot.h) offers the trainer, inference, evaluation and the
// benchmark: a flow-matching loss over a collated batch, action sampling, and the FLOPs of a step.
#pragma once

#include <torch/nn/module.h>

#include <optional>
#include <string>

#include "ember/model/policy_inputs.h"

namespace ember::model {

struct LossOut {
  at::Tensor loss;          // scalar: sum over counted entries / their count
  at::Tensor loss_sum;      // scalar: sum of squared errors over counted entries
  at::Tensor count;         // scalar: number of counted entries
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
  virtual double step_flops(const PolicyInputs& in, bool real) const = 0;
  // "pi05" | "groot" (policy.json's "type")
  virtual std::string type() const = 0;
};

}  // namespace ember::model
