#pragma once
// What ember's elementwise CUDA kernels share (included by .cu files only): conversions of
// float, bfloat16 and half to and from float, and Pack, V elements in one aligned 16-byte (or
// narrower) load or store.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace ember::kernels {

__device__ inline float to_float(float v) { return v; }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ inline float to_float(__half v) { return __half2float(v); }

template <typename T>
__device__ inline T from_float(float v);
template <>
__device__ inline float from_float<float>(float v) { return v; }
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <>
__device__ inline __half from_float<__half>(float v) { return __float2half(v); }

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

}  // namespace ember::kernels
