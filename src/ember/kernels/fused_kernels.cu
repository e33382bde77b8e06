// CUDA kernels of the fused operators: elementwise, fp32 arithmetic, 16-byte loads and stores.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "ember/kernels/cuda_pack.cuh"
#include "ember/kernels/fused_kernels.h"
#include "ember/kernels/gelu_tanh.cuh"

namespace ember::kernels {
namespace {

using ember::kernels::from_float;
using ember::kernels::Pack;
using ember::kernels::to_float;

inline int blocks_for(int64_t work, int threads) {
  return int(std::max<int64_t>(1, std::min<int64_t>((work + threads - 1) / threads, 132 * 32)));
}

template <typename T, int V>
__global__ void gelu_mul_forward_kernel(const T* gate, const T* up, T* out, int64_t n) {
  const int64_t packs = n / V, stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < packs; i += stride) {
    const auto g = reinterpret_cast<const Pack<T, V>*>(gate)[i];
    const auto u = reinterpret_cast<const Pack<T, V>*>(up)[i];
    Pack<T, V> o;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      float y, dy;
      gelu_tanh(to_float(g.v[j]), y, dy);
      o.v[j] = from_float<T>(y * to_float(u.v[j]));
    }
    reinterpret_cast<Pack<T, V>*>(out)[i] = o;
  }
  const int64_t tail = packs * V + first;  // fewer than V elements are left
  if (tail < n) {
    float y, dy;
    gelu_tanh(to_float(gate[tail]), y, dy);
    out[tail] = from_float<T>(y * to_float(up[tail]));
  }
}

template <typename T, int V>
__global__ void gelu_mul_backward_kernel(const T* d_out, const T* gate, const T* up, T* d_gate, T* d_up, int64_t n) {
  const int64_t packs = n / V, stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < packs; i += stride) {
    const auto d = reinterpret_cast<const Pack<T, V>*>(d_out)[i];
    const auto g = reinterpret_cast<const Pack<T, V>*>(gate)[i];
    const auto u = reinterpret_cast<const Pack<T, V>*>(up)[i];
    Pack<T, V> dg, du;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      float y, dy;
      gelu_tanh(to_float(g.v[j]), y, dy);
      const float dj = to_float(d.v[j]);
      dg.v[j] = from_float<T>(dj * to_float(u.v[j]) * dy);
      du.v[j] = from_float<T>(dj * y);
    }
    reinterpret_cast<Pack<T, V>*>(d_gate)[i] = dg;
    reinterpret_cast<Pack<T, V>*>(d_up)[i] = du;
  }
  const int64_t tail = packs * V + first;
  if (tail < n) {
    float y, dy;
    gelu_tanh(to_float(gate[tail]), y, dy);
    const float dj = to_float(d_out[tail]);
    d_gate[tail] = from_float<T>(dj * to_float(up[tail]) * dy);
    d_up[tail] = from_float<T>(dj * y);
  }
}

// one thread per V consecutive pairs (x1[i], x2[i]) of one token's head
template <typename T, int V>
__global__ void rope_kernel(const T* x, int64_t x_token_stride, const float* cos, const float* sin, T* out,
                            int64_t tokens, int64_t heads, int64_t half, float sign) {
  const int64_t groups = half / V, total = tokens * heads * groups, stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t col = (i % groups) * V, row = i / groups, token = row / heads, head = row % heads;
    const T* in = x + token * x_token_stride + head * 2 * half + col;
    const auto a = *reinterpret_cast<const Pack<T, V>*>(in);
    const auto b = *reinterpret_cast<const Pack<T, V>*>(in + half);
    const float* c = cos + token * 2 * half + col;
    const float* s = sin + token * 2 * half + half + col;  // the second half holds +sin
    Pack<T, V> o1, o2;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const float x1 = to_float(a.v[j]), x2 = to_float(b.v[j]), cj = c[j], sj = sign * s[j];
      o1.v[j] = from_float<T>(x1 * cj - x2 * sj);
      o2.v[j] = from_float<T>(x2 * cj + x1 * sj);
    }
    T* o = out + row * 2 * half + col;
    *reinterpret_cast<Pack<T, V>*>(o) = o1;
    *reinterpret_cast<Pack<T, V>*>(o + half) = o2;
  }
}

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename T>
void gelu_forward_as(const void* g, const void* u, void* o, int64_t n, cudaStream_t s) {
  constexpr int V = 16 / sizeof(T);
  const int threads = 256;
  if (aligned(g) && aligned(u) && aligned(o)) {
    gelu_mul_forward_kernel<T, V><<<blocks_for(n / V + 1, threads), threads, 0, s>>>(
        static_cast<const T*>(g), static_cast<const T*>(u), static_cast<T*>(o), n);
  } else {
    gelu_mul_forward_kernel<T, 1><<<blocks_for(n, threads), threads, 0, s>>>(
        static_cast<const T*>(g), static_cast<const T*>(u), static_cast<T*>(o), n);
  }
}

