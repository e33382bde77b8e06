#include "ember/model/layers.h"

#include <ATen/core/grad_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <cmath>

#include "ember/model/fused_ops.h"

namespace ember::model {

DenseImpl::DenseImpl(int64_t in, int64_t out, bool with_bias, double std) {
  weight = register_parameter("weight", at::randn({out, in}) * std);
  if (with_bias) bias = register_parameter("bias", at::zeros({out}));
}

Dense torch_default_init(Dense d) {
  at::NoGradGuard no_grad;
  const double bound = 1.0 / std::sqrt(double(d->weight.size(1)));
  d->weight.uniform_(-bound, bound);
  if (d->bias.defined()) d->bias.uniform_(-bound, bound);
  return d;
}

Dense make_dense(int64_t in, int64_t out, bool bias, const LinearOptions& options) {
  Dense d(in, out, bias);
  if (options.fp8 && fp8_fits(in, out)) d->fp8 = std::make_shared<Fp8WeightCache>();
  return d;
}

RmsNormImpl::RmsNormImpl(int64_t width, double eps_) : eps(eps_) {
  weight = register_parameter("weight", at::ones({width}));
}

at::Tensor RmsNormImpl::forward(const at::Tensor& x) const {
  // the kernel accumulates in float32 whatever the activations' dtype (as Gemma computes it)
  return at::rms_norm(x, {x.size(-1)}, weight.to(x.scalar_type()), eps);
}

LayerNormImpl::LayerNormImpl(int64_t width, double eps_) : eps(eps_) {
  weight = register_parameter("weight", at::ones({width}));
  bias = register_parameter("bias", at::zeros({width}));
}

at::Tensor LayerNormImpl::forward(const at::Tensor& x) const {
  // in the activations' dtype (the kernel accumulates in float32), as RmsNorm: autocast would run
  // it in float32 and turn the whole residual stream after it into float32
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  const auto dtype = x.scalar_type();
  return at::layer_norm(x, {x.size(-1)}, weight.to(dtype), bias.to(dtype), eps);
}

AdaNormImpl::AdaNormImpl(int64_t width, int64_t cond_width, double eps_) : eps(eps_) {
  modulation = register_module("modulation", Dense(cond_width, 3 * width, true, 0.0));
  // gate starts at 1: the layer begins as a plain pre-norm residual block
  at::NoGradGuard no_grad;
  modulation->bias.narrow(0, 2 * width, width).fill_(1.0);
}

AdaNormImpl::Out AdaNormImpl::forward(const at::Tensor& x, const at::Tensor& cond) const {
  auto mod = modulation->forward(cond).unsqueeze(1);  // [n, 1, 3 width]
  auto parts = mod.chunk(3, -1);
  auto normed = at::rms_norm(x, {x.size(-1)}, std::nullopt, eps);
  return {at::addcmul(parts[1], normed, 1 + parts[0]), parts[2]};  // normed * (1 + scale) + shift
}

GatedMlpImpl::GatedMlpImpl(int64_t width, int64_t hidden, const LinearOptions& linear) {
  gate = register_module("gate", make_dense(width, hidden, false, linear));
  up = register_module("up", make_dense(width, hidden, false, linear));
  down = register_module("down", make_dense(hidden, width, false, linear));
  if (gate->fp8 && up->fp8 && down->fp8) fp8 = std::make_shared<Fp8MlpCache>();
}

at::Tensor GatedMlpImpl::forward(const at::Tensor& x) const {
  if (fp8) return fp8_gated_mlp(x, gate->weight, up->weight, down->weight, *fp8);
  return down->forward(gelu_tanh_mul(gate->forward(x), up->forward(x)));
}

Rope make_rope(const at::Tensor& positions, int64_t head_dim, double base) {
  auto opts = at::TensorOptions().dtype(at::kFloat).device(positions.device());
  auto inv_freq = at::pow(base, at::arange(0, head_dim, 2, opts) / double(head_dim)).reciprocal();
  auto angles = positions.to(at::kFloat).unsqueeze(1) * inv_freq.unsqueeze(0);  // [T, D/2]
  auto cos = angles.cos(), sin = angles.sin();
  return {at::cat({cos, cos}, -1).unsqueeze(1), at::cat({-sin, sin}, -1).unsqueeze(1)};
}

at::Tensor apply_rope(const at::Tensor& x, const Rope& rope) {
  // [x1, x2] -> [x1 cos - x2 sin, x2 cos + x1 sin], in float32 (as Gemma computes it)
  return rope_rotate(x, rope.cos, rope.sin);
}

at::Tensor time_embedding(const at::Tensor& t, int64_t width, double min_period, double max_period) {
  auto opts = at::TensorOptions().dtype(at::kDouble).device(t.device());
  auto fraction = at::linspace(0.0, 1.0, width / 2, opts);
  auto period = min_period * at::pow(max_period / min_period, fraction);
  auto angles = t.to(at::kDouble).unsqueeze(1) * (2 * M_PI / period).unsqueeze(0);  // [n, width/2]
  return at::cat({angles.sin(), angles.cos()}, 1).to(at::kFloat);
}

}  // namespace ember::model
