// PPO's critic and its advantages.
//
// Where the value head reads from: the policy's prefix (images, prompt and the state, once per
// request), pooled by the policy type (PolicyModuleImpl::prefix_features: pi05 the mean over
// each sample's prefix tokens of the last language-model layer's values; groot the mean of its
// adapter's context), detached. The critic
// therefore trains only its own layers and never moves the policy's backbone: the policy's
// gradient is the clipped surrogate's alone, as in GRPO, and the features come for free from
// the prefix pass that sampling (rollout) and the log-probabilities (learner) run anyway.
//
// GAE (Schulman et al. 2016) over a trajectory's chunks k = 0..n-1, one decision per chunk:
//   delta_k = r_k + gamma * V_{k+1} - V_k        (V_n = 0: the episode ends)
//   A_k     = delta_k + gamma * lambda * A_{k+1}
//   R_k     = A_k + V_k                          (the value head's target)
// r_k is the chunk's reward: shaping * (phi(start of chunk k+1) - phi(start of chunk k)), plus
// the success (0/1) on the last chunk, so the rewards sum to the trajectory's return.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include <vector>

#include "ember/model/policy.h"

namespace ember::rl {

class ValueHeadImpl : public torch::nn::Module {
 public:
  // features: the pooled width (prefix_feature_dim); hidden: the hidden layers' widths (tanh
  // after each), named fc1, fc2, ... with the output layer last (one hidden layer of 128: fc1, fc2)
  explicit ValueHeadImpl(int64_t features, const std::vector<int64_t>& hidden = {128});
  // [n, features] -> [n] float32 (features normalised per row, then the layers)
  at::Tensor forward(const at::Tensor& features);

  std::vector<torch::nn::Linear> layers;
};
TORCH_MODULE(ValueHead);

struct Gae {
  std::vector<double> advantages, returns;
};
// rewards and values of one trajectory's chunks (same length).
Gae gae(const std::vector<double>& rewards, const std::vector<double>& values, double gamma, double lambda);

}  // namespace ember::rl
