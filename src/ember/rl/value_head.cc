#include "ember/rl/value_head.h"

#include <ATen/core/grad_mode.h>

#include <algorithm>

#include "ember/core/error.h"

namespace ember::rl {

ValueHeadImpl::ValueHeadImpl(int64_t features, int64_t hidden) {
  fc1 = register_module("fc1", torch::nn::Linear(features, hidden));
  fc2 = register_module("fc2", torch::nn::Linear(hidden, 1));
  // start at V = 0 everywhere: the first advantages are the plain reward-to-go
  at::NoGradGuard no_grad;
  fc2->weight.zero_();
  fc2->bias.zero_();
}

at::Tensor ValueHeadImpl::forward(const at::Tensor& features) {
  auto x = at::layer_norm(features.to(at::kFloat), {features.size(1)});
  return fc2->forward(at::tanh(fc1->forward(x))).squeeze(1);
}

Gae gae(const std::vector<double>& rewards, const std::vector<double>& values, double gamma, double lambda) {
  if (rewards.size() != values.size()) throw Error(ErrorKind::kInternal, "gae: rewards and values differ in length");
  const size_t n = rewards.size();
  Gae g;
  g.advantages.assign(n, 0.0);
  g.returns.assign(n, 0.0);
  double next_adv = 0, next_value = 0;
  for (size_t i = n; i-- > 0;) {
    const double delta = rewards[i] + gamma * next_value - values[i];
    next_adv = delta + gamma * lambda * next_adv;
    g.advantages[i] = next_adv;
    g.returns[i] = next_adv + values[i];
    next_value = values[i];
  }
  return g;
}

void copy_value_head(ValueHeadImpl& dst, const ValueHeadImpl& src) {
  at::NoGradGuard no_grad;
  auto d = dst.parameters(), s = src.parameters();
  for (size_t i = 0; i < d.size(); ++i) d[i].copy_(s[i]);
}

}  // namespace ember::rl
