// Gemma's gated MLP, down(gelu_tanh(gate(x)) * up(x)), with its products block-wise in FP8
// (fp8_linear.h's recipe and layouts) as one autograd function, so that each operand is
// quantised once, by the kernel that produces it:
//
//   forward   gu = x [gate; up]^T       one product: the two weights stacked [2 hidden, width],
//                                       x quantised once (with x^T for the weight gradient)
//             h  = gelu_tanh(g) * u     computed and quantised in one kernel (h, h^T in e4m3;
//                                       h is never stored in bf16)
//             y  = h down^T
//   backward  dh = dy down              dy quantised once (dy, dy^T)
//             d down = dy^T h
//             [dg | du] from dh, g, u   computed and quantised in one kernel
//             dx = [dg | du] [gate; up] one product over K = 2 hidden
//             d [gate; up] = [dg | du]^T x
//
// Saved for the backward pass: gu (the bf16 MLP saves g and u too) and x^T, h^T in e4m3. On the
// CPU the same function runs the CPU references (fp8_reference.h) and multiplies the dequantised
// operands in float32: the emulation the tests check against.
#pragma once

#include <ATen/ATen.h>

#include "ember/model/fp8_linear.h"

namespace ember::model {

// The quantised weights of one MLP, refreshed once per optimizer step (fp8_weights_updated).
struct Fp8MlpCache {
  Fp8WeightCache gate_up, down;
};

// x [..., width]; gate, up [hidden, width]; down [width, hidden] (width and hidden multiples of
// 128). y [..., width] in bf16 under autocast, else x's dtype; the gradients take the inputs'.
at::Tensor fp8_gated_mlp(const at::Tensor& x, const at::Tensor& gate, const at::Tensor& up, const at::Tensor& down,
                         Fp8MlpCache& cache);

// h = gelu_tanh(g) * u quantised per 1x128 tile with its transposed copy, from gu [rows, 2 hidden]
// (g = gu[:, :hidden], u = gu[:, hidden:]). CUDA: the fused kernel; CPU: its reference.
Fp8Tensor fp8_quantize_gelu_mul(const at::Tensor& gu);
// [dg | du] [rows, 2 hidden] from dh [rows, hidden] and gu as above, quantised the same way.
Fp8Tensor fp8_quantize_gelu_mul_backward(const at::Tensor& dh, const at::Tensor& gu);

}  // namespace ember::model
