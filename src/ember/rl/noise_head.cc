#include "ember/rl/noise_head.h"

#include <cmath>
#include <string>

#include "ember/core/error.h"
#include "ember/train/policy_checkpoint.h"

namespace ember::rl {

NoiseHeadImpl::NoiseHeadImpl(int64_t width_, int64_t action_dim_, double lo_, double hi_)
    : width(width_), action_dim(action_dim_), lo(lo_), hi(hi_) {
  if (width < 1 || action_dim < 1) throw Error(ErrorKind::kInvalidArgument, "noise head: width and action dims must be >= 1");
  if (!(lo > 0) || !(hi > lo) || !std::isfinite(hi))
    throw Error(ErrorKind::kInvalidArgument, "--rl.noise_min_std / --rl.noise_max_std: need 0 < min < max, got " + std::to_string(lo) + " and " +
                                                 std::to_string(hi));
  fc1 = register_module("fc1", torch::nn::Linear(width, 128));
  fc2 = register_module("fc2", torch::nn::Linear(128, 64));
  fc3 = register_module("fc3", torch::nn::Linear(64, action_dim));
}

at::Tensor NoiseHeadImpl::forward(const at::Tensor& hidden) {
  auto h = fc3->forward(at::tanh(fc2->forward(at::tanh(fc1->forward(hidden))))).to(at::kFloat);
  const double lv_lo = 2 * std::log(lo), lv_hi = 2 * std::log(hi);
  auto logvar = lv_lo + (lv_hi - lv_lo) * (at::tanh(h) + 1) / 2;
  return at::exp(0.5 * logvar);
}

NoiseHead clone_noise_head(const NoiseHeadImpl& src, const at::Device& device) {
  NoiseHead out(src.width, src.action_dim, src.lo, src.hi);
  out->to(device);
  train::copy_parameters(*out, src);
  return out;
}

}  // namespace ember::rl
