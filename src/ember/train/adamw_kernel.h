#pragma once
// ember's AdamW update on CUDA: one launch for a list of tensors of one dtype, as if they were
// concatenated (optimizer.cc wraps it). Built only when CMake finds nvcc (EMBER_CUDA_KERNELS).

#include <cstdint>

namespace ember::train::kernels {

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

}  // namespace ember::train::kernels
