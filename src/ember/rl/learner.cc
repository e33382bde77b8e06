#include "ember/rl/learner.h"

#include <ATen/core/grad_mode.h>

#include "ember/rl/grpo.h"
#include "ember/train/cuda_setup.h"

namespace ember::rl {

Learner::Learner(model::Pi05Policy policy, model::Pi05Policy reference, at::Device device, LearnerOptions options)
    : policy_(std::move(policy)), reference_(std::move(reference)), device_(device), options_(options) {
  policy_->train();
  reference_->eval();
  for (auto& p : reference_->parameters()) p.set_requires_grad(false);
  for (const auto& p : policy_->named_parameters()) params_.emplace_back(p.key(), p.value());
  for (const auto& [n, p] : params_) param_list_.push_back(p);
  optimizer_ = std::make_unique<train::AdamW>(params_, train::AdamWOptions{0.9, 0.95, 1e-8, 0.0});
  optimizer_->zero_grad();
}

void Learner::accumulate(const Group& group) {
  std::vector<double> returns;
  for (const auto& t : group.members) {
    returns.push_back(t.ret);
    acc_.success += t.success;
    acc_.ret += t.ret;
    ++episodes_;
  }
  ++acc_.groups;
  auto adv = group_advantages(returns);
  bool signal = false;
  for (double a : adv) signal = signal || a != 0;
  if (!signal) {
    ++acc_.flat_groups;
    return;
  }
  std::vector<const ChunkRecord*> chunks;
  std::vector<double> chunk_adv;
  for (size_t m = 0; m < group.members.size(); ++m)
    for (const auto& c : group.members[m].chunks) chunks.push_back(&c), chunk_adv.push_back(adv[m]);
  for (size_t at = 0; at < chunks.size(); at += size_t(options_.micro_batch)) {
    const size_t end = std::min(chunks.size(), at + size_t(options_.micro_batch));
    micro_step({chunks.begin() + long(at), chunks.begin() + long(end)}, {chunk_adv.begin() + long(at), chunk_adv.begin() + long(end)});
  }
}

void Learner::micro_step(const std::vector<const ChunkRecord*>& chunks, const std::vector<double>& advantages) {
  std::vector<const model::PolicySample*> samples;
  std::vector<at::Tensor> xs, olds;
  for (const auto* c : chunks) samples.push_back(&c->sample), xs.push_back(c->chain), olds.push_back(c->log_prob);
  auto in = model::collate(samples, policy_->shape, model::AttentionBackend::kVarlen).to(device_);
  auto x = at::stack(xs).to(device_);      // [m, K+1, H, A]
  auto old = at::stack(olds).to(device_);  // [m, K]
  auto adv = at::tensor(advantages, at::kDouble).to(at::kFloat).to(device_);
  train::Bf16Autocast bf16(device_.is_cuda());
  at::Tensor ref;
  {
    at::NoGradGuard no_grad;
    ref = chain_log_prob(*reference_, in, x, options_.noise);
  }
  auto lp = chain_log_prob(*policy_, in, x, options_.noise);
  auto s = clipped_surrogate(lp, old, adv, options_.clip, ref);
  s.loss_sum.backward();
  auto add = [](at::Tensor& sum, const at::Tensor& v) { sum = sum.defined() ? sum + v.detach() : v.detach(); };
  add(loss_sum_, s.loss_sum);
  add(clipped_, s.clipped);
  add(kl_sum_, s.kl_sum);
  acc_.terms += lp.numel();
  acc_.chunks += int64_t(chunks.size());
}

StepStats Learner::step() {
  StepStats out = acc_;
  if (episodes_ > 0) out.success /= double(episodes_), out.ret /= double(episodes_);
  if (acc_.terms > 0) {
    const double n = double(acc_.terms);
    auto scale = at::full({}, 1.0 / n, at::TensorOptions().device(device_).dtype(at::kFloat));
    auto clip = train::clip_and_scale(param_list_, options_.grad_clip_norm, scale);
    optimizer_->step(options_.lr, clip.multiplier);
    out.grad_norm = clip.norm.item<double>();
    out.loss = loss_sum_.item<double>() / n;
    out.clip_frac = clipped_.item<double>() / n;
    out.kl = kl_sum_.item<double>() / n;
  }
  optimizer_->zero_grad();
  acc_ = StepStats{};
  loss_sum_ = clipped_ = kl_sum_ = at::Tensor();
  episodes_ = 0;
  return out;
}

}  // namespace ember::rl
