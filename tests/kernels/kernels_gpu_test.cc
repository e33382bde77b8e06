// ember's CUDA kernels (kernels/fused_kernels.h, adamw_kernel.h) against their CPU references
// (kernels/reference.h) on random inputs, in float; skips where there is no GPU or the kernels
// were not built.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "ember/kernels/reference.h"
#ifdef EMBER_CUDA_KERNELS
#include "ember/kernels/adamw_kernel.h"
#include "ember/kernels/fused_kernels.h"
#endif

namespace ember::kernels {
namespace {

#define SKIP_WITHOUT_KERNELS()                                                                              \
  do {                                                                                                     \
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";            \
  } while (0)

double rel_err(const at::Tensor& got, const at::Tensor& want) {
  return (got.cpu() - want).abs().max().item<double>() / std::max(1e-12, want.abs().max().item<double>());
}

#ifdef EMBER_CUDA_KERNELS
TEST(KernelsCuda, GeluTanhMulAndRopeMatchTheirReferences) {
  SKIP_WITHOUT_KERNELS();
  at::manual_seed(11);
  const int64_t n = 100003;
  auto gate = at::randn({n}) * 3, up = at::randn({n}), d_out = at::randn({n});
  auto want = at::empty({n}), want_dg = at::empty({n}), want_du = at::empty({n});
  ref::gelu_tanh_mul_forward(gate.data_ptr<float>(), up.data_ptr<float>(), want.data_ptr<float>(), n);
  ref::gelu_tanh_mul_backward(d_out.data_ptr<float>(), gate.data_ptr<float>(), up.data_ptr<float>(), want_dg.data_ptr<float>(),
                              want_du.data_ptr<float>(), n);
  auto g = gate.cuda(), u = up.cuda(), d = d_out.cuda();
  auto out = at::empty_like(g), dg = at::empty_like(g), du = at::empty_like(g);
  gelu_tanh_mul_forward(g.data_ptr(), u.data_ptr(), out.data_ptr(), n, 0, nullptr);
  gelu_tanh_mul_backward(d.data_ptr(), g.data_ptr(), u.data_ptr(), dg.data_ptr(), du.data_ptr(), n, 0, nullptr);
  torch::cuda::synchronize();
  EXPECT_LT(rel_err(out, want), 1e-5);
  EXPECT_LT(rel_err(dg, want_dg), 1e-5);
  EXPECT_LT(rel_err(du, want_du), 1e-5);

  const int64_t tokens = 129, heads = 4, half = 32;
  auto x = at::randn({tokens, heads, 2 * half});
  auto angle = at::rand({tokens, 1, half}) * 6.28;
  auto cos = at::cat({angle.cos(), angle.cos()}, -1).contiguous(), sin = at::cat({-angle.sin(), angle.sin()}, -1).contiguous();
  auto want_rope = at::empty_like(x);
  ref::rope_rotate(x.data_ptr<float>(), heads * 2 * half, cos.data_ptr<float>(), sin.data_ptr<float>(), want_rope.data_ptr<float>(),
                   tokens, heads, half, false);
  auto xc = x.cuda(), cc = cos.cuda(), sc = sin.cuda(), rope = at::empty_like(xc);
  rope_rotate(xc.data_ptr(), heads * 2 * half, cc.data_ptr<float>(), sc.data_ptr<float>(), rope.data_ptr(), tokens, heads, half, false,
              0, nullptr);
  torch::cuda::synchronize();
  EXPECT_LT(rel_err(rope, want_rope), 1e-5);
}

TEST(KernelsCuda, AdamWAndSumSquaresMatchTheirReferences) {
  SKIP_WITHOUT_KERNELS();
  at::manual_seed(12);
  const int64_t n = 40000;
  auto p = at::randn({n}), g = at::randn({n}), m = at::randn({n}) * 0.1, v = at::rand({n}) * 0.01;
  auto pc = p.cuda(), gc = g.cuda(), mc = m.cuda(), vc = v.cuda(), step = at::full({1}, 3.f).cuda();
  auto mult = at::full({1}, 0.5f).cuda();
  ref::adamw_step(p.data_ptr<float>(), g.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(), n, 3, 1e-3, 0.9, 0.95, 0.01, 1e-8,
                  0.5f);
  AdamWTensor entry{pc.data_ptr(), gc.data_ptr(), mc.data_ptr(), vc.data_ptr(), step.data_ptr<float>(), 0, n};
  auto table = at::from_blob(&entry, {int64_t(sizeof entry)}, at::kByte).cuda();
  adamw_step(static_cast<const AdamWTensor*>(table.data_ptr()), 1, n, 0, 1e-3, 0.9, 0.95, 0.01, 1e-8, mult.data_ptr<float>(), nullptr);
  torch::cuda::synchronize();
  EXPECT_LT(rel_err(pc, p), 1e-5);
  EXPECT_LT(rel_err(mc, m), 1e-5);
  EXPECT_LT(rel_err(vc, v), 1e-5);

  SpanTensor span{gc.data_ptr(), 0, n};
  auto stable = at::from_blob(&span, {int64_t(sizeof span)}, at::kByte).cuda();
  auto partial = at::empty({sum_squares_blocks(n)}, at::TensorOptions().device(at::kCUDA).dtype(at::kFloat));
  sum_squares(static_cast<const SpanTensor*>(stable.data_ptr()), 1, n, 0, partial.data_ptr<float>(), nullptr);
  const double want = ref::sum_squares(g.data_ptr<float>(), n);
  EXPECT_NEAR(partial.sum().item<double>(), want, 1e-5 * want);
}
#else
TEST(KernelsCuda, NotBuilt) {
  GTEST_SKIP() << "ember was built without its CUDA kernels (no nvcc, or -DEMBER_CUDA_KERNELS=OFF)";
}
#endif

}  // namespace
}  // namespace ember::kernels
