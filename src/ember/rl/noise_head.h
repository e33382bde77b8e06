// πRL's Flow-Noise exploration (arXiv 2510.25889, their ManiSkill setting; RLinf's
// ExploreNoiseNet): a small network on the action expert's last hidden state of each chunk row
// gives the std of every denoising step's Gaussian transition, per row and action dim, bounded:
//
//   h      = fc3(tanh(fc2(tanh(fc1(hidden)))))          hidden [.., W] -> [.., d]  (W -> 128 -> 64 -> d)
//   logvar = log(lo^2) + (log(hi^2) - log(lo^2)) * (tanh(h) + 1) / 2
//   std    = exp(logvar / 2)                            in [lo, hi]   (πRL: 0.08, 0.16)
//
// The layers keep PyTorch's default initialisation (uniform within 1/sqrt(fan_in)), as RLinf's
// MLP does. The head is trained with the policy, by the clipped surrogate (through the log-
// densities' std) and the entropy bonus; it is RL's own: the policy's checkpoint files do not
// hold it (RL checkpoints keep it as noise_head.safetensors) and evaluation never reads it
// (the deployed sampler is the ODE).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include <cstdint>

namespace ember::rl {

class NoiseHeadImpl : public torch::nn::Module {
 public:
  // width: the action expert's (PolicyModuleImpl::expert_width); action_dim: the real dims d;
  // lo < hi: the std's bounds (> 0)
  NoiseHeadImpl(int64_t width, int64_t action_dim, double lo, double hi);
  // hidden [.., W] -> std [.., d] float32
  at::Tensor forward(const at::Tensor& hidden);

  int64_t width, action_dim;
  double lo, hi;
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};
TORCH_MODULE(NoiseHead);

// A head of src's sizes with src's weights, on device (the rollout's copy, the learner's
// reference for the KL). Later copies: train::copy_parameters.
NoiseHead clone_noise_head(const NoiseHeadImpl& src, const at::Device& device);

}  // namespace ember::rl
