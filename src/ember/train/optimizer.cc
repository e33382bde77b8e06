#include "ember/train/optimizer.h"

#include <ATen/core/grad_mode.h>

#include <array>
#include <cmath>
#include <map>
#include <optional>

#include "ember/core/error.h"
#include "ember/train/trainer.h"

#ifdef EMBER_CUDA_KERNELS
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstring>

#include "ember/model/fused_ops.h"
#include "ember/kernels/adamw_kernel.h"
#endif

namespace ember::train {

namespace {

#ifdef EMBER_CUDA_KERNELS
// Whether the kernels can read t beside the list's first tensor: same device and dtype,
// contiguous, 16-byte aligned.
bool kernel_readable(const at::Tensor& t, const at::Tensor& first) {
  return t.device() == first.device() && t.scalar_type() == first.scalar_type() && t.is_contiguous() &&
         reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
}

// Where the next tensor starts in the kernels' concatenation after `total` elements.
int64_t next_start(int64_t total) { return (total + kernels::kAlign - 1) / kernels::kAlign * kernels::kAlign; }

// A kernel's table on the device, through pinned memory: the caching host allocator keeps each
// step's buffer until its copy has run.
template <typename Entry>
at::Tensor device_table(const std::vector<Entry>& table, const at::Device& device) {
  const int64_t bytes = int64_t(table.size() * sizeof(Entry));
  auto host = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
  std::memcpy(host.data_ptr(), table.data(), bytes);
  return host.to(device, /*non_blocking=*/true);
}
#endif

// ember's one-launch AdamW kernel for one dtype group (p, g, m, v, step lists) on CUDA; false
// (nothing done) where it does not apply: not built, not CUDA, another dtype, a tensor that is not
// contiguous or 16-byte aligned, or more than one device.
bool kernel_adamw(const std::array<std::vector<at::Tensor>, 5>& g, double lr, const AdamWOptions& o,
                  const at::Tensor& multiplier) {
#ifdef EMBER_CUDA_KERNELS
  const auto& first = g[0][0];
  const int dtype = model::kernel_dtype(first.scalar_type());
  if (!first.is_cuda() || dtype < 0) return false;
  std::vector<kernels::AdamWTensor> table;
  int64_t total = 0;
  for (size_t i = 0; i < g[0].size(); ++i) {
    for (int k = 0; k < 4; ++k)
      if (!kernel_readable(g[k][i], first)) return false;
    if (g[4][i].device() != first.device() || g[4][i].scalar_type() != at::kFloat) return false;
    const int64_t n = g[0][i].numel();
    if (n == 0) continue;
    const int64_t start = next_start(total);
    table.push_back({g[0][i].data_ptr(), g[1][i].data_ptr(), g[2][i].data_ptr(), g[3][i].data_ptr(),
                     g[4][i].data_ptr<float>(), start, n});
    total = start + n;
  }
  if (table.empty()) return true;
  c10::cuda::CUDAGuard guard(first.device());
  auto on_device = device_table(table, first.device());
  kernels::adamw_step(static_cast<const kernels::AdamWTensor*>(on_device.data_ptr()), int(table.size()), total,
                      dtype, lr, o.beta1, o.beta2, o.weight_decay, o.eps,
                      multiplier.defined() ? multiplier.data_ptr<float>() : nullptr,
                      c10::cuda::getCurrentCUDAStream(first.device().index()).stream());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
#else
  (void)g, (void)lr, (void)o, (void)multiplier;
  return false;
#endif
}

// The sum of squares of one dtype's list of tensors by ember's kernel (one launch, then a sum
// of its partial sums), as a float 0-d tensor; undefined where the kernel does not apply.
at::Tensor kernel_sum_squares(const std::vector<at::Tensor>& list) {
#ifdef EMBER_CUDA_KERNELS
  const auto& first = list[0];
  const int dtype = model::kernel_dtype(first.scalar_type());
  if (!first.is_cuda() || dtype < 0) return {};
  std::vector<kernels::SpanTensor> table;
  int64_t total = 0;
  for (const auto& t : list) {
    if (!kernel_readable(t, first)) return {};
    if (t.numel() == 0) continue;
    const int64_t start = next_start(total);
    table.push_back({t.data_ptr(), start, t.numel()});
    total = start + t.numel();
  }
  auto options = first.options().dtype(at::kFloat);
  if (table.empty()) return at::zeros({}, options);
  c10::cuda::CUDAGuard guard(first.device());
  auto on_device = device_table(table, first.device());
  auto partial = at::empty({kernels::sum_squares_blocks(total)}, options);
  kernels::sum_squares(static_cast<const kernels::SpanTensor*>(on_device.data_ptr()), int(table.size()), total, dtype,
                       partial.data_ptr<float>(), c10::cuda::getCurrentCUDAStream(first.device().index()).stream());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return partial.sum();
#else
  (void)list;
  return {};
#endif
}

}  // namespace

bool adamw_kernel_built() {
#ifdef EMBER_CUDA_KERNELS
  return true;
#else
  return false;
#endif
}

AdamW::AdamW(model::NamedTensors params, AdamWOptions options) : params_(std::move(params)), options_(options) {
  for (const auto& [name, p] : params_) {
    exp_avg_.push_back(at::zeros_like(p, at::MemoryFormat::Contiguous));
    exp_avg_sq_.push_back(at::zeros_like(p, at::MemoryFormat::Contiguous));
    steps_.push_back(at::zeros({}, p.options().dtype(at::kFloat)));
  }
}

void AdamW::step(double lr, const at::Tensor& grad_multiplier) {
  at::NoGradGuard no_grad;
  // one fused call per parameter dtype (bf16 parameters keep fp32 norms: two groups)
  std::map<at::ScalarType, std::array<std::vector<at::Tensor>, 5>> groups;  // p, g, m, v, step
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& param = params_[i].second;
    if (!param.grad().defined()) continue;
    auto& g = groups[param.scalar_type()];
    g[0].push_back(param);
    g[1].push_back(param.grad());
    g[2].push_back(exp_avg_[i]);
    g[3].push_back(exp_avg_sq_[i]);
    g[4].push_back(steps_[i]);
  }
  at::Tensor multiplier;
  if (grad_multiplier.defined() && !groups.empty())
    multiplier = grad_multiplier.to(groups.begin()->second[0][0].device(), at::kFloat).reshape({}).contiguous();
  for (auto& [dtype, g] : groups) {
    // the kernels read the step count for bias correction; the caller advances it
    at::_foreach_add_(g[4], 1.0);
    if (use_kernel_ && kernel_adamw(g, lr, options_, multiplier)) continue;
    // PyTorch's fused AdamW (CPU, or where ember's kernel does not apply) divides each gradient
    // by grad_scale (AMP's unscaling) as it reads it
    std::optional<at::Tensor> divisor;
    if (multiplier.defined()) divisor = multiplier.reciprocal();
    at::_fused_adamw_(g[0], g[1], g[2], g[3], /*max_exp_avg_sqs=*/{}, g[4], lr, options_.beta1, options_.beta2,
                      options_.weight_decay, options_.eps, /*amsgrad=*/false, /*maximize=*/false, divisor);
  }
}

