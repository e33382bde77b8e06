#pragma once
// What the block-wise FP8 quantisation kernels (fp8_quant.cu, fp8_quant_staged.cuh) share: the
// scale and rounding of fp8_reference.h on the device, and the sources of a tile's values, the
// input itself or the gated MLP's products computed on the fly (included by .cu files only).

#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "ember/kernels/cuda_pack.cuh"
#include "ember/kernels/gelu_tanh.cuh"

namespace ember::kernels::fp8 {

constexpr int kTile = 128;

__device__ inline float scale_of(float amax) { return fmaxf(amax / 448.f, 0x1p-126f); }

// e4m3 bits of v, saturated to +-448 (fp8_reference.h's clamp), rounded to nearest even
__device__ inline uint8_t e4m3(float v) { return __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3); }
// two at once: a in the low byte
__device__ inline uint32_t e4m3x2(float a, float b) {
  return __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
}

__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// 8 values of row-major p [., ld] at (r, c) as float, in 16-byte loads (p + r ld + c 16-byte aligned)
template <typename T>
__device__ inline void load8(const T* p, int64_t ld, int64_t r, int64_t c, float* v) {
  constexpr int V = 16 / sizeof(T);
#pragma unroll
  for (int k = 0; k < 8 / V; ++k) {
    const auto pack = *reinterpret_cast<const Pack<T, V>*>(p + r * ld + c + k * V);
#pragma unroll
    for (int j = 0; j < V; ++j) v[k * V + j] = to_float(pack.v[j]);
  }
}

// The sources of a tile. For output tile column bx: out_col(bx) is its first column in the output;
// values(bx, r, c, v) the 8 float values of input row r (< rows), tile columns c .. c + 8.

// the input itself
template <typename T>
struct Plain {
  const T* x;
  int64_t rows, cols;
  __device__ int64_t out_col(int bx) const { return int64_t(bx) * kTile; }
  __device__ void values(int bx, int64_t r, int c, float* v) const { load8(x, cols, r, int64_t(bx) * kTile + c, v); }
};

// h = gelu_tanh(gate) * up
template <typename T>
struct GeluMul {
  const T *gate, *up;
  int64_t rows, ld;
  __device__ int64_t out_col(int bx) const { return int64_t(bx) * kTile; }
  __device__ void values(int bx, int64_t r, int c, float* v) const {
    const int64_t col = int64_t(bx) * kTile + c;
    float g[8], u[8];
    load8(gate, ld, r, col, g);
    load8(up, ld, r, col, u);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      float y, dy;
      gelu_tanh(g[j], y, dy);
      v[j] = y * u[j];
    }
  }
};

// d_gate (even bx) or d_up (odd bx) of the same input tile: the two blocks that read one tile of
// dh, gate and up run side by side, so the second reads them from L2
template <typename T>
struct GeluMulGrad {
  const T *dh, *gate, *up;
  int64_t rows, ld, hidden;
  __device__ int64_t out_col(int bx) const { return (bx % 2 ? hidden : 0) + int64_t(bx / 2) * kTile; }
  __device__ void values(int bx, int64_t r, int c, float* v) const {
    const bool d_up = bx % 2;
    const int64_t col = int64_t(bx / 2) * kTile + c;
    float d[8], g[8], u[8];
    load8(dh, hidden, r, col, d);
    load8(gate, ld, r, col, g);
    load8(up, ld, r, col, u);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      float y, dy;
      gelu_tanh(g[j], y, dy);
      v[j] = d_up ? d[j] * y : d[j] * u[j] * dy;
    }
  }
};

}  // namespace ember::kernels::fp8
