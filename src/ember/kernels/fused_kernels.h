#pragma once
// Raw CUDA kernels of the fused operators (fused_ops.h wraps them for tensors and autograd).
// Pointers are device pointers; `stream` is a cudaStream_t. dtype: 0 float, 1 bfloat16, 2 half.
// Built only when CMake finds nvcc (EMBER_CUDA_KERNELS).

#include <cstdint>

namespace ember::kernels {

// out = gelu_tanh(gate) * up, over n elements
void gelu_tanh_mul_forward(const void* gate, const void* up, void* out, int64_t n, int dtype, void* stream);
// d_gate = d_out * up * gelu_tanh'(gate), d_up = d_out * gelu_tanh(gate)
void gelu_tanh_mul_backward(const void* d_out, const void* gate, const void* up, void* d_gate, void* d_up, int64_t n,
                            int dtype, void* stream);
// Rotates x [tokens, heads, 2 half] (heads contiguous within a token, tokens x_token_stride
// elements apart) by the tables cos, sin [tokens, 1, 2 half] (float; cos = [c, c], sin = [-s, s], as
// Rope holds them) into the contiguous out: out1 = x1 c - x2 s, out2 = x2 c + x1 s. inverse = true
// rotates by the opposite angle (the backward pass).
void rope_rotate(const void* x, int64_t x_token_stride, const float* cos, const float* sin, void* out, int64_t tokens,
                 int64_t heads, int64_t half, bool inverse, int dtype, void* stream);

}  // namespace ember::kernels
