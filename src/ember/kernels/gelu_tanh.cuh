#pragma once
// gelu_tanh(g) and its derivative on the device, as PyTorch's gelu(approximate="tanh") computes
// them (included by .cu files only; the CPU reference's copy is reference.cc's gelu_tanh).

namespace ember::kernels {

__device__ inline void gelu_tanh(float g, float& y, float& dy) {
  constexpr float kBeta = 0.7978845608028654f;  // sqrt(2 / pi)
  constexpr float kKappa = 0.044715f;
  const float t = tanhf(kBeta * (g + kKappa * g * g * g));
  y = 0.5f * g * (1.f + t);
  dy = 0.5f * (1.f + t) + 0.5f * g * (1.f - t * t) * kBeta * (1.f + 3.f * kKappa * g * g);
}

}  // namespace ember::kernels
