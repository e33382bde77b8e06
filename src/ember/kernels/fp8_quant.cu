// The block-wise FP8 quantisation kernel (fp8_quant.h): one thread block per 128x128 tile of the
// input, staged in shared memory as float, then a pass over its rows (1x128 tiles -> q) and one
// over its columns (128x1 tiles -> qt); block mode uses one scale for the whole tile.
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "ember/kernels/cuda_pack.cuh"
#include "ember/kernels/fp8_quant.h"

namespace ember::kernels {
namespace {

constexpr int kTile = 128;
constexpr int kStride = kTile + 1;  // shared-memory row stride: rows and columns both read without bank conflicts
constexpr int kThreads = 256;       // 8 warps
constexpr int kSharedBytes = kTile * kStride * sizeof(float);

__device__ inline float scale_of(float amax) { return fmaxf(amax / 448.f, 0x1p-126f); }

__device__ inline uint8_t e4m3(float v) {
  return __nv_cvt_float_to_fp8(fminf(fmaxf(v, -448.f), 448.f), __NV_SATFINITE, __NV_E4M3);
}

__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

template <typename T, bool kBlocks>
__global__ void __launch_bounds__(kThreads) quantize_kernel(const T* x, int64_t rows, int64_t cols, int64_t padded,
                                                             uint8_t* q, float* scale, uint8_t* qt, float* scale_t) {
  extern __shared__ float tile[];  // [kTile][kStride]
  __shared__ float warp_amax[kThreads / 32];
  constexpr int V = 16 / sizeof(T);
  const int64_t r0 = int64_t(blockIdx.y) * kTile, c0 = int64_t(blockIdx.x) * kTile;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // stage the tile (rows past the input are zero)
  float amax = 0.f;
  for (int i = threadIdx.x; i < kTile * kTile / V; i += kThreads) {
    const int r = i / (kTile / V), c = i % (kTile / V) * V;
    Pack<T, V> p;
    if (r0 + r < rows) {
      p = *reinterpret_cast<const Pack<T, V>*>(x + (r0 + r) * cols + c0 + c);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) p.v[j] = from_float<T>(0.f);
    }
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const float v = to_float(p.v[j]);
      tile[r * kStride + c + j] = v;
      amax = fmaxf(amax, fabsf(v));
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
    if (threadIdx.x == 0) scale[blockIdx.y * (cols / kTile) + blockIdx.x] = block_scale;
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
      if (lane == 0) scale[blockIdx.x * padded + r0 + r] = s;
    }
    uint8_t* out = q + (r0 + r) * cols + c0;
#pragma unroll
    for (int k = 0; k < 4; ++k) out[lane + 32 * k] = e4m3(v[k] / s);
  }
  if (!qt) return;
  // columns (the transposed copy): warp w quantises columns w, w + 8, ...; lane reads rows lane + 32 k
  const int64_t qt_rows = kBlocks ? rows : padded;
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
      if (lane == 0) scale_t[blockIdx.y * cols + c0 + c] = s;
    }
    uint8_t* out = qt + (c0 + c) * qt_rows + r0;
#pragma unroll
    for (int k = 0; k < 4; ++k) out[lane + 32 * k] = e4m3(v[k] / s);
  }
}

template <typename T, bool kBlocks>
void launch(const void* x, int64_t rows, int64_t cols, int64_t padded, void* q, float* scale, void* qt, float* scale_t,
            cudaStream_t stream) {
  static const bool attribute_set = [] {
    cudaFuncSetAttribute(quantize_kernel<T, kBlocks>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes);
    return true;
  }();
  (void)attribute_set;
  const dim3 grid(unsigned(cols / kTile), unsigned(padded / kTile));
  quantize_kernel<T, kBlocks><<<grid, kThreads, kSharedBytes, stream>>>(
      static_cast<const T*>(x), rows, cols, padded, static_cast<uint8_t*>(q), scale, static_cast<uint8_t*>(qt), scale_t);
}

template <typename T>
void launch_mode(bool blocks, const void* x, int64_t rows, int64_t cols, int64_t padded, void* q, float* scale, void* qt,
                 float* scale_t, cudaStream_t stream) {
  if (blocks) return launch<T, true>(x, rows, cols, padded, q, scale, qt, scale_t, stream);
  launch<T, false>(x, rows, cols, padded, q, scale, qt, scale_t, stream);
}

}  // namespace

void fp8_quantize(const void* x, int dtype, int64_t rows, int64_t cols, int64_t padded_rows, bool blocks, void* q,
                  float* scale, void* qt, float* scale_t, void* stream) {
  if (padded_rows == 0 || cols == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  if (dtype == 0) return launch_mode<float>(blocks, x, rows, cols, padded_rows, q, scale, qt, scale_t, s);
  if (dtype == 1) return launch_mode<__nv_bfloat16>(blocks, x, rows, cols, padded_rows, q, scale, qt, scale_t, s);
  launch_mode<__half>(blocks, x, rows, cols, padded_rows, q, scale, qt, scale_t, s);
}

}  // namespace ember::kernels
