// What the FP8 CPU tests share: operands quantised as each product takes them, then dequantised
// (the emulation built independently of the layers under test), and the relative error.
#pragma once

#include <torch/torch.h>

#include <utility>

#include "ember/model/fp8_linear.h"

namespace ember::model::testing {

// x [rows, cols] quantised per 1x128 tile of its rows, dequantised
inline at::Tensor via_rows(const at::Tensor& x) {
  auto t = fp8_quantize_rows(x, false);
  return fp8_dequantize(t.q, t.scale.t()).narrow(0, 0, x.size(0));
}

// w [rows, cols] quantised per 128x128 block, dequantised
inline at::Tensor via_blocks(const at::Tensor& w) {
  auto t = fp8_quantize_blocks(w);
  return fp8_dequantize(t.q, t.scale);
}

inline at::Tensor pad_rows(const at::Tensor& x, int64_t to) {
  return at::cat({x, at::zeros({to - x.size(0), x.size(1)}, x.options())});
}

// a^T b over the tokens (rows), both per 1x128 tile along them, tokens zero-padded to `padded`
inline at::Tensor over_tokens(const at::Tensor& a, const at::Tensor& b, int64_t padded) {
  return at::mm(via_rows(pad_rows(a, padded).t().contiguous()), via_rows(pad_rows(b, padded).t().contiguous()).t());
}

inline double rel(const at::Tensor& got, const at::Tensor& want) {
  auto g = got.cpu().to(at::kFloat), w = want.cpu().to(at::kFloat);
  return (g - w).norm().item<double>() / w.norm().item<double>();
}

// the fraction of e4m3 values (float8 tensors of one shape) that differ, and whether any differs
// by more than one step of e4m3 (a rounding flip of a float32 value an ulp away; +0 == -0)
inline std::pair<double, bool> code_mismatch(const at::Tensor& a, const at::Tensor& b) {
  auto x = a.cpu().to(at::kFloat), y = b.cpu().to(at::kFloat);
  auto diff = (x - y).abs();
  auto step = at::maximum(x.abs(), y.abs()) * 0.125 + 0x1p-9;
  return {diff.ne(0).to(at::kFloat).mean().item<double>(), diff.gt(step).any().item<bool>()};
}

}  // namespace ember::model::testing
