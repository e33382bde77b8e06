#include "ember/train/bf16_weights.h"

#include <ATen/core/grad_mode.h>

#include "ember/core/error.h"

namespace ember::train {

Bf16Weights::Bf16Weights(std::vector<at::Tensor> params) : params_(std::move(params)) {
  at::NoGradGuard no_grad;
  if (params_.empty()) return;
  const auto device = params_[0].device();
  for (const auto& p : params_) {
    if (p.scalar_type() != at::kFloat || p.device() != device)
      throw Error(ErrorKind::kInternal, "Bf16Weights: every parameter must be fp32 on " + device.str());
    numel_ += p.numel();
  }
  auto f32 = at::TensorOptions().dtype(at::kFloat).device(device);
  fp32_ = at::empty({numel_}, f32);
  bf16_buffer_ = at::empty({numel_}, f32.dtype(at::kBFloat16));
  grad16_ = at::empty({numel_}, f32.dtype(at::kBFloat16));
  grad32_ = at::empty({numel_}, f32);
  int64_t offset = 0;
  for (auto& p : params_) {
    const int64_t n = p.numel();
    auto view = [&](const at::Tensor& flat) { return flat.narrow(0, offset, n).view(p.sizes()); };
    fp32_views_.push_back(view(fp32_));
    bf16_views_.push_back(view(bf16_buffer_));
    grad_views_.push_back(view(grad32_));
    fp32_views_.back().copy_(p.detach());
    p.set_data(fp32_views_.back());
    offset += n;
  }
}

void Bf16Weights::cast() {
  if (bf16_) throw Error(ErrorKind::kInternal, "Bf16Weights::cast: the parameters already hold bf16");
  at::NoGradGuard no_grad;
  bf16_buffer_.copy_(fp32_);
  for (size_t i = 0; i < params_.size(); ++i) {
    params_[i].mutable_grad() = at::Tensor();
    params_[i].set_data(bf16_views_[i]);
  }
  bf16_ = true;
}

void Bf16Weights::restore() {
  if (!bf16_) throw Error(ErrorKind::kInternal, "Bf16Weights::restore: cast() did not run");
  at::NoGradGuard no_grad;
  // the bf16 gradients, in parameter order, into one flat buffer (one concatenation), then fp32
  std::vector<at::Tensor> rows;
  rows.reserve(params_.size());
  for (auto& p : params_) {
    const auto& g = p.grad();
    rows.push_back(g.defined() ? g.to(at::kBFloat16).reshape({-1}) : at::zeros({p.numel()}, p.options().dtype(at::kBFloat16)));
  }
  if (!rows.empty()) at::cat_out(grad16_, rows, 0);
  grad32_.copy_(grad16_);
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    p.mutable_grad() = at::Tensor();
    p.set_data(fp32_views_[i]);
    p.mutable_grad() = grad_views_[i];
  }
  bf16_ = false;
}

}  // namespace ember::train
