#include "ember/kernels/reference.h"

#include <cmath>

namespace ember::kernels::ref {
namespace {

constexpr float kBeta = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kKappa = 0.044715f;

// gelu_tanh(g) and its derivative (fused_kernels.cu's formula)
void gelu_tanh(float g, float& y, float& dy) {
  const float t = std::tanh(kBeta * (g + kKappa * g * g * g));
  y = 0.5f * g * (1.f + t);
  dy = 0.5f * (1.f + t) + 0.5f * g * (1.f - t * t) * kBeta * (1.f + 3.f * kKappa * g * g);
}

}  // namespace

void gelu_tanh_mul_forward(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float y, dy;
    gelu_tanh(gate[i], y, dy);
    out[i] = y * up[i];
  }
}

void gelu_tanh_mul_backward(const float* d_out, const float* gate, const float* up, float* d_gate, float* d_up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float y, dy;
    gelu_tanh(gate[i], y, dy);
    d_gate[i] = d_out[i] * up[i] * dy;
    d_up[i] = d_out[i] * y;
  }
}

void rope_rotate(const float* x, int64_t x_token_stride, const float* cos, const float* sin, float* out, int64_t tokens,
                 int64_t heads, int64_t half, bool inverse) {
  const float sign = inverse ? -1.f : 1.f;
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < half; ++i) {
        const float* in = x + t * x_token_stride + h * 2 * half;
        const float x1 = in[i], x2 = in[half + i];
        const float c = cos[t * 2 * half + i], s = sign * sin[t * 2 * half + half + i];  // second half holds +sin
        float* o = out + (t * heads + h) * 2 * half;
        o[i] = x1 * c - x2 * s;
        o[half + i] = x2 * c + x1 * s;
      }
}

void adamw_step(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n, float step, double lr,
                double beta1, double beta2, double weight_decay, double eps, float grad_multiplier) {
  const float b1 = float(beta1), b2 = float(beta2), e = float(eps);
  const float step_size = float(lr) / (1.f - std::pow(b1, step));
  const float bc2_sqrt = std::sqrt(1.f - std::pow(b2, step));
  const float decay = 1.f - float(lr) * float(weight_decay);
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i] * grad_multiplier;
    float p = param[i] * decay, m = exp_avg[i], v = exp_avg_sq[i];
    m = b1 * m + (1.f - b1) * g;
    v = b2 * v + (1.f - b2) * g * g;
    p -= step_size * m / (std::sqrt(v) / bc2_sqrt + e);
    param[i] = p, exp_avg[i] = m, exp_avg_sq[i] = v;
  }
}

double sum_squares(const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(x[i]) * x[i];
  return s;
}

}  // namespace ember::kernels::ref
