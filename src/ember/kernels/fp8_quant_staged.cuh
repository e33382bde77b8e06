#pragma once
// The first quantisation kernel (Fp8QuantKernel::kStaged), kept so that one run can time it
// against the vectorised one (fp8_quant.cu): one thread block per 128x128 tile, staged in shared
// memory as float (66 KB: 3 blocks per multiprocessor), then a pass over its rows (1x128 tiles
// -> q) and one over its columns (128x1 tiles -> qt), writing single bytes. Included by
// fp8_quant.cu only.

#include "ember/kernels/fp8_quant_sources.cuh"

namespace ember::kernels::fp8::staged {

constexpr int kStride = kTile + 1;  // shared-memory row stride: rows and columns both read without bank conflicts
constexpr int kThreads = 256;       // 8 warps
constexpr int kSharedBytes = kTile * kStride * sizeof(float);

template <typename Source, bool kBlocks>
__global__ void __launch_bounds__(kThreads) quantize_kernel(Source src, int64_t cols, int64_t padded, uint8_t* q,
                                                             float* scale, uint8_t* qt, float* scale_t) {
  extern __shared__ float tile[];  // [kTile][kStride]
  __shared__ float warp_amax[kThreads / 32];
  const int64_t r0 = int64_t(blockIdx.y) * kTile;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t c0 = src.out_col(blockIdx.x);
  float amax = 0.f;
  for (int i = threadIdx.x; i < kTile * kTile / 8; i += kThreads) {
    const int r = i / (kTile / 8), c = i % (kTile / 8) * 8;
    float v[8] = {};
    if (r0 + r < src.rows) src.values(blockIdx.x, r0 + r, c, v);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      tile[r * kStride + c + j] = v[j];
      amax = fmaxf(amax, fabsf(v[j]));
    }
  }
  float block_scale = 1.f;
  if (kBlocks) {
    amax = warp_max(amax);
    if (lane == 0) warp_amax[warp] = amax;
  }
  __syncthreads();
  if (kBlocks) {
    float m = 0.f;
    for (int w = 0; w < kThreads / 32; ++w) m = fmaxf(m, warp_amax[w]);
    block_scale = scale_of(m);
    if (threadIdx.x == 0) scale[(r0 / kTile) * (cols / kTile) + c0 / kTile] = block_scale;
  }
  // rows: warp w quantises rows w, w + 8, ...; lane reads columns lane + 32 k
  for (int r = warp; r < kTile; r += kThreads / 32) {
    float v[4], m = 0.f;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      v[k] = tile[r * kStride + lane + 32 * k];
      m = fmaxf(m, fabsf(v[k]));
    }
    float s = block_scale;
    if (!kBlocks) {
      s = scale_of(warp_max(m));
      if (lane == 0) scale[(c0 / kTile) * padded + r0 + r] = s;
    }
    uint8_t* out = q + (r0 + r) * cols + c0;
#pragma unroll
    for (int k = 0; k < 4; ++k) out[lane + 32 * k] = e4m3(v[k] / s);
  }
  if (!qt) return;
  // columns (the transposed copy): warp w quantises columns w, w + 8, ...; lane reads rows lane + 32 k
  for (int c = warp; c < kTile; c += kThreads / 32) {
    float v[4], m = 0.f;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      v[k] = tile[(lane + 32 * k) * kStride + c];
      m = fmaxf(m, fabsf(v[k]));
    }
    float s = block_scale;
    if (!kBlocks) {
      s = scale_of(warp_max(m));
      if (lane == 0) scale_t[(r0 / kTile) * cols + c0 + c] = s;
    }
    uint8_t* out = qt + (c0 + c) * padded + r0;
#pragma unroll
    for (int k = 0; k < 4; ++k) out[lane + 32 * k] = e4m3(v[k] / s);
  }
}

// grid: one block per output tile (cols / 128 x padded / 128)
template <bool kBlocks, typename Source>
void launch(const Source& src, int64_t cols, int64_t padded, uint8_t* q, float* scale, uint8_t* qt, float* scale_t,
            cudaStream_t stream) {
  static const bool attribute_set = [] {
    cudaFuncSetAttribute(quantize_kernel<Source, kBlocks>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes);
    return true;
  }();
  (void)attribute_set;
  const dim3 grid(unsigned(cols / kTile), unsigned(padded / kTile));
  quantize_kernel<Source, kBlocks><<<grid, kThreads, kSharedBytes, stream>>>(src, cols, padded, q, scale, qt, scale_t);
}

}  // namespace ember::kernels::fp8::staged
