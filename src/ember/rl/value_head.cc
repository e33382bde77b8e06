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

int64_t prefix_feature_dim(const model::PolicyShape& shape) { return int64_t(shape.lm.kv_heads) * shape.lm.head_dim; }

at::Tensor pooled_prefix_features(const model::PrefixCache& cache, const model::PolicyInputs& in) {
  if (cache.values.empty()) throw Error(ErrorKind::kInternal, "pooled_prefix_features: empty prefix cache");
  if (in.plan.backend != model::AttentionBackend::kVarlen)
    throw Error(ErrorKind::kInternal, "pooled_prefix_features: needs the varlen layout");
  at::NoGradGuard no_grad;
  const auto& v = cache.values.back();  // [Tp, kv_heads, head_dim]
  auto flat = v.reshape({v.size(0), -1}).to(at::kFloat);
  const auto& lens = in.plan.prefix_lens;
  if (int64_t(lens.size()) != in.samples) throw Error(ErrorKind::kInternal, "pooled_prefix_features: prefix_lens != samples");
  std::vector<int64_t> ids;
  std::vector<float> inv;
  for (size_t j = 0; j < lens.size(); ++j) {
    ids.insert(ids.end(), size_t(lens[j]), int64_t(j));
    inv.push_back(1.f / float(std::max<int64_t>(lens[j], 1)));
  }
  if (int64_t(ids.size()) > flat.size(0)) throw Error(ErrorKind::kInternal, "pooled_prefix_features: prefix_lens exceed the prefix");
  auto dev = flat.device();
  auto sum = at::zeros({in.samples, flat.size(1)}, flat.options())
                 .index_add_(0, at::tensor(ids, at::kLong).to(dev), flat.narrow(0, 0, int64_t(ids.size())));
  return sum * at::tensor(inv, at::kFloat).to(dev).unsqueeze(1);
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
