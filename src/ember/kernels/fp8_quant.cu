// The block-wise FP8 quantisation kernels (fp8_quant.h): one thread block per 128x128 tile of the
// output, staged in shared memory as float by its source (the input itself, or the gated MLP's
// gelu_tanh(gate) * up and its gradients computed on the fly), then a pass over its rows (1x128
// tiles -> q) and one over its columns (128x1 tiles -> qt); block mode uses one scale per tile.
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "ember/kernels/cuda_pack.cuh"
#include "ember/kernels/fp8_quant.h"
#include "ember/kernels/gelu_tanh.cuh"

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

// Fills tile [kTile][kStride] with value(r, c, v): v [V] the float values of the tile's row r,
// columns c .. c + V; returns this thread's amax over what it wrote.
template <int V, typename Value>
__device__ float stage(float* tile, const Value& value) {
  float amax = 0.f;
  for (int i = threadIdx.x; i < kTile * kTile / V; i += kThreads) {
    const int r = i / (kTile / V), c = i % (kTile / V) * V;
    float v[V];
    value(r, c, v);
#pragma unroll
    for (int j = 0; j < V; ++j) {
      tile[r * kStride + c + j] = v[j];
      amax = fmaxf(amax, fabsf(v[j]));
    }
  }
  return amax;
}

// V values of row-major p [rows, ld] at (r, c) as float
template <typename T, int V>
__device__ inline void load(const T* p, int64_t ld, int64_t r, int64_t c, float* v) {
  const auto pack = *reinterpret_cast<const Pack<T, V>*>(p + r * ld + c);
#pragma unroll
  for (int j = 0; j < V; ++j) v[j] = to_float(pack.v[j]);
}

// The sources of a tile. stage_tile(tile, r0, bx) stages the tile of input rows r0 .. r0 + 128
// that thread block column bx covers (rows past the input are zero), returns the thread's amax
// and sets c0, the tile's first column in the output.

// the input itself
template <typename T>
struct Plain {
  static constexpr int V = 16 / sizeof(T);
  const T* x;
  int64_t rows, cols;
  __device__ float stage_tile(float* tile, int64_t r0, int bx, int64_t& c0) const {
    c0 = int64_t(bx) * kTile;
    const int64_t col = c0;
    return stage<V>(tile, [&](int r, int c, float* v) {
      if (r0 + r < rows) load<T, V>(x, cols, r0 + r, col + c, v);
      else
        for (int j = 0; j < V; ++j) v[j] = 0.f;
    });
  }
};

// h = gelu_tanh(gate) * up
template <typename T>
struct GeluMul {
  static constexpr int V = 16 / sizeof(T);
  const T *gate, *up;
  int64_t rows, ld;
  __device__ float stage_tile(float* tile, int64_t r0, int bx, int64_t& c0) const {
    c0 = int64_t(bx) * kTile;
    const int64_t col = c0;
    return stage<V>(tile, [&](int r, int c, float* v) {
      if (r0 + r >= rows) {
        for (int j = 0; j < V; ++j) v[j] = 0.f;
        return;
      }
      float g[V], u[V];
      load<T, V>(gate, ld, r0 + r, col + c, g);
      load<T, V>(up, ld, r0 + r, col + c, u);
      for (int j = 0; j < V; ++j) {
        float y, dy;
        gelu_tanh(g[j], y, dy);
        v[j] = y * u[j];
      }
    });
  }
};

// d_gate (even bx) or d_up (odd bx) of the same input tile: the two blocks that read one tile of
// dh, gate and up run side by side, so the second reads them from L2
template <typename T>
struct GeluMulGrad {
  static constexpr int V = 16 / sizeof(T);
  const T *dh, *gate, *up;
  int64_t rows, ld, hidden;
  __device__ float stage_tile(float* tile, int64_t r0, int bx, int64_t& c0) const {
    const bool d_up = bx % 2;
    const int64_t col = int64_t(bx / 2) * kTile;
    c0 = (d_up ? hidden : 0) + col;
    return stage<V>(tile, [&](int r, int c, float* v) {
      if (r0 + r >= rows) {
        for (int j = 0; j < V; ++j) v[j] = 0.f;
        return;
      }
      float d[V], g[V], u[V];
      load<T, V>(dh, hidden, r0 + r, col + c, d);
      load<T, V>(gate, ld, r0 + r, col + c, g);
      load<T, V>(up, ld, r0 + r, col + c, u);
      for (int j = 0; j < V; ++j) {
        float y, dy;
        gelu_tanh(g[j], y, dy);
        v[j] = d_up ? d[j] * y : d[j] * u[j] * dy;
      }
    });
  }
};

// One 128x128 tile: staged by src, then quantised. cols: the output's width; padded: its rows
// (block mode: the rows; qt is [cols, padded]).
template <typename Source, bool kBlocks>
__global__ void __launch_bounds__(kThreads) quantize_kernel(Source src, int64_t cols, int64_t padded, uint8_t* q,
                                                             float* scale, uint8_t* qt, float* scale_t) {
  extern __shared__ float tile[];  // [kTile][kStride]
  __shared__ float warp_amax[kThreads / 32];
  const int64_t r0 = int64_t(blockIdx.y) * kTile;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int64_t c0 = 0;
  float amax = src.stage_tile(tile, r0, blockIdx.x, c0);
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
void launch(const Source& src, int64_t cols, int64_t padded, void* q, float* scale, void* qt, float* scale_t,
            void* stream) {
  static const bool attribute_set = [] {
    cudaFuncSetAttribute(quantize_kernel<Source, kBlocks>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes);
    return true;
  }();
  (void)attribute_set;
  const dim3 grid(unsigned(cols / kTile), unsigned(padded / kTile));
  quantize_kernel<Source, kBlocks><<<grid, kThreads, kSharedBytes, static_cast<cudaStream_t>(stream)>>>(
      src, cols, padded, static_cast<uint8_t*>(q), scale, static_cast<uint8_t*>(qt), scale_t);
}

// fn(T{}) with T the element type of dtype
template <typename Fn>
void with_dtype(int dtype, const Fn& fn) {
  if (dtype == 0) return fn(float{});
  if (dtype == 1) return fn(__nv_bfloat16{});
  fn(__half{});
}

}  // namespace

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
