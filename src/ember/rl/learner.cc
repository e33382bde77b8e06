#include "ember/rl/learner.h"

#include <ATen/core/grad_mode.h>

#include <cmath>

#include "ember/core/error.h"

#include "ember/rl/grpo.h"
#include "ember/train/cuda_setup.h"

namespace ember::rl {

Learner::Learner(model::Pi05Policy policy, model::Pi05Policy reference, at::Device device, LearnerOptions options, ValueHead value)
    : policy_(std::move(policy)), reference_(std::move(reference)), value_(std::move(value)), device_(device), options_(options) {
  if (options_.ppo && !value_) throw Error(ErrorKind::kInternal, "Learner: PPO needs a value head");
  if (value_) {
    value_->train();
    for (const auto& p : value_->named_parameters()) value_params_.emplace_back("value." + p.key(), p.value());
    for (const auto& [n, p] : value_params_) value_param_list_.push_back(p);
    value_optimizer_ = std::make_unique<train::AdamW>(value_params_, train::AdamWOptions{0.9, 0.999, 1e-8, 0.0});
    value_optimizer_->zero_grad();
  }
  policy_->train();
  reference_->eval();
  for (auto& p : reference_->parameters()) p.set_requires_grad(false);
  for (const auto& p : policy_->named_parameters()) params_.emplace_back(p.key(), p.value());
  for (const auto& [n, p] : params_) param_list_.push_back(p);
  optimizer_ = std::make_unique<train::AdamW>(params_, train::AdamWOptions{0.9, 0.95, 1e-8, 0.0});
  optimizer_->zero_grad();
}

void Learner::accumulate(const Group& group) {
  if (options_.ppo) return accumulate_ppo(group);
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
    micro_step({chunks.begin() + long(at), chunks.begin() + long(end)}, {chunk_adv.begin() + long(at), chunk_adv.begin() + long(end)},
               {});
  }
}

void Learner::accumulate_ppo(const Group& group) {
  std::vector<const ChunkRecord*> chunks;
  std::vector<double> adv, ret;
  for (const auto& t : group.members) {
    acc_.success += t.success;
    acc_.ret += t.ret;
    ++episodes_;
    std::vector<double> rewards, values;
    for (const auto& c : t.chunks) chunks.push_back(&c), rewards.push_back(c.reward), values.push_back(c.value);
    Gae g = gae(rewards, values, options_.gamma, options_.gae_lambda);
    adv.insert(adv.end(), g.advantages.begin(), g.advantages.end());
    ret.insert(ret.end(), g.returns.begin(), g.returns.end());
  }
  ++acc_.groups;
  if (chunks.empty()) return;
  // normalised over the group's chunks (PPO's usual per-batch normalisation, per group here
  // because the batch streams in)
  double mean = 0, var = 0;
  for (double a : adv) mean += a / double(adv.size());
  for (double a : adv) var += (a - mean) * (a - mean) / double(adv.size());
  const double sd = std::sqrt(var);
  for (double& a : adv) a = sd > 1e-8 ? (a - mean) / (sd + 1e-8) : 0.0;
  for (size_t at = 0; at < chunks.size(); at += size_t(options_.micro_batch)) {
    const size_t end = std::min(chunks.size(), at + size_t(options_.micro_batch));
    micro_step({chunks.begin() + long(at), chunks.begin() + long(end)}, {adv.begin() + long(at), adv.begin() + long(end)},
               {ret.begin() + long(at), ret.begin() + long(end)});
  }
}

void Learner::micro_step(const std::vector<const ChunkRecord*>& chunks, const std::vector<double>& advantages,
                         const std::vector<double>& returns) {
  std::vector<const model::PolicySample*> samples;
  std::vector<at::Tensor> xs, olds;
  for (const auto* c : chunks) samples.push_back(&c->sample), xs.push_back(c->chain), olds.push_back(c->log_prob);
  auto in = model::collate(samples, policy_->shape, model::AttentionBackend::kVarlen).to(device_);
  auto x = at::stack(xs).to(device_);      // [m, K+1, H, A]
  auto old = at::stack(olds).to(device_);  // [m, K]
  auto adv = at::tensor(advantages, at::kDouble).to(at::kFloat).to(device_);
  train::Bf16Autocast bf16(device_.is_cuda());
  // the KL is a measurement (no term of the loss): on every kl_every-th micro-batch only
  at::Tensor ref;
  const bool measure_kl = micro_batches_++ % options_.kl_every == 0;
  if (measure_kl) {
    at::NoGradGuard no_grad;
    ref = chain_log_prob(*reference_, in, x, options_.noise);
  }
  at::Tensor features;
  auto lp = chain_log_prob(*policy_, in, x, options_.noise, returns.empty() ? nullptr : &features);
  auto s = clipped_surrogate(lp, old, adv, options_.clip, ref);
  s.loss_sum.backward();
  auto add = [](at::Tensor& sum, const at::Tensor& v) { sum = sum.defined() ? sum + v.detach() : v.detach(); };
  if (!returns.empty()) {
    // the critic on detached features: a graph of its own
    auto target = at::tensor(returns, at::kDouble).to(at::kFloat).to(device_);
    auto v = value_->forward(features.detach());
    auto vloss = 0.5 * (v - target).square().sum();
    vloss.backward();
    add(value_loss_sum_, vloss);
    value_terms_ += int64_t(returns.size());
  }
  add(loss_sum_, s.loss_sum);
  add(clipped_, s.clipped);
  if (measure_kl) add(kl_sum_, s.kl_sum), kl_terms_ += lp.numel();
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
    out.kl = kl_terms_ > 0 ? kl_sum_.item<double>() / double(kl_terms_) : 0.0;
  }
  optimizer_->zero_grad();
  if (value_terms_ > 0) {
    auto scale = at::full({}, 1.0 / double(value_terms_), at::TensorOptions().device(device_).dtype(at::kFloat));
    auto clip = train::clip_and_scale(value_param_list_, options_.grad_clip_norm, scale);
    value_optimizer_->step(options_.value_lr, clip.multiplier);
    out.value_loss = value_loss_sum_.item<double>() / double(value_terms_);
  }
  if (value_optimizer_) value_optimizer_->zero_grad();
  value_loss_sum_ = at::Tensor();
  value_terms_ = 0;
  acc_ = StepStats{};
  loss_sum_ = clipped_ = kl_sum_ = at::Tensor();
  kl_terms_ = micro_batches_ = 0;  // each step measures its first micro-batch
  episodes_ = 0;
  return out;
}

}  // namespace ember::rl
