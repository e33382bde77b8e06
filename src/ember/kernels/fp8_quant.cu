// The block-wise FP8 quantisation kernels (fp8_quant.h). The default (Fp8QuantKernel::kVector):
// one thread block of 512 threads per 128x128 tile of the output, each thread holding 4 rows x 8
// columns of it in registers, read in 16-byte loads (from the input itself, or computing the gated
// MLP's gelu_tanh(gate) * up and its gradients on the fly). The 1x128 row tiles' amax is reduced
// across the 16 threads of a row (shuffles), the 128x1 column tiles' across the 32 row groups
// (shuffles, then shared memory); q is stored from registers, 8 contiguous bytes per thread
// (128 per row); the transposed copy qt goes through shared memory as e4m3 bytes (16 KB, each
// thread's 4 rows of a column one 32-bit word, swizzled so that neither side has bank
// conflicts) and out in 16-byte stores, 128 contiguous bytes per row of qt. The first kernel
// (kStaged, fp8_quant_staged.cuh) stays selectable for measurements.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "ember/kernels/fp8_quant.h"
#include "ember/kernels/fp8_quant_sources.cuh"
#include "ember/kernels/fp8_quant_staged.cuh"

namespace ember::kernels {
namespace {

using fp8::e4m3x2;
using fp8::GeluMul;
using fp8::GeluMulGrad;
using fp8::kTile;
using fp8::Plain;
using fp8::scale_of;

constexpr int kThreads = 512;  // 16 warps; thread t: tile rows 4 (t / 16) .. + 4, columns 8 (t % 16) .. + 8

// four e4m3 bytes of a[0..3] / s, a[0] in the lowest
__device__ inline uint32_t e4m3x4(float a0, float a1, float a2, float a3, float s) {
  return e4m3x2(a0 / s, a1 / s) | e4m3x2(a2 / s, a3 / s) << 16;
}

// One 128x128 tile of the output. cols: the output's width; padded: its rows (block mode: the
// rows; qt is [cols, padded]).
template <typename Source, bool kBlocks>
__global__ void __launch_bounds__(kThreads, 2) quantize_kernel(Source src, int64_t cols, int64_t padded, uint8_t* q,
                                                                float* scale, uint8_t* qt, float* scale_t) {
  // qt's tile, transposed: word 32 c + (g ^ 2 (c / 8)) holds rows 4g .. 4g + 4 of tile column c
  __shared__ uint4 tq[kTile * kTile / 16];
  __shared__ float part[kThreads / 32][kTile];  // per warp: its columns' amax (block mode: [w][0], the warp's)
  __shared__ float col_scale[kTile];
  const int t = threadIdx.x, lane = t % 32, warp = t / 32, cg = t % 16, rg = t / 16;
  const int64_t r0 = int64_t(blockIdx.y) * kTile, c0 = src.out_col(blockIdx.x);
  float v[4][8];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t r = r0 + 4 * rg + i;
    if (r < src.rows) {
      src.values(blockIdx.x, r, 8 * cg, v[i]);
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) v[i][j] = 0.f;  // the padding rows
    }
  }
  float rs[4];  // the scales of this thread's rows
  if (kBlocks) {
    float m = 0.f;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j) m = fmaxf(m, fabsf(v[i][j]));
    m = fp8::warp_max(m);
    if (lane == 0) part[warp][0] = m;
    __syncthreads();
    m = 0.f;
    for (int w = 0; w < kThreads / 32; ++w) m = fmaxf(m, part[w][0]);
    const float s = scale_of(m);
    if (t == 0) scale[(r0 / kTile) * (cols / kTile) + c0 / kTile] = s;
#pragma unroll
    for (int i = 0; i < 4; ++i) rs[i] = s;
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float m = 0.f;
#pragma unroll
      for (int j = 0; j < 8; ++j) m = fmaxf(m, fabsf(v[i][j]));
      for (int o = 8; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));  // the row's 16 threads
      rs[i] = scale_of(m);
      if (cg == 0) scale[(c0 / kTile) * padded + r0 + 4 * rg + i] = rs[i];
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float* a = v[i];
    const uint2 w{e4m3x4(a[0], a[1], a[2], a[3], rs[i]), e4m3x4(a[4], a[5], a[6], a[7], rs[i])};
    *reinterpret_cast<uint2*>(q + (r0 + 4 * rg + i) * cols + c0 + 8 * cg) = w;
  }
  if (!qt) return;
  float cs[8];  // the scales of this thread's columns
  if (kBlocks) {
#pragma unroll
    for (int j = 0; j < 8; ++j) cs[j] = rs[0];
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      float m = fmaxf(fmaxf(fabsf(v[0][j]), fabsf(v[1][j])), fmaxf(fabsf(v[2][j]), fabsf(v[3][j])));
      cs[j] = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 16));  // the warp's other row group
    }
    if (lane < 16) {
      auto* p = reinterpret_cast<float4*>(&part[warp][8 * cg]);
      p[0] = make_float4(cs[0], cs[1], cs[2], cs[3]);
      p[1] = make_float4(cs[4], cs[5], cs[6], cs[7]);
    }
    __syncthreads();
    if (t < kTile) {
      float m = 0.f;
      for (int w = 0; w < kThreads / 32; ++w) m = fmaxf(m, part[w][t]);
      const float s = scale_of(m);
      col_scale[t] = s;
      scale_t[(r0 / kTile) * cols + c0 + t] = s;
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < 8; ++j) cs[j] = col_scale[8 * cg + j];
  }
  auto* words = reinterpret_cast<uint32_t*>(tq);
