// Helpers the policy tests share (pi05 and groot): pointers to samples for collate, the relative
// errors that their layout comparisons bound, and one loss-and-gradients pass (bf16 autocast or
// fp32) of either policy.
#pragma once

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "ember/model/policy_inputs.h"
#include "ember/model/policy_shape.h"

namespace ember::model::test {

inline std::vector<const PolicySample*> ptrs(const std::vector<PolicySample>& v) {
  std::vector<const PolicySample*> p;
  for (const auto& s : v) p.push_back(&s);
  return p;
}

// pi05's tiny preset with a short chunk, few action columns and short prompts: fast CPU tests
inline PolicyShape tiny_pi05_shape() {
  auto s = preset_shape("tiny");
  s.horizon = 6;
  s.max_action_dim = 8;
  s.max_prompt = 12;
  return s;
}

// Inference samples (no actions): 1..3 cameras in varying slots, prompts of 1..max_prompt tokens.
inline std::vector<PolicySample> inference_samples(const PolicyShape& shape, int n, uint64_t seed) {
  at::manual_seed(seed);
  std::vector<PolicySample> out(static_cast<size_t>(n));
  const int size = shape.vision.image_size;
  for (int i = 0; i < n; ++i) {
    auto& s = out[size_t(i)];
    for (int c = 0; c < 1 + (i + int(seed)) % 3; ++c) {
      s.images.push_back(at::rand({3, size, size}) * 2 - 1);
      s.camera_slots.push_back((c + i) % shape.max_cameras);
    }
    const int len = 1 + (i * 5 + int(seed) * 3) % shape.max_prompt;
    for (int j = 0; j < len; ++j) s.prompt.push_back(int((i * 31 + j * 7 + int(seed)) % shape.vocab));
  }
  return out;
}

// max |a - b| over max |b| (at least 1e-6)
inline double max_rel_err(const at::Tensor& a, const at::Tensor& b) {
  double scale = std::max(b.abs().max().item<double>(), 1e-6);
  return (a - b).abs().max().item<double>() / scale;
}

// ||a - b|| over ||b|| (Frobenius norms, in double; b's at least 1e-12): the error of a whole
// tensor, which rounding of its small entries does not dominate as it does max_rel_err's
inline double norm_rel_err(const at::Tensor& a, const at::Tensor& b) {
  auto a64 = a.to(at::kDouble), b64 = b.to(at::kDouble);
  return (a64 - b64).norm().item<double>() / std::max(b64.norm().item<double>(), 1e-12);
}

struct LossAndGrads {
  double loss;
  std::vector<at::Tensor> grads;  // per parameter (zeros where none), fp32
};

// One forward and backward pass of a policy (Pi05Policy, GrootPolicy) from zeroed gradients, on
// the device of `noise`: in bf16 autocast when bf16, else in the parameters' dtype. Each
// gradient has its parameter's dtype.
template <typename Policy>
LossAndGrads loss_and_grads(Policy& policy, const PolicyInputs& in, const at::Tensor& noise, const at::Tensor& time,
                            bool bf16 = true) {
  const auto device = noise.device().type();
  policy->zero_grad();
  if (bf16) {
    at::autocast::set_autocast_enabled(device, true);
    at::autocast::set_autocast_dtype(device, at::kBFloat16);
  }
  auto out = policy->loss(in, noise, time);
  out.loss.backward();
  if (bf16) {
    at::autocast::set_autocast_enabled(device, false);
    at::autocast::clear_cache();
  }
  LossAndGrads r{out.loss.template item<double>(), {}};
  for (const auto& p : policy->parameters()) {
    EXPECT_EQ(p.grad().defined() ? p.grad().scalar_type() : p.scalar_type(), p.scalar_type());
    r.grads.push_back(p.grad().defined() ? p.grad().to(at::kFloat) : at::zeros_like(p, at::kFloat));
  }
  return r;
}

}  // namespace ember::model::test
