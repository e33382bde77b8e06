#pragma once
// The block-wise FP8 quantisation on CUDA, one pass over the input: per 128x128 tile of x it
// finds the amax of each 1x128 row tile (and of each 128x1 column tile for the transposed copy,
// or of the whole block for weights), scales, rounds to e4m3 and writes q and, when asked, the
// transposed qt that the backward pass multiplies with. Layouts, scales and rounding are exactly
// those of ref::fp8_quantize (fp8_reference.h), which the GPU test holds it to byte for byte.
// Built only when CMake finds nvcc (EMBER_CUDA_KERNELS).

#include <cstdint>

namespace ember::kernels {

// x: device pointer, [rows, cols] row-major and 16-byte aligned, dtype 0 float, 1 bfloat16,
// 2 half; cols a multiple of 128; padded_rows >= rows a multiple of 128 (block mode: = rows).
// q, scale, qt, scale_t: device outputs as ref::fp8_quantize lays them out (qt, scale_t null:
// no transposed copy; block mode ignores scale_t). stream: a cudaStream_t.
void fp8_quantize(const void* x, int dtype, int64_t rows, int64_t cols, int64_t padded_rows, bool blocks, void* q,
                  float* scale, void* qt, float* scale_t, void* stream);

}  // namespace ember::kernels