template <typename T>
void gelu_backward_as(const void* d, const void* g, const void* u, void* dg, void* du, int64_t n, cudaStream_t s) {
  constexpr int V = 16 / sizeof(T);
  const int threads = 256;
  if (aligned(d) && aligned(g) && aligned(u) && aligned(dg) && aligned(du)) {
    gelu_mul_backward_kernel<T, V><<<blocks_for(n / V + 1, threads), threads, 0, s>>>(
        static_cast<const T*>(d), static_cast<const T*>(g), static_cast<const T*>(u), static_cast<T*>(dg),
        static_cast<T*>(du), n);
  } else {
    gelu_mul_backward_kernel<T, 1><<<blocks_for(n, threads), threads, 0, s>>>(
        static_cast<const T*>(d), static_cast<const T*>(g), static_cast<const T*>(u), static_cast<T*>(dg),
        static_cast<T*>(du), n);
  }
}

template <typename T>
void rope_as(const void* x, int64_t x_stride, const float* c, const float* sn, void* o, int64_t tokens, int64_t heads,
             int64_t half, float sign, cudaStream_t s) {
  constexpr int V = 16 / sizeof(T);
  const int threads = 256;
  if (half % V == 0 && x_stride % V == 0 && aligned(x) && aligned(o) && aligned(c) && aligned(sn)) {
    rope_kernel<T, V><<<blocks_for(tokens * heads * half / V, threads), threads, 0, s>>>(
        static_cast<const T*>(x), x_stride, c, sn, static_cast<T*>(o), tokens, heads, half, sign);
  } else {
    rope_kernel<T, 1><<<blocks_for(tokens * heads * half, threads), threads, 0, s>>>(
        static_cast<const T*>(x), x_stride, c, sn, static_cast<T*>(o), tokens, heads, half, sign);
  }
}

}  // namespace

void gelu_tanh_mul_forward(const void* gate, const void* up, void* out, int64_t n, int dtype, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (dtype == 1) gelu_forward_as<__nv_bfloat16>(gate, up, out, n, s);
  else if (dtype == 2) gelu_forward_as<__half>(gate, up, out, n, s);
  else gelu_forward_as<float>(gate, up, out, n, s);
}

void gelu_tanh_mul_backward(const void* d_out, const void* gate, const void* up, void* d_gate, void* d_up, int64_t n,
                            int dtype, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (dtype == 1) gelu_backward_as<__nv_bfloat16>(d_out, gate, up, d_gate, d_up, n, s);
  else if (dtype == 2) gelu_backward_as<__half>(d_out, gate, up, d_gate, d_up, n, s);
  else gelu_backward_as<float>(d_out, gate, up, d_gate, d_up, n, s);
}

void rope_rotate(const void* x, int64_t x_token_stride, const float* cos, const float* sin, void* out, int64_t tokens,
                 int64_t heads, int64_t half, bool inverse, int dtype, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const float sign = inverse ? -1.f : 1.f;
  if (dtype == 1) rope_as<__nv_bfloat16>(x, x_token_stride, cos, sin, out, tokens, heads, half, sign, s);
  else if (dtype == 2) rope_as<__half>(x, x_token_stride, cos, sin, out, tokens, heads, half, sign, s);
  else rope_as<float>(x, x_token_stride, cos, sin, out, tokens, heads, half, sign, s);
}

}  // namespace ember::kernels