#pragma unroll
  for (int j = 0; j < 8; ++j)
    words[(8 * cg + j) * 32 + (rg ^ (cg << 1))] = e4m3x4(v[0][j], v[1][j], v[2][j], v[3][j], cs[j]);
  __syncthreads();
  // row c of qt's tile: 8 pieces of 16 bytes (rows 16 k .. 16 k + 16 of the tile), one per thread
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int c = t / 8 + 64 * h, k = t % 8, swizzle = (c / 8) << 1;
    uint4 w = tq[c * 8 + (k ^ (swizzle >> 2))];
    if (swizzle & 2) w = make_uint4(w.z, w.w, w.x, w.y);
    *reinterpret_cast<uint4*>(qt + (c0 + c) * padded + r0 + 16 * k) = w;
  }
}

std::atomic<int> selected_kernel{int(Fp8QuantKernel::kVector)};

// grid: one block per output tile (cols / 128 x padded / 128)
template <bool kBlocks, typename Source>
void launch(const Source& src, int64_t cols, int64_t padded, void* q_out, float* scale, void* qt_out, float* scale_t,
            void* stream_in) {
  auto* q = static_cast<uint8_t*>(q_out);
  auto* qt = static_cast<uint8_t*>(qt_out);
  auto stream = static_cast<cudaStream_t>(stream_in);
  if (fp8_quant_kernel() == Fp8QuantKernel::kStaged)
    return fp8::staged::launch<kBlocks>(src, cols, padded, q, scale, qt, scale_t, stream);
  const dim3 grid(unsigned(cols / kTile), unsigned(padded / kTile));
  quantize_kernel<Source, kBlocks><<<grid, kThreads, 0, stream>>>(src, cols, padded, q, scale, qt, scale_t);
}

// fn(T{}) with T the element type of dtype
template <typename Fn>
void with_dtype(int dtype, const Fn& fn) {
  if (dtype == 0) return fn(float{});
  if (dtype == 1) return fn(__nv_bfloat16{});
  fn(__half{});
}

}  // namespace

void set_fp8_quant_kernel(Fp8QuantKernel kernel) { selected_kernel.store(int(kernel), std::memory_order_relaxed); }

Fp8QuantKernel fp8_quant_kernel() { return Fp8QuantKernel(selected_kernel.load(std::memory_order_relaxed)); }

void fp8_quantize(const void* x, int dtype, int64_t rows, int64_t cols, int64_t padded_rows, bool blocks, void* q,
                  float* scale, void* qt, float* scale_t, void* stream) {
  if (padded_rows == 0 || cols == 0) return;
  with_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    const Plain<T> src{static_cast<const T*>(x), rows, cols};
    if (blocks) launch<true>(src, cols, padded_rows, q, scale, qt, nullptr, stream);
    else launch<false>(src, cols, padded_rows, q, scale, qt, scale_t, stream);
  });
}

void fp8_gelu_mul_quantize(const void* gate, const void* up, int64_t ld, int dtype, int64_t rows, int64_t hidden,
                           int64_t padded_rows, void* q, float* scale, void* qt, float* scale_t, void* stream) {
  if (padded_rows == 0 || hidden == 0) return;
  with_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    const GeluMul<T> src{static_cast<const T*>(gate), static_cast<const T*>(up), rows, ld};
    launch<false>(src, hidden, padded_rows, q, scale, qt, scale_t, stream);
  });
}

void fp8_gelu_mul_backward_quantize(const void* dh, const void* gate, const void* up, int64_t ld, int dtype,
                                    int64_t rows, int64_t hidden, int64_t padded_rows, void* q, float* scale, void* qt,
                                    float* scale_t, void* stream) {
  if (padded_rows == 0 || hidden == 0) return;
  with_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    const GeluMulGrad<T> src{static_cast<const T*>(dh), static_cast<const T*>(gate), static_cast<const T*>(up), rows,
                             ld, hidden};
    launch<false>(src, 2 * hidden, padded_rows, q, scale, qt, scale_t, stream);
  });
}

}  // namespace ember::kernels
