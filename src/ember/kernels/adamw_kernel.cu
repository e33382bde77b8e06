// AdamW over many tensors in one launch: each block takes a chunk of the tensors' concatenation
// (finding its first tensor by binary search), 16-byte loads and stores, float arithmetic.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ember/kernels/cuda_pack.cuh"
#include "ember/kernels/adamw_kernel.h"

namespace ember::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kChunk = 16384;  // elements per block: a multiple of every vector width

using ember::kernels::from_float;
using ember::kernels::Pack;
using ember::kernels::to_float;

struct Hyper {
  float lr, beta1, beta2, weight_decay, eps;
};

// one tensor's constants for this step
struct Update {
  float step_size, bc2_sqrt, decay, mult;
  Hyper h;
  __device__ inline void apply(float& p, float g, float& m, float& v) const {
    g *= mult;
    p *= decay;  // decoupled weight decay: p -= lr * wd * p
    m = h.beta1 * m + (1.f - h.beta1) * g;
    v = h.beta2 * v + (1.f - h.beta2) * g * g;
    p -= step_size * m / (sqrtf(v) / bc2_sqrt + h.eps);
  }
};

// the last entry of `table` starting at or before pos (entries sorted by start, the first at 0)
template <typename E>
__device__ inline int first_at(const E* table, int count, int64_t pos) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (table[mid].start <= pos) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

template <typename T>
__global__ void __launch_bounds__(kThreads) adamw_kernel(const AdamWTensor* table, int count, int64_t total, Hyper h,
                                                          const float* grad_multiplier) {
  constexpr int V = 16 / sizeof(T);
  using P = Pack<T, V>;
  int64_t pos = int64_t(blockIdx.x) * kChunk;
  const int64_t end = min(pos + kChunk, total);
  const int lo = first_at(table, count, pos);
  const float mult = grad_multiplier ? *grad_multiplier : 1.f;
  for (int t = lo; t < count && table[t].start < end; ++t) {
    const AdamWTensor e = table[t];
    const int64_t from = max(pos, e.start), n = min(end, e.start + e.numel) - from;
    if (n <= 0) continue;  // pos is in the gap after this tensor
    const int64_t local = from - e.start;
    const float step = *e.step;
    Update u{h.lr / (1.f - powf(h.beta1, step)), sqrtf(1.f - powf(h.beta2, step)), 1.f - h.lr * h.weight_decay, mult, h};
    T* p = static_cast<T*>(e.param) + local;
    const T* g = static_cast<const T*>(e.grad) + local;
    T* m = static_cast<T*>(e.exp_avg) + local;
    T* v = static_cast<T*>(e.exp_avg_sq) + local;
    // local is 0, or pos - start with both multiples of kAlign: the packs are aligned
    const int64_t packs = n / V;
    for (int64_t i = threadIdx.x; i < packs; i += kThreads) {
      P pp = reinterpret_cast<P*>(p)[i], mp = reinterpret_cast<P*>(m)[i], vp = reinterpret_cast<P*>(v)[i];
      const P gp = reinterpret_cast<const P*>(g)[i];
#pragma unroll
      for (int j = 0; j < V; ++j) {
        float pf = to_float(pp.v[j]), mf = to_float(mp.v[j]), vf = to_float(vp.v[j]);
        u.apply(pf, to_float(gp.v[j]), mf, vf);
        pp.v[j] = from_float<T>(pf);
        mp.v[j] = from_float<T>(mf);
        vp.v[j] = from_float<T>(vf);
      }
      reinterpret_cast<P*>(p)[i] = pp;
      reinterpret_cast<P*>(m)[i] = mp;
      reinterpret_cast<P*>(v)[i] = vp;
    }
    for (int64_t i = packs * V + threadIdx.x; i < n; i += kThreads) {
      float pf = to_float(p[i]), mf = to_float(m[i]), vf = to_float(v[i]);
      u.apply(pf, to_float(g[i]), mf, vf);
      p[i] = from_float<T>(pf);
      m[i] = from_float<T>(mf);
      v[i] = from_float<T>(vf);
    }
  }
}

// Each block: the sum of squares of its chunk of the concatenation, to partial[blockIdx.x].
template <typename T>
__global__ void __launch_bounds__(kThreads) sum_squares_kernel(const SpanTensor* table, int count, int64_t total,
                                                                float* partial) {
  constexpr int V = 16 / sizeof(T);
  using P = Pack<T, V>;
  const int64_t pos = int64_t(blockIdx.x) * kChunk;
  const int64_t end = min(pos + kChunk, total);
  float acc = 0.f;
  for (int t = first_at(table, count, pos); t < count && table[t].start < end; ++t) {
    const SpanTensor e = table[t];
    const int64_t from = max(pos, e.start), n = min(end, e.start + e.numel) - from;
    if (n <= 0) continue;
    const T* x = static_cast<const T*>(e.data) + (from - e.start);
    const int64_t packs = n / V;
    for (int64_t i = threadIdx.x; i < packs; i += kThreads) {
      const P xp = reinterpret_cast<const P*>(x)[i];
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const float f = to_float(xp.v[j]);
        acc += f * f;
      }
    }
    for (int64_t i = packs * V + threadIdx.x; i < n; i += kThreads) {
      const float f = to_float(x[i]);
      acc += f * f;
    }
  }
  // the block's sum: within each warp, then over the warps
  __shared__ float warp_sums[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float sum = 0.f;
    for (int w = 0; w < kThreads / 32; ++w) sum += warp_sums[w];
    partial[blockIdx.x] = sum;
  }
}

}  // namespace

int64_t sum_squares_blocks(int64_t total) { return (total + kChunk - 1) / kChunk; }

void sum_squares(const SpanTensor* table, int count, int64_t total, int dtype, float* partial, void* stream) {
  if (count == 0 || total == 0) return;
  const auto blocks = static_cast<unsigned>(sum_squares_blocks(total));
  auto s = static_cast<cudaStream_t>(stream);
  if (dtype == 1) sum_squares_kernel<__nv_bfloat16><<<blocks, kThreads, 0, s>>>(table, count, total, partial);
  else if (dtype == 2) sum_squares_kernel<__half><<<blocks, kThreads, 0, s>>>(table, count, total, partial);
  else sum_squares_kernel<float><<<blocks, kThreads, 0, s>>>(table, count, total, partial);
}

void adamw_step(const AdamWTensor* table, int count, int64_t total, int dtype, double lr, double beta1, double beta2,
                double weight_decay, double eps, const float* grad_multiplier, void* stream) {
  if (count == 0 || total == 0) return;
  const Hyper h{float(lr), float(beta1), float(beta2), float(weight_decay), float(eps)};
  const auto blocks = static_cast<unsigned>((total + kChunk - 1) / kChunk);
  auto s = static_cast<cudaStream_t>(stream);
  if (dtype == 1) adamw_kernel<__nv_bfloat16><<<blocks, kThreads, 0, s>>>(table, count, total, h, grad_multiplier);
  else if (dtype == 2) adamw_kernel<__half><<<blocks, kThreads, 0, s>>>(table, count, total, h, grad_multiplier);
  else adamw_kernel<float><<<blocks, kThreads, 0, s>>>(table, count, total, h, grad_multiplier);
}

}  // namespace ember::kernels
