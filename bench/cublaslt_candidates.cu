// Do cuBLASLt's other candidate kernels beat its first choice at pi05's matrix sizes? For each
// product of a linear layer (forward Y = X W^T, input gradient dX = dY W, weight gradient
// dW = dY^T X; bf16, float accumulation) at the packed (varlen) and padded token counts, times
// cublasGemmEx (what PyTorch's at::mm calls), cuBLASLt's first heuristic choice, and each of its
// top candidates, and prints one JSON line per product. A measurement tool, not part of ember:
// the build makes it (bin/cublaslt_candidates) where nvcc and cuBLASLt are found, or
//
//   nvcc -O2 -std=c++17 -arch=sm_90 bench/cublaslt_candidates.cu -lcublasLt -lcublas -o /tmp/clt
//   /tmp/clt [CANDIDATES [ZERO_FRACTION [TOKENS...]]]
//
// CANDIDATES: how many heuristic results to time (default 16). ZERO_FRACTION (default 0): that
// share of the token-side operands' rows (X, dY) made padding: zeros when positive, the same
// random row repeated when negative (as the padded layout's pad tokens share one embedding):
// does a power-limited GPU run products of such data faster? TOKENS: the language model's token counts (default 8963 15488; the vision tower's are
// 8192 and 12288 whatever they are).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CHECK_CUDA(x)                                                                       \
  do {                                                                                      \
    cudaError_t e = (x);                                                                    \
    if (e != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e));       \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)
