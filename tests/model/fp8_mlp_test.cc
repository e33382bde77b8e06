// The FP8 gated MLP on the CPU (model/fp8_mlp.h): its fused quantisations are those of
// gelu_tanh(g) * u and of its gradients computed by ATen's gelu; its output and all four
// gradients are the products of operands quantised as each product takes them (built here
// independently, from ATen's gelu and the quantised transposes); gate and up are quantised as
// one stacked weight, once per step; GatedMlp takes the path where all three layers fit.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/autocast_mode.h>

#include "ember/model/fp8_mlp.h"
#include "ember/model/layers.h"
#include "fp8_emulation.h"

namespace ember::model {
namespace {

using testing::code_mismatch;
using testing::over_tokens;
using testing::rel;
using testing::via_blocks;
using testing::via_rows;

// the gradients of gelu_tanh(g) * u by ATen's autograd: [dg | du]
at::Tensor gelu_mul_grads(const at::Tensor& dh, const at::Tensor& g, const at::Tensor& u) {
  auto gv = g.detach().requires_grad_(), uv = u.detach().requires_grad_();
  auto grads = torch::autograd::grad({at::gelu(gv, "tanh") * uv}, {gv, uv}, {dh});
  return at::cat({grads[0], grads[1]}, 1);
}

TEST(Fp8Mlp, FusedQuantisationsAreThoseOfAtensGeluProducts) {
  at::manual_seed(4);
  auto gu = at::randn({300, 512}) * 2;  // hidden 256, 300 rows (padded to 384)
  gu.narrow(0, 0, 128).narrow(1, 0, 128).zero_();
  auto dh = at::randn({300, 256});
  auto g = gu.narrow(1, 0, 256), u = gu.narrow(1, 256, 256);
  auto got = fp8_quantize_gelu_mul(gu), want = fp8_quantize_rows(at::gelu(g, "tanh") * u, true);
  auto got_d = fp8_quantize_gelu_mul_backward(dh, gu), want_d = fp8_quantize_rows(gelu_mul_grads(dh, g, u), true);
  for (auto [a, b] : {std::pair{&got, &want}, std::pair{&got_d, &want_d}}) {
    ASSERT_EQ(a->q.sizes(), b->q.sizes());
    ASSERT_EQ(a->qt.sizes(), b->qt.sizes());
    for (auto [x, y] : {std::pair{a->q, b->q}, std::pair{a->qt, b->qt}}) {
      auto [fraction, far] = code_mismatch(x, y);
      EXPECT_LT(fraction, 1e-3);  // ATen's vectorised tanh is within an ulp of std::tanh
      EXPECT_FALSE(far);
    }
    EXPECT_LT(rel(a->scale, b->scale), 1e-6);
    EXPECT_LT(rel(a->scale_t, b->scale_t), 1e-6);
  }
}

TEST(Fp8Mlp, ForwardAndGradientsAreTheProductsOfTheQuantisedOperands) {
  at::manual_seed(5);
  const int64_t rows = 200, width = 256, hidden = 512;  // 200 tokens: padded to 256 inside
  auto x = at::randn({2, 100, width}).requires_grad_();
  auto gate = (at::randn({hidden, width}) * 0.1).requires_grad_(), up = (at::randn({hidden, width}) * 0.1).requires_grad_();
  auto down = (at::randn({width, hidden}) * 0.05).requires_grad_();
  auto dy = at::randn({2, 100, width});
  Fp8MlpCache cache;
  auto y = fp8_gated_mlp(x, gate, up, down, cache);
  ASSERT_EQ(y.sizes(), dy.sizes());
  y.backward(dy);
  // the emulation: gu = x [gate; up]^T, h = gelu(g) u, y = h down^T, each operand quantised once
  auto x2 = x.detach().reshape({rows, width}), dy2 = dy.reshape({rows, width});
  auto wgu = at::cat({gate.detach(), up.detach()}), wd = down.detach();
  auto gu = at::mm(via_rows(x2), via_blocks(wgu).t());
  auto g = gu.narrow(1, 0, hidden), u = gu.narrow(1, hidden, hidden);
  auto h = at::gelu(g, "tanh") * u;
  EXPECT_LT(rel(y.reshape({rows, width}), at::mm(via_rows(h), via_blocks(wd).t())), 1e-4);
  // dh = dy down; [dg | du] from ATen's autograd of gelu(g) u; dx = [dg | du] [gate; up]
  auto dh = at::mm(via_rows(dy2), via_blocks(wd.t().contiguous()).t());
  auto dgu = gelu_mul_grads(dh, g, u);
  EXPECT_LT(rel(x.grad().reshape({rows, width}), at::mm(via_rows(dgu), via_blocks(wgu.t().contiguous()).t())), 1e-4);
  // weight gradients over the tokens, padded to 256
  auto dwgu = over_tokens(dgu, x2, 256);
  EXPECT_LT(rel(gate.grad(), dwgu.narrow(0, 0, hidden)), 1e-4);
  EXPECT_LT(rel(up.grad(), dwgu.narrow(0, hidden, hidden)), 1e-4);
  EXPECT_LT(rel(down.grad(), over_tokens(dy2, h, 256)), 1e-4);
  // and each is within e4m3's few percent of the float32 MLP, not exact
  auto xr = x.detach().clone().requires_grad_();
  auto gr = gate.detach().clone().requires_grad_(), ur = up.detach().clone().requires_grad_();
  auto dr = down.detach().clone().requires_grad_();
  auto yr = at::linear(at::gelu(at::linear(xr, gr), "tanh") * at::linear(xr, ur), dr);
  yr.backward(dy);
  for (auto [got, want] : {std::pair{y, yr}, std::pair{x.grad(), xr.grad()}, std::pair{gate.grad(), gr.grad()},
                           std::pair{up.grad(), ur.grad()}, std::pair{down.grad(), dr.grad()}}) {
    EXPECT_LT(rel(got, want), 0.1);
    EXPECT_GT(rel(got, want), 0.005);
  }
}

TEST(Fp8Mlp, AutocastGivesBf16OutputAndGradientsInTheInputsDtypes) {
  at::manual_seed(6);
  auto x = at::randn({130, 256}).requires_grad_();
  auto gate = (at::randn({256, 256}) * 0.1).requires_grad_(), up = (at::randn({256, 256}) * 0.1).requires_grad_();
  auto down = (at::randn({256, 256}) * 0.1).requires_grad_();
  Fp8MlpCache cache;
  at::autocast::set_autocast_enabled(at::kCPU, true);
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  auto y = fp8_gated_mlp(x, gate, up, down, cache);
  at::autocast::set_autocast_enabled(at::kCPU, false);
  EXPECT_EQ(y.scalar_type(), at::kBFloat16);
  y.to(at::kFloat).sum().backward();
  for (const auto* t : {&x, &gate, &up, &down}) {
    ASSERT_TRUE(t->grad().defined());
    EXPECT_EQ(t->grad().scalar_type(), at::kFloat);
    EXPECT_GT(t->grad().abs().sum().item<double>(), 0);
  }
}

TEST(Fp8Mlp, GateAndUpAreQuantisedAsOneStackedWeightOncePerStep) {
  at::manual_seed(7);
  auto gate = at::randn({256, 128}), up = at::randn({384, 128}) * 3;
  Fp8WeightCache cache;
  const auto& w = cache.get({gate, up});
  auto want = fp8_quantize_blocks(at::cat({gate, up}));
  EXPECT_TRUE(at::equal(w.q.view(at::kByte), want.q.view(at::kByte)));
  EXPECT_TRUE(at::equal(w.scale, want.scale));
  cache.get({gate, up});
  EXPECT_EQ(cache.refreshes(), 1);
  up.mul_(2);  // one of the two changes: both are quantised again
  cache.get({gate, up});
  EXPECT_EQ(cache.refreshes(), 2);
  fp8_weights_updated();
  cache.get({gate, up});
  EXPECT_EQ(cache.refreshes(), 3);
}

TEST(Fp8Mlp, GatedMlpTakesTheFusedPathWhereAllThreeLayersFit) {
  at::manual_seed(8);
  GatedMlp fits(512, 1024, LinearOptions{.fp8 = true}), bf16(512, 1024), small(256, 512, LinearOptions{.fp8 = true});
  ASSERT_TRUE(fits->fp8);
  EXPECT_FALSE(bf16->fp8);
  EXPECT_FALSE(small->fp8);  // 256 wide: fp8_fits refuses it
  auto x = at::randn({40, 512});
  Fp8MlpCache cache;
  auto want = fp8_gated_mlp(x, fits->gate->weight, fits->up->weight, fits->down->weight, cache);
  EXPECT_TRUE(at::equal(fits->forward(x), want));
  at::NoGradGuard no_grad;  // inference (sample_actions) skips the autograd function: the same output
  EXPECT_TRUE(at::equal(fits->forward(x), want));
}

}  // namespace
}  // namespace ember::model
