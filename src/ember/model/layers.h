// Building blocks of the policy's towers, on libtorch. Every module takes packed tokens:
// activations are [tokens, width] (or [tokens, heads, head_dim]); no batch dimension.
#pragma once

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <memory>

#include "ember/model/fp8_linear.h"
#include "ember/model/fp8_mlp.h"

namespace ember::model {

// y = x W^T + b. weight (out x in), bias (out) or undefined. Initialised N(0, std^2), bias 0.
// With fp8 set (make_dense chooses it) the product runs block-wise in FP8 (fp8_linear.h); the
// parameters stay as they are, so the layer's checkpoint is the same either way.
class DenseImpl : public torch::nn::Module {
 public:
  DenseImpl(int64_t in, int64_t out, bool bias = true, double std = 0.02);
  at::Tensor forward(const at::Tensor& x) const {
    return fp8 ? fp8_linear(x, weight, bias, *fp8) : at::linear(x, weight, bias);
  }
  at::Tensor weight, bias;
  std::shared_ptr<Fp8WeightCache> fp8;  // null: at::linear (bf16 under autocast)
};
TORCH_MODULE(Dense);

// d's weight and bias redrawn as torch.nn.Linear initialises them: uniform on
// [-1/sqrt(in), 1/sqrt(in)] (kaiming_uniform with a = sqrt(5)), from the global generator.
// For ports of reference modules that keep PyTorch's default (groot.h).
Dense torch_default_init(Dense d);

// How the linear layers a factory call makes compute. fp8: block-wise FP8 where the layer's sizes
// fit (fp8_fits), at::linear elsewhere.
struct LinearOptions {
  bool fp8 = false;
};

// The layer factory of the policy's towers: a Dense as above, on the FP8 path per options.
Dense make_dense(int64_t in, int64_t out, bool bias, const LinearOptions& options);

// RMSNorm with a learned scale (initialised to 1).
class RmsNormImpl : public torch::nn::Module {
 public:
  explicit RmsNormImpl(int64_t width, double eps = 1e-6);
  at::Tensor forward(const at::Tensor& x) const;
  at::Tensor weight;
  double eps;
};
TORCH_MODULE(RmsNorm);

// LayerNorm with scale and bias (the vision tower's).
class LayerNormImpl : public torch::nn::Module {
 public:
  explicit LayerNormImpl(int64_t width, double eps = 1e-6);
  at::Tensor forward(const at::Tensor& x) const;
  at::Tensor weight, bias;
  double eps;
};
TORCH_MODULE(LayerNorm);

// Adaptive RMSNorm (pi0.5's action expert): normalise without a learned scale, then modulate by
// a condition c: (scale, shift, gate) = Dense(c); y = norm(x) * (1 + scale) + shift.
// The gate multiplies the residual branch that follows (x + gate * branch(y)). The modulation
// starts at scale = shift = 0, gate = 1, i.e. as a plain RMSNorm and a plain residual.
class AdaNormImpl : public torch::nn::Module {
 public:
  AdaNormImpl(int64_t width, int64_t cond_width, double eps = 1e-6);
  struct Out {
    at::Tensor y;     // [tokens, width]
    at::Tensor gate;  // [tokens or broadcastable, width]
  };
  // x is [n, tokens_per_sample, width] and cond is [n, cond_width] (one condition per sample).
  Out forward(const at::Tensor& x, const at::Tensor& cond) const;
  Dense modulation{nullptr};
  double eps;
};
TORCH_MODULE(AdaNorm);

// Gemma's MLP: down(gelu_tanh(gate(x)) * up(x)), no biases. Where the factory puts all three
// layers on the FP8 path, the MLP runs as one FP8 function (fp8_mlp.h: gate and up one product,
// each operand quantised by its producer); the parameters are the same either way.
class GatedMlpImpl : public torch::nn::Module {
 public:
  GatedMlpImpl(int64_t width, int64_t hidden, const LinearOptions& linear = {});
  at::Tensor forward(const at::Tensor& x) const;
  Dense gate{nullptr}, up{nullptr}, down{nullptr};
  std::shared_ptr<Fp8MlpCache> fp8;  // null: three linear layers and gelu_tanh_mul
};
TORCH_MODULE(GatedMlp);

// Rotary position embedding (Gemma's half-split form, base 10000).
struct Rope {
  // [tokens, 1, head_dim], float32: cos = [cos, cos], sin = [-sin, sin] over the two halves, so
  // that rotating x is x * cos + swap_halves(x) * sin (3 kernels instead of 7)
  at::Tensor cos, sin;
};
// positions is [tokens] int64.
Rope make_rope(const at::Tensor& positions, int64_t head_dim, double base = 10000.0);
// x is [tokens, heads, head_dim]; returns the rotated x in x's dtype.
at::Tensor apply_rope(const at::Tensor& x, const Rope& rope);

// Sine-cosine embedding of flow-matching times, as pi0: periods from min_period to max_period.
// t is [n] float; returns [n, width] float32.
at::Tensor time_embedding(const at::Tensor& t, int64_t width, double min_period = 4e-3, double max_period = 4.0);

}  // namespace ember::model
