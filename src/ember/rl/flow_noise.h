// Flow-noise (as in πRL): the policy's Euler integration of the flow made stochastic, so that
// every denoising step is a Gaussian transition whose log-probability is exact.
//
//   x_0 ~ N(0, I)                                     [n, H, A], the usual initial noise
//   step i (t_i = 1 - i/K, dt = -1/K):
//     mu_i      = x_i + dt * v(x_i, t_i)              the deterministic Euler step
//     x_{i+1}   = mu_i + sigma * eps_i                on the real action dims (d < action_dim)
//     x_{i+1}   = t_{i+1} * x_0                       on the padded dims (A > action_dim)
//   log p_i     = sum over (H, d < action_dim) of log N(x_{i+1}; mu_i, sigma^2)
//
// The padded dims follow the path the policy was trained on (its targets are zero there:
// x_t = t * noise), a policy-independent transition, so the chain's density is the product of
// the K Gaussians above under any weights: the ratio of two policies' log p_i on a stored chain
// is an exact importance ratio. x_K[:, :, :action_dim] is the action chunk (normalised).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "ember/model/policy.h"

namespace ember::rl {

struct FlowNoise {
  double sigma = 0.1;     // std of each step's noise, in normalised action units (> 0)
  int64_t action_dim = 7; // the real action dims (<= shape.max_action_dim)
};

struct Chain {
  at::Tensor x;         // [n, K+1, H, A] float32: x_0 .. x_K
  at::Tensor log_prob;  // [n, K] float32: log p_i of each step under the sampling policy
  at::Tensor features;  // [n, F] float32 (on the device): the prefix's pooled features (PolicyModuleImpl::prefix_features)
};

// Samples the chain for a batch, the prefix computed once. seeds[j] (n of them) seeds sample j's
// noise (x_0 and every eps_i, drawn on the CPU), so a sample's chain does not depend on which
// batch it was in. No gradients.
Chain sample_chain(model::PolicyModuleImpl& policy, const model::PolicyInputs& in, const FlowNoise& noise,
                   const std::vector<uint64_t>& seeds);

// log p_i [n, K] of stored chains x [n, K+1, H, A] under the policy's current weights, the prefix
// computed once; differentiable when grad mode is on.
// features: when given, set to the prefix's pooled features [n, F] (on the policy's device,
// no gradient; value_head.h).
at::Tensor chain_log_prob(model::PolicyModuleImpl& policy, const model::PolicyInputs& in, const at::Tensor& x,
                          const FlowNoise& noise, at::Tensor* features = nullptr);

// log N(y; mu, sigma^2) summed over the last two dims ([.., H, A] -> [..]) of the first
// action_dim columns: the per-step density above.
at::Tensor gaussian_log_prob(const at::Tensor& y, const at::Tensor& mu, double sigma, int64_t action_dim);

}  // namespace ember::rl
