#pragma once
// Operators fused into one CUDA kernel per direction where ember was built with nvcc (and the
// tensors are on a GPU, in float, bfloat16 or half), with autograd; everywhere else the same
// function composed of ATen operators (the reference, which the GPU tests compare against).

#include <ATen/ATen.h>

namespace ember::model {

// gelu_tanh(gate) * up (Gemma's gated MLP). Forward: one kernel instead of two; backward: one
// instead of three, and gelu_tanh(gate) is never stored.
at::Tensor gelu_tanh_mul(const at::Tensor& gate, const at::Tensor& up);
at::Tensor gelu_tanh_mul_reference(const at::Tensor& gate, const at::Tensor& up);

// Rotary embedding of x [tokens, heads, head_dim] by tables cos, sin [tokens, 1, head_dim] (float;
// cos = [c, c], sin = [-s, s]): x * cos + swap_halves(x) * sin, in float32, returned in x's dtype.
// One kernel each way instead of five forward and six backward.
at::Tensor rope_rotate(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
at::Tensor rope_rotate_reference(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

// Whether the fused kernels were built in (nvcc was found).
bool fused_kernels_built();

// The dtype code ember's CUDA kernels take (fused_kernels.h, train/adamw_kernel.h): 0 float,
// 1 bfloat16, 2 half; -1 for any other type (no kernel).
int kernel_dtype(at::ScalarType type);

}  // namespace ember::model
