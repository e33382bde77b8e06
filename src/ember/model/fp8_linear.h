// The block-wise FP8 linear layer (DeepSeek-V3's recipe): e4m3 operands with float32 scales per
// 1x128 tile of activations and per 128x128 block of weights, float32 accumulation.
//
//   forward   y  = x W^T      x per 1x128 tile (along in),  W per 128x128 block
//   backward  dx = dy W       dy per 1x128 tile (along out), W^T per 128x128 block (same blocks)
//             dW = dy^T x     dy^T and x^T per 1x128 tile along the tokens (128x1 tiles of dy, x)
// x's transposed copy is quantised in the forward pass by the same kernel (one read of x) and kept
// for the backward pass in e4m3 (half the bytes of bf16). Tokens are zero-padded to a multiple
// of 128 (the weight gradient's tiles run along them); the padding contributes nothing.
//
// On CUDA (sm_90): kernels/fp8_quant.h quantises and at::_scaled_mm multiplies (cuBLASLt's
// block-scaled FP8 GEMM). On the CPU the same function quantises with the CPU reference
// (kernels/fp8_reference.h) and multiplies the dequantised operands in float32: the emulation the
// CPU tests check forward and backward against, and the GPU test checks the GPU against.
// Master weights, gradients and checkpoints keep the parameters' own dtypes: FP8 is a compute
// format only.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ember::model {

constexpr int64_t kFp8Tile = 128;

// An operand quantised block-wise (layouts: kernels/fp8_reference.h).
struct Fp8Tensor {
  at::Tensor q;        // [padded_rows, cols] float8_e4m3fn
  at::Tensor scale;    // rows: [cols/128, padded_rows] float; blocks: [rows/128, cols/128]
  at::Tensor qt;       // [cols, padded_rows] float8_e4m3fn; undefined unless asked for
  at::Tensor scale_t;  // rows: [padded_rows/128, cols]; blocks: scale^T contiguous [cols/128, rows/128]
  int64_t rows = 0;    // before padding
};

// x [rows, cols] (float, bf16 or half; cols a multiple of 128) per 1x128 tile of its rows, rows
// zero-padded to a multiple of 128; transposed: also x^T per 1x128 tile (128x1 tiles of x).
Fp8Tensor fp8_quantize_rows(const at::Tensor& x, bool transposed);
// w [rows, cols] (both multiples of 128) per 128x128 block, with its transposed copy.
Fp8Tensor fp8_quantize_blocks(const at::Tensor& w);
// Uninitialised outputs of a rows-mode quantisation of [rows, cols] (what the kernels fill).
Fp8Tensor fp8_rows_empty(int64_t rows, int64_t cols, const at::TensorOptions& options, bool transposed);

// a [M, K] @ b [K, N] of e4m3 operands with scales in _scaled_mm's views (scale_a [M or M/128,
// K/128], scale_b [K/128, N or N/128]; each scale covers a tile of its operand), result in
// out_dtype. CUDA: at::_scaled_mm; CPU: the dequantised operands multiplied in float32.
at::Tensor fp8_scaled_mm(const at::Tensor& a, const at::Tensor& scale_a, const at::Tensor& b, const at::Tensor& scale_b,
                         at::ScalarType out_dtype);
// q * scale in float32, scale [q.size(0)/tr, q.size(1)/tc] covering tiles of tr x tc.
at::Tensor fp8_dequantize(const at::Tensor& q, const at::Tensor& scale);

// The weights' quantised copies are rebuilt when the process's weight generation changes (the
// training step bumps it after each optimizer update: once per step, not per micro-batch) or the
// weight's storage or version counter does (a load, a dtype change, any in-place ATen write).
void fp8_weights_updated();

// One weight's quantised copy (or that of several weights stacked along out, one product's
// operand). Not thread-safe (one per layer, used by its forward pass).
class Fp8WeightCache {
 public:
  // weight [out, in]; returns its quantisation, reused while the weight is unchanged
  const Fp8Tensor& get(const at::Tensor& weight) { return get(std::vector<at::Tensor>{weight}); }
  // weights [out_i, in] each: the quantisation of their concatenation [sum out_i, in]
  const Fp8Tensor& get(const std::vector<at::Tensor>& weights);
  int64_t refreshes() const { return refreshes_; }  // how often get() quantised (tests)

 private:
  Fp8Tensor w_;
  int64_t generation_ = -1, refreshes_ = 0;
  std::vector<int64_t> versions_;
  std::vector<const void*> data_;
};

// Whether a linear layer in -> out takes the FP8 path: both sizes multiples of 512. The tiles need
// only multiples of 128 (cuBLASLt took 768 = 6 tiles), but at the sizes below this the measured
// forward + backward lost to bf16 (H200, 2026-12-01, `ember bench fp8_linear`: pi05's k/v
// 2048 -> 256 0.55x, the small preset's 768-wide layers 0.34-0.69x; bench/results/fp8_h200_*).
bool fp8_fits(int64_t in, int64_t out);

// The quantisation kernel of the CUDA path, process-wide: "vector" (the default) or "staged" (the
// first version, kept so that a benchmark can time one against the other in one run; both give the
// same bytes: kernels/fp8_quant.h). Throws Error kInvalidArgument naming `flag` for another name
// or where ember was built without its CUDA kernels.
void set_fp8_quant_kernel(const std::string& name, const std::string& flag);
std::string fp8_quant_kernel_name();

// "" where fp8_linear can run on `device` (the CPU always; CUDA: sm_90 and ember's kernels built),
// else why not.
std::string fp8_unsupported_reason(at::Device device);

// y = x W^T (+ bias), with autograd. x [..., in], weight [out, in] (fp8_fits), bias [out] or
// undefined. y's dtype: bf16 under autocast, else x's; the gradients take x's and the weight's.
at::Tensor fp8_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, Fp8WeightCache& cache);

}  // namespace ember::model