#define CHECK_BLAS(x)                                                                       \
  do {                                                                                      \
    int st_ = int(x);                                                                       \
    if (st_ != 0) {                                                                         \
      std::fprintf(stderr, "%s:%d: cuBLAS status %d\n", __FILE__, __LINE__, st_);          \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

namespace {

constexpr size_t kWorkspace = 32u << 20;

// a column-major product C[m, n] = op(A) op(B), as cuBLAS sees a row-major PyTorch product
struct Gemm {
  std::string name;
  cublasOperation_t ta, tb;
  int64_t m, n, k, lda, ldb, ldc;
};

// the three products of a linear layer with `tokens` rows, `in` inputs and `out` outputs
std::vector<Gemm> linear_products(const std::string& layer, int64_t tokens, int64_t in, int64_t out) {
  const std::string t = std::to_string(tokens);
  return {
      // Y[M,N] = X[M,K] W[N,K]^T: C = W^T(col K x N, transposed) X(col K x M)
      {layer + " forward M=" + t, CUBLAS_OP_T, CUBLAS_OP_N, out, tokens, in, in, in, out},
      // dX[M,K] = dY[M,N] W[N,K]: C = W(col K x N) dY(col N x M)
      {layer + " grad_input M=" + t, CUBLAS_OP_N, CUBLAS_OP_N, in, tokens, out, in, out, in},
      // dW[N,K] = dY[M,N]^T X[M,K]: C = X(col K x M) dY^T(col N x M, transposed)
      {layer + " grad_weight M=" + t, CUBLAS_OP_N, CUBLAS_OP_T, in, out, tokens, in, out, in},
  };
}

template <typename F>
float time_ms(cudaStream_t s, int reps, const F& run) {
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) run();
  CHECK_CUDA(cudaEventRecord(a, s));
  for (int i = 0; i < reps; ++i) run();
  CHECK_CUDA(cudaEventRecord(b, s));
  CHECK_CUDA(cudaEventSynchronize(b));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
  CHECK_CUDA(cudaEventDestroy(a));
  CHECK_CUDA(cudaEventDestroy(b));
  return ms / reps;
}

// random values in [-0.05, 0.05]; from element `pad_from` on (whole columns of `rows`), padding:
// zeros, or (same_pad) every padding column the same random values
__global__ void fill(__nv_bfloat16* p, int64_t n, int64_t pad_from, int64_t rows, bool same_pad, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    if (i >= pad_from && !same_pad) {
      p[i] = __float2bfloat16(0.f);
      continue;
    }
    const int64_t at = i >= pad_from ? n + i % rows : i;
    uint32_t x = uint32_t(at) * 2654435761u ^ seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    p[i] = __float2bfloat16((float(x & 0xffff) / 65535.f - 0.5f) * 0.1f);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int want = argc > 1 ? std::atoi(argv[1]) : 16;
  const double pad_arg = argc > 2 ? std::atof(argv[2]) : 0.0;
  const double zero_fraction = pad_arg < 0 ? -pad_arg : pad_arg;
  const bool same_pad = pad_arg < 0;
  std::vector<int64_t> lm_tokens;
  for (int i = 3; i < argc; ++i) lm_tokens.push_back(std::atoll(argv[i]));
  if (lm_tokens.empty()) lm_tokens = {8963, 15488};
  std::vector<Gemm> gemms;
  // libero at batch 16: varlen packs ~8,960 prefix tokens (32 images: 8,192 ViT tokens);
  // padded runs 15,488 (48 images: 12,288)
  for (int64_t t : lm_tokens) {
    for (auto& g : linear_products("lm.qkv", t, 2048, 2560)) gemms.push_back(g);
    for (auto& g : linear_products("lm.o", t, 2048, 2048)) gemms.push_back(g);
    for (auto& g : linear_products("lm.gate", t, 2048, 16384)) gemms.push_back(g);  // and lm.up
    for (auto& g : linear_products("lm.down", t, 16384, 2048)) gemms.push_back(g);
  }
  for (int64_t t : {8192, 12288}) {
    for (auto& g : linear_products("vit.qkv", t, 1152, 3456)) gemms.push_back(g);
    for (auto& g : linear_products("vit.o", t, 1152, 1152)) gemms.push_back(g);
    for (auto& g : linear_products("vit.fc1", t, 1152, 4304)) gemms.push_back(g);
    for (auto& g : linear_products("vit.fc2", t, 4304, 1152)) gemms.push_back(g);
  }
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreate(&s));
  cublasHandle_t blas;
  CHECK_BLAS(cublasCreate(&blas));
  CHECK_BLAS(cublasSetStream(blas, s));
  cublasLtHandle_t lt;
  CHECK_BLAS(cublasLtCreate(&lt));
  void* workspace;
  CHECK_CUDA(cudaMalloc(&workspace, kWorkspace));
  CHECK_BLAS(cublasSetWorkspace(blas, workspace, kWorkspace));
  const float one = 1.f, zero = 0.f;
  for (const Gemm& g : gemms) {
    const int64_t a_rows = g.ta == CUBLAS_OP_N ? g.m : g.k, a_cols = g.ta == CUBLAS_OP_N ? g.k : g.m;
    const int64_t b_rows = g.tb == CUBLAS_OP_N ? g.k : g.n, b_cols = g.tb == CUBLAS_OP_N ? g.n : g.k;
    __nv_bfloat16 *A, *B, *C;
    CHECK_CUDA(cudaMalloc(&A, a_rows * a_cols * 2));
    CHECK_CUDA(cudaMalloc(&B, b_rows * b_cols * 2));
    CHECK_CUDA(cudaMalloc(&C, g.m * g.n * 2));
    // the token-side operands (column-major, tokens along the columns): B in the forward and
    // the input gradient, both in the weight gradient; their last columns are the padding
    const bool a_tokens = g.name.find("grad_weight") != std::string::npos;
    const auto zero_from = [&](int64_t rows, int64_t cols, bool tokens) {
      return tokens ? rows * int64_t(double(cols) * (1.0 - zero_fraction)) : rows * cols;
    };
    fill<<<1024, 256, 0, s>>>(A, a_rows * a_cols, zero_from(a_rows, a_cols, a_tokens), a_rows, same_pad, 1);
    fill<<<1024, 256, 0, s>>>(B, b_rows * b_cols, zero_from(b_rows, b_cols, true), b_rows, same_pad, 2);
    const double flop = 2.0 * g.m * g.n * g.k;
    const int reps = flop > 2e12 ? 10 : 30;
    const float gemm_ex = time_ms(s, reps, [&] {
      CHECK_BLAS(cublasGemmEx(blas, g.ta, g.tb, g.m, g.n, g.k, &one, A, CUDA_R_16BF, g.lda, B, CUDA_R_16BF, g.ldb, &zero,
                              C, CUDA_R_16BF, g.ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
    cublasLtMatmulDesc_t desc;
    CHECK_BLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &g.ta, sizeof(g.ta)));
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &g.tb, sizeof(g.tb)));
    cublasLtMatrixLayout_t la, lb, lc;
    CHECK_BLAS(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, a_rows, a_cols, g.lda));
    CHECK_BLAS(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, b_rows, b_cols, g.ldb));
    CHECK_BLAS(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, g.m, g.n, g.ldc));
    cublasLtMatmulPreference_t pref;
    CHECK_BLAS(cublasLtMatmulPreferenceCreate(&pref));
    CHECK_BLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWorkspace,
                                                    sizeof(kWorkspace)));
    std::vector<cublasLtMatmulHeuristicResult_t> found(want);
    int n_found = 0;
    CHECK_BLAS(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, want, found.data(), &n_found));
    float first = 0, best = 1e30f;
    int best_i = -1;
    std::string all;
    for (int i = 0; i < n_found; ++i) {
      if (found[i].state != CUBLAS_STATUS_SUCCESS) continue;
      const float ms = time_ms(s, reps, [&] {
        CHECK_BLAS(cublasLtMatmul(lt, desc, &one, A, la, B, lb, &zero, C, lc, C, lc, &found[i].algo, workspace,
                                  kWorkspace, s));
      });
      if (i == 0) first = ms;
      if (ms < best) best = ms, best_i = i;
      all += (all.empty() ? "" : ",") + std::to_string(flop / ms / 1e9);
    }
    std::printf("{\"product\":\"%s\",\"pad_fraction\":%.2f,\"pad\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"gemm_ex_tflops\":%.1f,\"lt_first_tflops\":%.1f,"
                "\"lt_best_tflops\":%.1f,\"best_candidate\":%d,\"candidates\":%d,\"all_tflops\":[%s]}\n",
                g.name.c_str(), zero_fraction, same_pad ? "repeated" : "zeros", (long long)g.m, (long long)g.n, (long long)g.k, flop / gemm_ex / 1e9, flop / first / 1e9,
                flop / best / 1e9, best_i, n_found, all.c_str());
    std::fflush(stdout);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(desc);
    CHECK_CUDA(cudaFree(A));
    CHECK_CUDA(cudaFree(B));
    CHECK_CUDA(cudaFree(C));
  }
  return 0;
}
