#include "ember/train/train_step.h"

#include "ember/core/error.h"
#include "ember/model/flops.h"
#include "ember/model/fp8_linear.h"
#include "ember/train/cuda_setup.h"
#include "ember/train/zero_adamw.h"

namespace ember::train {

PolicyState build_policy_state(const TrainConfig& config, std::shared_ptr<const model::PolicyArch> arch, at::Device device,
                               const std::shared_ptr<Collectives>& collectives) {
  auto module = arch->build(build_options(config), device);
  PolicyState s = optimizer_state(module, "", config.optimizer, config.dist.zero, collectives);
  s.arch = std::move(arch);
  return s;
}

PolicyState optimizer_state(std::shared_ptr<torch::nn::Module> module, const std::string& prefix, const OptimizerConfig& o,
                            int64_t zero, const std::shared_ptr<Collectives>& collectives, const model::NamedTensors& extra) {
  PolicyState s;
  s.module = std::dynamic_pointer_cast<model::PolicyModuleImpl>(module);
  if (s.module) s.shape = s.module->base_shape();
  model::NamedTensors trained;
  for (const auto& p : module->named_parameters()) {
    s.params.emplace_back(prefix + p.key(), p.value());
    if (p.value().requires_grad()) trained.emplace_back(prefix + p.key(), p.value());
  }
  for (const auto& [name, p] : extra)
    if (p.requires_grad()) trained.emplace_back(name, p);
  s.optimizer = make_optimizer(trained, {o.betas[0], o.betas[1], o.eps, o.weight_decay}, zero, collectives);
  for (const auto& [n, p] : trained) s.param_list.push_back(p);
  // gradient buckets all-reduce while the backward pass still runs (see Collectives)
  if (collectives) collectives->attach_gradients(s.param_list);
  // ZeRO-1: each gradient is summed onto the rank that updates its parameter only (the
  // reduce-scatter); clipping then sums the ranks' squared norms
  if (auto* zero_adamw = dynamic_cast<ZeroAdamW*>(s.optimizer.get()); zero_adamw && collectives)
    if (collectives->set_gradient_owners(zero_adamw->owners())) s.norm_over_ranks = collectives.get();
  return s;
}

TrainStep::TrainStep(PolicyState& state, at::Device device, double grad_clip_norm, bool autocast,
                     std::shared_ptr<Collectives> collectives, double common_divisor)
    : state_(state), device_(device), grad_clip_norm_(grad_clip_norm), autocast_(autocast),
      collectives_(std::move(collectives)), common_divisor_(common_divisor) {}

StepOutput TrainStep::run(const TrainBatch& batch, double lr, const PhaseMark& mark) {
  auto& policy = state_.module;
  begin(std::max(batch.loss_count, 1.0));
  // the step's flow noise and times, drawn at once in sample order (as loss() would draw them for
  // one micro-batch): splitting the step into micro-batches (accumulation) does not change them
  at::Tensor noise, time;
  int64_t samples = 0;
  for (const auto& m : batch.micro) samples += m.samples;
  if (!batch.micro.empty()) {
    const auto& a = batch.micro.front().actions;  // [n, H, max_action_dim]
    const auto opts = at::TensorOptions().device(device_).dtype(at::kFloat);
    noise = at::randn({samples, a.size(1), a.size(2)}, opts);
    time = policy->flow_time(at::rand({samples}, opts));
  }
  int64_t first = 0;  // the micro-batch's first sample in the step
  size_t micro_done = 0;
  double flops = 0;
  for (const auto& micro_host : batch.micro) {
    auto micro = micro_host.to(device_);
    if (mark) mark(StepPhase::kCopy);
    add(
        [&] {
          const int64_t n = micro.samples;
          auto lo = policy->loss(micro, noise.narrow(0, first, n), time.narrow(0, first, n));
          first += n;
          return lo.loss_sum;
        },
        ++micro_done == batch.micro.size(), mark);
    flops += policy->step_flops(micro_host, /*real=*/true);
  }
  auto out = finish(lr, batch.loss_count, mark);
  out.flops = flops;
  return out;
}

void TrainStep::begin(double divisor) {
  state_.optimizer->zero_grad();
  loss_sum_ = at::zeros({}, at::TensorOptions().device(device_));
  divisor_ = collectives_ ? common_divisor_ : divisor;
}

at::Tensor TrainStep::add(const std::function<at::Tensor()>& loss_sum, bool last, const PhaseMark& mark) {
  if (!loss_sum_.defined()) throw Error(ErrorKind::kInternal, "TrainStep::add: no step begun");
  if (collectives_ && last) collectives_->arm_gradient_sync();
  at::Tensor sum;
  {
    Bf16Autocast bf16_scope(autocast_, device_.type());
    sum = loss_sum();
    if (mark) mark(StepPhase::kForward);
    (sum / divisor_).backward();
    if (mark) mark(StepPhase::kBackward);
  }
  sum = sum.detach();
  loss_sum_ = loss_sum_ + sum;
  return sum;
}

StepOutput TrainStep::finish(double lr, double loss_count, const PhaseMark& mark) {
  if (!loss_sum_.defined()) throw Error(ErrorKind::kInternal, "TrainStep::finish: no step begun");
  StepOutput out;
  at::Tensor grad_scale;  // undefined: the gradients are already the mean's
  if (collectives_) {
    std::vector<at::Tensor> grads;
    for (auto& p : state_.param_list) {
      if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
      grads.push_back(p.grad());
    }
    collectives_->reduce_gradients(grads);
    std::vector<at::Tensor> l{loss_sum_, at::full({}, loss_count, loss_sum_.options())};
    collectives_->all_reduce_sum(l);
    auto global_count = l[1].clamp_min(1.0);
    grad_scale = divisor_ / global_count;
    out.loss = l[0] / global_count;
  } else {
    const double count = std::max(loss_count, 1.0);
    if (divisor_ != count) grad_scale = at::full({}, divisor_ / count, at::TensorOptions().device(device_).dtype(at::kFloat));
    out.loss = loss_sum_ / count;
  }
  // the clipping (and the scale) is applied by the optimizer as it reads the gradients
  auto clip = clip_and_scale(state_.param_list, grad_clip_norm_, grad_scale, state_.norm_over_ranks);
  out.grad_norm = clip.norm;
  state_.optimizer->step(lr, clip.multiplier);
  model::fp8_weights_updated();  // the FP8 layers re-quantise their weights once, at their next use
  if (mark) mark(StepPhase::kOptimizer);
  loss_sum_ = at::Tensor();
  return out;
}

}  // namespace ember::train
