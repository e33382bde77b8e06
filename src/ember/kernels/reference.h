#pragma once
// CPU references of ember's CUDA kernels (fused_kernels.h, adamw_kernel.h): the same arithmetic
// in float, one element at a time, over host arrays. The GPU tests compare each kernel against
// its reference on random inputs; the CPU tests pin the references to PyTorch's own operators.
// Pure functions of their arguments (outputs may not alias inputs unless stated): thread-safe.
#include <cstdint>

namespace ember::kernels::ref {

// out = gelu_tanh(gate) * up; gate, up, out: [n]
void gelu_tanh_mul_forward(const float* gate, const float* up, float* out, int64_t n);
// d_gate = d_out * up * gelu_tanh'(gate), d_up = d_out * gelu_tanh(gate); all [n]
void gelu_tanh_mul_backward(const float* d_out, const float* gate, const float* up, float* d_gate, float* d_up, int64_t n);
// x: [tokens, heads, 2 half], token t at x + t * x_token_stride; cos, sin: [tokens, 2 half] as
// Rope holds them (cos = [c, c], sin = [-s, s]); out: [tokens, heads, 2 half] contiguous.
// inverse: rotate by the opposite angle.
void rope_rotate(const float* x, int64_t x_token_stride, const float* cos, const float* sin, float* out, int64_t tokens,
                 int64_t heads, int64_t half, bool inverse);
// One AdamW step of one tensor (PyTorch's AdamW with decoupled weight decay), in place on
// param, exp_avg, exp_avg_sq ([n] each); step: the step count after advancing (>= 1);
// grad_multiplier scales the gradient as it is read.
void adamw_step(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n, float step, double lr,
                double beta1, double beta2, double weight_decay, double eps, float grad_multiplier = 1.f);
// sum of x^2 over [n] (accumulated in double: the exact answer the kernel's float partial sums
// approach)
double sum_squares(const float* x, int64_t n);

}  // namespace ember::kernels::ref
