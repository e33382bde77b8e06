#include "ember/rl/learner.h"

#include <ATen/core/grad_mode.h>

#include <cmath>

#include "ember/core/error.h"

#include "ember/rl/grpo.h"

namespace ember::rl {

std::vector<double> sum_over_ranks(dist::Collectives* ranks, std::vector<double> values, const at::Device& device) {
  if (!ranks || values.empty()) return values;
  std::vector<at::Tensor> t{at::tensor(values, at::kDouble).to(device)};
  ranks->all_reduce_sum(t);
  auto host = t[0].cpu();
  for (size_t i = 0; i < values.size(); ++i) values[i] = host[int64_t(i)].item<double>();
  return values;
}

Learner::Learner(std::shared_ptr<model::PolicyModuleImpl> policy, std::shared_ptr<model::PolicyModuleImpl> reference, at::Device device, LearnerOptions options, ValueHead value,
                 std::shared_ptr<dist::Collectives> ranks, NoiseHead noise_head)
    : ranks_(std::move(ranks)), reference_(std::move(reference)), value_(std::move(value)), noise_head_(std::move(noise_head)), device_(device),
      options_(options) {
  if (options_.ppo && !value_) throw Error(ErrorKind::kInternal, "Learner: PPO needs a value head");
  if (options_.noise.method == NoiseMethod::kLearned) {
    if (!noise_head_) throw Error(ErrorKind::kInternal, "Learner: flow_noise needs its head");
    noise_head_->train();
    for (const auto& p : noise_head_->named_parameters()) noise_params_.emplace_back("noise_head." + p.key(), p.value());
    reference_noise_head_ = clone_noise_head(*noise_head_, device_);
    for (auto& p : reference_noise_head_->parameters()) p.set_requires_grad(false);
  }
  // bf16 autocast on CUDA, as the rollout samples
  const bool autocast = device_.is_cuda();
  policy->eval();  // gradients flow in eval mode; dropout (groot's DiT) would corrupt the ratios
  if (!options_.train_prefix)
    for (const auto& p : policy->named_parameters())
      if (policy->is_prefix_parameter(p.key())) p.value().set_requires_grad(false);
  state_ = train::optimizer_state(policy, "", train::OptimizerConfig{.weight_decay = options_.weight_decay, .betas = options_.betas, .eps = options_.eps},
                                  0, nullptr, noise_params_);
  // ranks: the loss divisor is 1 (the count is not known until the step ends; finish() scales)
  step_ = std::make_unique<train::TrainStep>(state_, device_, options_.grad_clip_norm, autocast, ranks_, 1.0);
  step_->begin();
  if (value_) {
    value_->train();
    value_state_ = train::optimizer_state(value_.ptr(), "value.", train::OptimizerConfig{.weight_decay = 0.0, .betas = {0.9, 0.999}, .eps = 1e-8});
    value_step_ = std::make_unique<train::TrainStep>(value_state_, device_, options_.grad_clip_norm, autocast, ranks_, 1.0);
    value_step_->begin();
  }
  reference_->eval();
  for (auto& p : reference_->parameters()) p.set_requires_grad(false);
}

void Learner::accumulate(const Group& group) {
  if (options_.ppo) return accumulate_ppo(group);
  std::vector<double> returns;
  double successes = 0;
  for (const auto& t : group.members) {
    returns.push_back(t.ret);
    successes += t.success;
    acc_.success += t.success;
    acc_.ret += t.ret;
    ++episodes_;
  }
  ++acc_.groups;
  const double rate = group.members.empty() ? 0.0 : successes / double(group.members.size());
  if (rate < options_.filter_low - 1e-12 || rate > options_.filter_high + 1e-12) {
    ++acc_.filtered_groups;
    return;
  }
  auto adv = group_advantages(returns);
  bool signal = false;
  for (double a : adv) signal = signal || a != 0;
  if (!signal) {
    ++acc_.flat_groups;
    return;
  }
  for (size_t m = 0; m < group.members.size(); ++m)
    for (const auto& c : group.members[m].chunks) pending_.push_back({c, adv[m], 0.0});
  drain(false);
}

void Learner::accumulate_ppo(const Group& group) {
  const size_t first = pending_.size();
  for (const auto& t : group.members) {
    acc_.success += t.success;
    acc_.ret += t.ret;
    ++episodes_;
    std::vector<double> rewards, values;
    for (const auto& c : t.chunks) rewards.push_back(c.reward), values.push_back(c.value);
    Gae g = gae(rewards, values, options_.gamma, options_.gae_lambda);
    for (size_t k = 0; k < t.chunks.size(); ++k) pending_.push_back({t.chunks[k], g.advantages[k], g.returns[k]});
  }
  ++acc_.groups;
  const size_t n = pending_.size() - first;
  if (n == 0) return;
  // normalised over the group's chunks (PPO's usual per-batch normalisation, per group here
  // because the batch streams in)
  double mean = 0, var = 0;
  for (size_t i = first; i < pending_.size(); ++i) mean += pending_[i].advantage / double(n);
  for (size_t i = first; i < pending_.size(); ++i) var += (pending_[i].advantage - mean) * (pending_[i].advantage - mean) / double(n);
  const double sd = std::sqrt(var);
  for (size_t i = first; i < pending_.size(); ++i) {
    double& a = pending_[i].advantage;
    a = sd > 1e-8 ? (a - mean) / (sd + 1e-8) : 0.0;
  }
  drain(false);
}

void Learner::drain(bool all) {
  const size_t m = size_t(options_.micro_batch);
  size_t at = 0;
  while (pending_.size() - at >= m || (all && at < pending_.size())) {
    const size_t end = std::min(pending_.size(), at + m);
    std::vector<const ChunkRecord*> chunks;
    std::vector<double> adv, ret;
    for (size_t i = at; i < end; ++i) {
      chunks.push_back(&pending_[i].chunk);
      adv.push_back(pending_[i].advantage);
      if (options_.ppo) ret.push_back(pending_[i].ret);
    }
    micro_step(chunks, adv, ret);
    at = end;
  }
  pending_.erase(pending_.begin(), pending_.begin() + long(at));
}

void Learner::micro_step(const std::vector<const ChunkRecord*>& chunks, const std::vector<double>& advantages,
                         const std::vector<double>& returns) {
  std::vector<const model::PolicySample*> samples;
  std::vector<at::Tensor> xs, olds;
  std::vector<int64_t> steps;
  for (const auto* c : chunks)
    samples.push_back(&c->sample), xs.push_back(c->chain), olds.push_back(c->log_prob), steps.push_back(c->noisy_step);
  auto noisy_step = options_.noise.method == NoiseMethod::kSde ? at::tensor(steps, at::kLong) : at::Tensor();
  auto in = model::collate(samples, state_.shape, model::AttentionBackend::kVarlen).to(device_);
  auto x = at::stack(xs).to(device_);      // [m, K+1, H, A]
  auto old = at::stack(olds).to(device_);  // [m, K]
  auto adv = at::tensor(advantages, at::kDouble).to(at::kFloat).to(device_);
  auto& policy = *state_.module;
  // the KL is a measurement (no term of the loss): on every kl_every-th micro-batch only
  const bool measure_kl = micro_batches_++ % options_.kl_every == 0;
  at::Tensor features, entropy;
  Surrogate s;
  int64_t terms = 0;
  NoiseHeadImpl* head = noise_head_ ? noise_head_.get() : nullptr;
  // the prefix frozen: encoded once (by whichever call below comes first), or kept from a pass before
  const bool frozen = !options_.train_prefix && options_.reuse_prefix;
  std::shared_ptr<const model::PrefixState> prefix = frozen ? kept_prefix(chunks) : nullptr;
  auto* reuse = frozen ? &prefix : nullptr;
  step_->add([&] {
    at::Tensor ref;
    if (measure_kl) {
      at::NoGradGuard no_grad;
      ref = chain_log_prob(*reference_, in, x, noisy_step, options_.noise,
                           {.head = reference_noise_head_ ? reference_noise_head_.get() : nullptr, .frozen_prefix = reuse});
    }
    auto lp = chain_log_prob(policy, in, x, noisy_step, options_.noise,
                             {.features = returns.empty() ? nullptr : &features, .head = head, .entropy = head ? &entropy : nullptr, .frozen_prefix = reuse});
    terms = lp.numel();
    s = clipped_surrogate(lp, old, adv, options_.clip, ref);
    if (!entropy.defined()) return s.loss_sum;
    // one term and one entropy per chunk: the step divides both sums by the terms
    return s.loss_sum - options_.entropy_bonus * entropy.sum();
  });
  if (entropy.defined()) {
    auto add_sum = [](at::Tensor& sum, const at::Tensor& v) { sum = sum.defined() ? sum + v.detach() : v.detach(); };
    add_sum(entropy_sum_, entropy.sum());
    add_sum(std_sum_, at::exp(entropy - 0.5 * std::log(2 * M_PI * M_E)).sum());  // exp(mean log sigma): the geometric mean
  }
  if (!returns.empty()) {
    // the critic on detached features: a graph and a step of its own
    auto target = at::tensor(returns, at::kDouble).to(at::kFloat).to(device_);
    value_step_->add([&] { return 0.5 * (value_->forward(features.detach()) - target).square().sum(); });
    value_terms_ += int64_t(returns.size());
  }
  auto add = [](at::Tensor& sum, const at::Tensor& v) { sum = sum.defined() ? sum + v.detach() : v.detach(); };
  add(clipped_, s.clipped);
  add(old_kl_sum_, s.old_kl_sum);
  if (measure_kl) add(kl_sum_, s.kl_sum), kl_terms_ += terms;
  acc_.terms += terms;
  acc_.chunks += int64_t(chunks.size());
  if (frozen) keep_prefix(chunks, prefix);
}

namespace {
bool same_chunks(const std::vector<at::Tensor>& chains, const std::vector<const ChunkRecord*>& chunks) {
  if (chains.size() != chunks.size()) return false;
  for (size_t i = 0; i < chunks.size(); ++i)
    if (!chains[i].is_same(chunks[i]->chain)) return false;
  return true;
}
}  // namespace

std::shared_ptr<const model::PrefixState> Learner::kept_prefix(const std::vector<const ChunkRecord*>& chunks) {
  if (chunks.empty()) return nullptr;
  auto k = kept_.find(chunks[0]->chain.unsafeGetTensorImpl());
  return k != kept_.end() && same_chunks(k->second.chains, chunks) ? k->second.prefix : nullptr;
}

void Learner::keep_prefix(const std::vector<const ChunkRecord*>& chunks, std::shared_ptr<const model::PrefixState> prefix) {
  if (!prefix || chunks.empty() || options_.prefix_cache_bytes <= 0) return;
  const void* key = chunks[0]->chain.unsafeGetTensorImpl();
  if (auto k = kept_.find(key); k != kept_.end()) {
    if (k->second.prefix == prefix) return;  // reused: kept already
    kept_bytes_ -= k->second.prefix->bytes();  // other chunks behind the same first one: replaced
    kept_.erase(k);
  }
  const int64_t add = prefix->bytes();
  if (kept_bytes_ + add > options_.prefix_cache_bytes) return;
  kept_bytes_ += add;
  auto& k = kept_[key];
  for (const auto* c : chunks) k.chains.push_back(c->chain);
  k.prefix = std::move(prefix);
}

void Learner::forget_prefixes() {
  kept_.clear();
  kept_bytes_ = 0;
}

StepStats Learner::step(double lr_scale) {
  drain(true);  // the step's last, partial micro-batch
  StepStats out = acc_;
  const double local_terms = double(acc_.terms);
  // the job's sums (one process: this one's)
  auto sums = sum_over_ranks(ranks_.get(),
                             {double(acc_.terms), double(acc_.chunks), double(acc_.groups), double(acc_.flat_groups), double(acc_.filtered_groups),
                              double(micro_batches_), acc_.success, acc_.ret, double(episodes_),
                              clipped_.defined() ? clipped_.item<double>() : 0.0, kl_sum_.defined() ? kl_sum_.item<double>() : 0.0,
                              double(kl_terms_), double(value_terms_), entropy_sum_.defined() ? entropy_sum_.item<double>() : 0.0,
                              std_sum_.defined() ? std_sum_.item<double>() : 0.0},
                             device_);
  out.terms = int64_t(sums[0]), out.chunks = int64_t(sums[1]), out.groups = int64_t(sums[2]), out.flat_groups = int64_t(sums[3]);
  out.filtered_groups = int64_t(sums[4]);
  out.micro_batches = int64_t(sums[5]);
  const double episodes = sums[8], kl_terms = sums[11], value_terms = sums[12];
  out.success = episodes > 0 ? sums[6] / episodes : 0.0;
  out.ret = episodes > 0 ? sums[7] / episodes : 0.0;
  if (noise_head_ && out.chunks > 0) out.entropy = sums[13] / double(out.chunks), out.noise_std = sums[14] / double(out.chunks);
  if (out.terms > 0) {
    auto o = step_->finish(options_.lr * lr_scale, local_terms);  // sums over the ranks itself
    out.grad_norm = o.grad_norm.item<double>();
    out.loss = o.loss.item<double>();
    out.clip_frac = sums[9] / double(out.terms);
    out.kl = kl_terms > 0 ? sums[10] / kl_terms : 0.0;
  }
  if (value_terms > 0) out.value_loss = value_step_->finish(options_.value_lr, double(value_terms_)).loss.item<double>();
  reset_accumulation();  // no term had an advantage: no update, the next step starts clean
  return out;
}

double Learner::pass_kl() {
  drain(true);
  auto sums = sum_over_ranks(ranks_.get(), {old_kl_sum_.defined() ? old_kl_sum_.item<double>() : 0.0, double(acc_.terms)}, device_);
  return sums[1] > 0 ? sums[0] / sums[1] : 0.0;
}

void Learner::discard() {
  pending_.clear();  // chunks not yet in a micro-batch: nothing to run for a pass that is dropped
  reset_accumulation();
}

void Learner::reset_accumulation() {
  step_->begin();
  if (value_step_) value_step_->begin();
  value_terms_ = 0;
  acc_ = StepStats{};
  clipped_ = kl_sum_ = old_kl_sum_ = entropy_sum_ = std_sum_ = at::Tensor();
  kl_terms_ = micro_batches_ = 0;  // each step measures its first micro-batch
  episodes_ = 0;
}

StepStats combine(const std::vector<StepStats>& steps) {
  if (steps.size() == 1) return steps[0];
  StepStats out;
  double groups = 0, terms = 0, chunks = 0;
  for (const auto& s : steps) {
    out.terms += s.terms, out.chunks += s.chunks, out.groups += s.groups, out.flat_groups += s.flat_groups;
    out.filtered_groups += s.filtered_groups, out.micro_batches += s.micro_batches;
    const double g = double(s.groups), t = double(s.terms), c = double(s.chunks);
    out.success += g * s.success, out.ret += g * s.ret, groups += g;
    out.loss += t * s.loss, out.kl += t * s.kl, out.clip_frac += t * s.clip_frac, out.grad_norm += t * s.grad_norm, terms += t;
    out.value_loss += c * s.value_loss, out.entropy += c * s.entropy, out.noise_std += c * s.noise_std, chunks += c;
  }
  auto mean = [](double& v, double w) { v = w > 0 ? v / w : 0.0; };
  mean(out.success, groups), mean(out.ret, groups);
  for (double* v : {&out.loss, &out.kl, &out.clip_frac, &out.grad_norm}) mean(*v, terms);
  for (double* v : {&out.value_loss, &out.entropy, &out.noise_std}) mean(*v, chunks);
  return out;
}

}  // namespace ember::rl
