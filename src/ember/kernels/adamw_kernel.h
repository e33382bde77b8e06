#pragma once
// ember's optimizer kernels on CUDA: the AdamW update, and the sum of squares of the gradients
// (the norm clipping needs), each one launch for a list of tensors of one dtype, as if they were
// concatenated (optimizer.cc wraps them). Built only when CMake finds nvcc (EMBER_CUDA_KERNELS).

#include <cstdint>

namespace ember::kernels {

// One parameter: device pointers (16-byte aligned, contiguous, all of one dtype), its step count
// (a device float, already advanced), and where it starts in the concatenation.
struct AdamWTensor {
  void* param;
  const void* grad;
  void* exp_avg;
  void* exp_avg_sq;
  const float* step;
  int64_t start, numel;
};

// Tensors start in the concatenation at multiples of kAlign elements (gaps between them are
// skipped), so that every block's 16-byte loads are aligned.
constexpr int64_t kAlign = 8;

// `table` is a device array of `count` entries with increasing start (multiples of kAlign) and
// numel > 0, within [0, total). dtype: 0 float, 1 bfloat16, 2 half. grad_multiplier: a device float the gradients
// are read multiplied by, or null. The arithmetic is PyTorch's fused AdamW's, in float.
void adamw_step(const AdamWTensor* table, int count, int64_t total, int dtype, double lr, double beta1, double beta2,
                double weight_decay, double eps, const float* grad_multiplier, void* stream);

// One tensor to read: device pointer (16-byte aligned, contiguous) and where it starts in the
// concatenation (as AdamWTensor's).
struct SpanTensor {
  const void* data;
  int64_t start, numel;
};

// The number of blocks (and of partial sums) sum_squares uses for `total` elements.
int64_t sum_squares_blocks(int64_t total);

// Writes sum_squares_blocks(total) partial sums of x^2 (float arithmetic) over the tensors of
// `table` (a device array, laid out as adamw_step's) to the device floats `partial`.
void sum_squares(const SpanTensor* table, int count, int64_t total, int dtype, float* partial, void* stream);

}  // namespace ember::kernels
