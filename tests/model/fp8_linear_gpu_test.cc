// The block-wise FP8 path on CUDA against the CPU reference: both quantisation kernels
// (kernels/fp8_quant.h) give the reference's bytes and scales exactly, the gated MLP's fused
// quantisations give them up to rounding flips of values an ulp apart (tanhf; the two kernels
// agree with each other), and the linear
// layer's and the MLP's forward passes and gradients through at::_scaled_mm match the CPU
// emulation of the same products. Skips where there is no GPU, no sm_90 or no CUDA kernels.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <cstdio>
#include <string>
#include <vector>

#include "ember/model/fp8_linear.h"
#include "ember/model/fp8_mlp.h"
#include "fp8_emulation.h"

namespace ember::model {
namespace {

#define SKIP_WITHOUT_FP8()                                                                            \
  do {                                                                                               \
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";      \
    if (auto why = fp8_unsupported_reason(at::Device(at::kCUDA, 0)); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

bool same_bytes(const at::Tensor& gpu, const at::Tensor& cpu) {
  return at::equal(gpu.cpu().view(at::kByte), cpu.view(at::kByte));
}

using testing::code_mismatch;
using testing::rel;

// Runs body once with each quantisation kernel (kernels/fp8_quant.h), the default restored after.
template <typename Body>
void with_each_kernel(const Body& body) {
  for (const char* kernel : {"staged", "vector"}) {
    set_fp8_quant_kernel(kernel, "test");
    body(std::string(kernel));
  }
  set_fp8_quant_kernel("vector", "test");
}

TEST(Fp8Cuda, QuantisationKernelGivesTheReferencesBytesAndScales) {
  SKIP_WITHOUT_FP8();
  at::manual_seed(11);
  for (auto dtype : {at::kFloat, at::kBFloat16, at::kHalf}) {
    // 300 rows (padded to 384), tiles of very different magnitudes, a zero tile
    auto x = (at::randn({300, 640}) * at::rand({300, 1}) * at::rand({1, 640}) * 50).to(dtype);
    x.narrow(0, 0, 128).narrow(1, 0, 128).zero_();
    auto w = (at::randn({384, 640}) * at::rand({384, 1}) * 3).to(dtype);
    auto c = fp8_quantize_rows(x, true), cn = fp8_quantize_rows(x, false), cw = fp8_quantize_blocks(w);
    with_each_kernel([&](const std::string& kernel) {
      auto g = fp8_quantize_rows(x.cuda(), true), gn = fp8_quantize_rows(x.cuda(), false);
      EXPECT_TRUE(same_bytes(g.q, c.q)) << dtype << " " << kernel;
      EXPECT_TRUE(same_bytes(g.qt, c.qt)) << dtype << " " << kernel;
      EXPECT_TRUE(at::equal(g.scale.cpu(), c.scale)) << dtype << " " << kernel;
      EXPECT_TRUE(at::equal(g.scale_t.cpu(), c.scale_t)) << dtype << " " << kernel;
      EXPECT_TRUE(same_bytes(gn.q, cn.q)) << dtype << " " << kernel;  // without the transposed copy
      EXPECT_TRUE(at::equal(gn.scale.cpu(), cn.scale)) << dtype << " " << kernel;
      auto gw = fp8_quantize_blocks(w.cuda());
      EXPECT_TRUE(same_bytes(gw.q, cw.q)) << dtype << " " << kernel;
      EXPECT_TRUE(same_bytes(gw.qt, cw.qt)) << dtype << " " << kernel;
      EXPECT_TRUE(at::equal(gw.scale.cpu(), cw.scale)) << dtype << " " << kernel;
    });
  }
}

TEST(Fp8Cuda, LinearForwardAndGradientsMatchTheCpuEmulation) {
  SKIP_WITHOUT_FP8();
  at::manual_seed(12);
  // 1000 tokens (padded to 1024), bf16 activations, float32 master weights
  auto x = at::randn({1000, 2048}).to(at::kBFloat16), w = at::randn({1024, 2048}) * 0.02;
  auto dy = at::randn({1000, 1024}).to(at::kBFloat16);
  auto run = [&](at::Device d) {
    auto xd = x.to(d).requires_grad_(), wd = w.to(d).requires_grad_();
    Fp8WeightCache cache;
    auto y = fp8_linear(xd, wd, {}, cache);
    y.backward(dy.to(d));
    return std::tuple{y.detach().cpu(), xd.grad().cpu(), wd.grad().cpu()};
  };
  auto [y, dx, dw] = run(at::Device(at::kCUDA, 0));
  auto [ye, dxe, dwe] = run(at::kCPU);
  EXPECT_EQ(y.scalar_type(), at::kBFloat16);
  EXPECT_EQ(dw.scalar_type(), at::kFloat);
  EXPECT_LT(rel(y, ye), 5e-3);    // bf16 outputs: their rounding
  EXPECT_LT(rel(dx, dxe), 5e-3);
  // float32 output: the sums' order and Hopper's FP8 MMA accumulator (fewer bits than float32
  // between cuBLASLt's promotions) differ; 1.26e-4 was seen (H200, 2026-12-01)
  EXPECT_LT(rel(dw, dwe), 1e-3);
  auto xf = x.to(at::kFloat), dyf = dy.to(at::kFloat);
  EXPECT_LT(rel(y, at::mm(xf, w.t())), 0.06);
  EXPECT_LT(rel(dw, at::mm(dyf.t(), xf)), 0.06);
}

TEST(Fp8Cuda, FusedGeluQuantisationsMatchTheReference) {
  SKIP_WITHOUT_FP8();
  at::manual_seed(13);
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    // 1000 rows (padded to 1024), hidden 1024; a zero tile
    auto gu = (at::randn({1000, 2048}) * 2).to(dtype), dh = at::randn({1000, 1024}).to(dtype);
    gu.narrow(0, 0, 128).narrow(1, 0, 128).zero_();
    auto c = fp8_quantize_gelu_mul(gu), cd = fp8_quantize_gelu_mul_backward(dh, gu);
    std::vector<Fp8Tensor> first;  // the first kernel's outputs
    with_each_kernel([&](const std::string& kernel) {
      auto g = fp8_quantize_gelu_mul(gu.cuda());
      auto gd = fp8_quantize_gelu_mul_backward(dh.cuda(), gu.cuda());
      for (auto [a, b] : {std::pair{&g, &c}, std::pair{&gd, &cd}}) {
        for (auto [x, y] : {std::pair{a->q, b->q}, std::pair{a->qt, b->qt}}) {
          auto [fraction, far] = code_mismatch(x, y);
          EXPECT_LT(fraction, 1e-3) << dtype << " " << kernel;  // tanhf and std::tanh differ by an ulp at times
          EXPECT_FALSE(far) << dtype << " " << kernel;
        }
        EXPECT_LT(rel(a->scale, b->scale), 1e-6) << dtype << " " << kernel;
        EXPECT_LT(rel(a->scale_t, b->scale_t), 1e-6) << dtype << " " << kernel;
      }
      if (first.empty()) {
        first = {g, gd};
        return;
      }
      // the same device function computes the values in both kernels: they agree (up to the
      // compiler contracting a product into an FMA differently: a few flips in 2 million at most)
      for (size_t i = 0; i < 2; ++i) {
        const Fp8Tensor& a = i ? gd : g;
        for (auto [x, y] : {std::pair{a.q, first[i].q}, std::pair{a.qt, first[i].qt}}) {
          auto [fraction, far] = code_mismatch(x, y);
          std::printf("vector against staged, %s output %zu: %.3g of the codes differ\n", c10::toString(dtype), i, fraction);
          EXPECT_LT(fraction, 1e-5) << dtype << " output " << i;
          EXPECT_FALSE(far) << dtype << " output " << i;
        }
        EXPECT_LT(rel(a.scale, first[i].scale), 1e-7) << dtype << " output " << i;
        EXPECT_LT(rel(a.scale_t, first[i].scale_t), 1e-7) << dtype << " output " << i;
      }
    });
  }
}

TEST(Fp8Cuda, GatedMlpForwardAndGradientsMatchTheCpuEmulation) {
  SKIP_WITHOUT_FP8();
  at::manual_seed(14);
  // 1000 tokens (padded to 1024), width 1024, hidden 2048; bf16 activations, float32 weights
  auto x = at::randn({1000, 1024}).to(at::kBFloat16), dy = at::randn({1000, 1024}).to(at::kBFloat16);
  auto gate = at::randn({2048, 1024}) * 0.03, up = at::randn({2048, 1024}) * 0.03, down = at::randn({1024, 2048}) * 0.02;
  auto run = [&](at::Device d) {
    auto xd = x.to(d).requires_grad_();
    auto gd = gate.to(d).requires_grad_(), ud = up.to(d).requires_grad_(), dd = down.to(d).requires_grad_();
    Fp8MlpCache cache;
    auto y = fp8_gated_mlp(xd, gd, ud, dd, cache);
    y.backward(dy.to(d));
    return std::vector<at::Tensor>{y.detach().cpu(), xd.grad().cpu(), gd.grad().cpu(), ud.grad().cpu(), dd.grad().cpu()};
  };
  auto got = run(at::Device(at::kCUDA, 0)), want = run(at::kCPU);
  EXPECT_EQ(got[0].scalar_type(), at::kBFloat16);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LT(rel(got[i], want[i]), 1e-2) << "output " << i;  // y, dx, dgate, dup, ddown
  // and within e4m3's few percent of the float32 MLP
  auto xf = x.to(at::kFloat);
  auto yf = at::linear(at::gelu(at::linear(xf, gate), "tanh") * at::linear(xf, up), down);
  EXPECT_LT(rel(got[0], yf), 0.1);
}

}  // namespace
}  // namespace ember::model