void AdamW::zero_grad() {
  for (auto& [name, p] : params_) {
    if (p.grad().defined()) p.mutable_grad() = at::Tensor();
  }
}

model::NamedTensors AdamW::state() const {
  model::NamedTensors out;
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& name = params_[i].first;
    out.emplace_back(name + ".exp_avg", exp_avg_[i]);
    out.emplace_back(name + ".exp_avg_sq", exp_avg_sq_[i]);
    out.emplace_back(name + ".step", steps_[i]);
  }
  return out;
}

void AdamW::load_state(const std::map<std::string, at::Tensor>& tensors, const std::string& what) {
  auto named = state();
  model::load_into(named, tensors, what);
}

int64_t AdamW::local_state_bytes() const {
  int64_t n = 0;
  for (size_t i = 0; i < params_.size(); ++i)
    n += exp_avg_[i].nbytes() + exp_avg_sq_[i].nbytes() + steps_[i].nbytes();
  return n;
}

namespace {

// The defined gradients by dtype: the foreach kernels take one dtype per list.
std::map<at::ScalarType, std::vector<at::Tensor>> grads_by_dtype(const std::vector<at::Tensor>& params) {
  std::map<at::ScalarType, std::vector<at::Tensor>> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads[p.grad().scalar_type()].push_back(p.grad());
  return grads;
}

}  // namespace

at::Tensor grad_squared_norm(const std::vector<at::Tensor>& params, bool use_kernel) {
  at::NoGradGuard no_grad;
  at::Tensor sum;
  for (const auto& [dtype, list] : grads_by_dtype(params)) {
    at::Tensor part = use_kernel ? kernel_sum_squares(list) : at::Tensor();
    // PyTorch's foreach norms: fp32 per tensor, whatever the gradients' dtype
    if (!part.defined()) part = at::stack(at::_foreach_norm(list, 2.0, at::kFloat)).pow(2).sum();
    sum = sum.defined() ? sum + part : part;
  }
  return sum.defined() ? sum : at::zeros({}, at::kFloat);
}

ClipAndScale clip_and_scale(const std::vector<at::Tensor>& params, double max_norm, const at::Tensor& scale,
                            Collectives* sum_over_ranks) {
  at::NoGradGuard no_grad;
  const auto grads = grads_by_dtype(params);
  ClipAndScale out;
  at::Tensor& total = out.norm;
  if (sum_over_ranks) {
    // this rank's share of the squared norm, summed over the ranks (collective: every rank
    // takes part, with or without gradients of its own)
    at::Tensor square = grads.empty() ? at::zeros({}, params.empty() ? at::TensorOptions() : params[0].options().dtype(at::kFloat))
                                      : grad_squared_norm(params);
    std::vector<at::Tensor> one{square.reshape({1})};
    sum_over_ranks->all_reduce_sum(one);
    total = one[0].reshape({}).sqrt();
  } else {
    if (grads.empty()) {
      total = at::zeros({}, at::kFloat);
      return out;
    }
    total = grad_squared_norm(params).sqrt();
  }
  if (scale.defined()) total = total * scale.to(total.device(), at::kFloat);
  if (max_norm > 0 || scale.defined()) {
    // min(1, max_norm / norm) on the device; a non-finite norm leaves the gradients as they are;
    // one multiplier for the scale and the clipping together
    auto coef = at::ones_like(total);
    if (max_norm > 0) {
      coef = (max_norm / (total + 1e-6)).clamp_max(1.0);
      coef = at::where(at::isfinite(total), coef, at::ones_like(coef));
    }
    if (scale.defined()) coef = coef * scale.to(total.device(), at::kFloat);
    out.multiplier = coef;
  }
  return out;
}

at::Tensor clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm, const at::Tensor& scale,
                          Collectives* sum_over_ranks) {
  auto r = clip_and_scale(params, max_norm, scale, sum_over_ranks);
  if (r.multiplier.defined()) {
    at::NoGradGuard no_grad;
    // the multiplier in each list's dtype: the foreach kernels' fast path takes one dtype
    for (auto& [dtype, list] : grads_by_dtype(params)) at::_foreach_mul_(list, r.multiplier.to(dtype));
  }
  return r.norm;
}

}  // namespace ember::train
