#include "ember/rl/value_head.h"

#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <string>

#include "ember/core/error.h"

namespace ember::rl {

ValueHeadImpl::ValueHeadImpl(int64_t features, const std::vector<int64_t>& hidden) {
  int64_t in = features;
  for (size_t i = 0; i <= hidden.size(); ++i) {
    const int64_t out = i < hidden.size() ? hidden[i] : 1;
    if (out <= 0) throw Error(ErrorKind::kInvalidArgument, "value head: hidden widths must be positive");
    layers.push_back(register_module("fc" + std::to_string(i + 1), torch::nn::Linear(in, out)));
    in = out;
  }
  // start at V = 0 everywhere: the first advantages are the plain reward-to-go
  at::NoGradGuard no_grad;
  layers.back()->weight.zero_();
  layers.back()->bias.zero_();
}

at::Tensor ValueHeadImpl::forward(const at::Tensor& features) {
  auto x = at::layer_norm(features.to(at::kFloat), {features.size(1)});
  for (size_t i = 0; i + 1 < layers.size(); ++i) x = at::tanh(layers[i]->forward(x));
  return layers.back()->forward(x).squeeze(1);
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

}  // namespace ember::rl
