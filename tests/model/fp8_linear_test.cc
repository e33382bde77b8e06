// The block-wise FP8 linear layer on the CPU (model/fp8_linear.h): its forward pass and both
// gradients are the products of operands quantised in the orientation each product needs (built
// here independently, from the quantised transposes), close to the float32 products; the weight
// cache refreshes once per generation; sizes the tiles cannot cover are refused.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/autocast_mode.h>

#include "ember/core/error.h"
#include "ember/model/fp8_linear.h"
#include "fp8_emulation.h"

namespace ember::model {
namespace {

using testing::over_tokens;
using testing::rel;
using testing::via_blocks;
using testing::via_rows;

TEST(Fp8Linear, ForwardAndGradientsAreTheProductsOfTheQuantisedOperands) {
  at::manual_seed(1);
  auto x = at::randn({2, 100, 512}).requires_grad_();  // 200 tokens: padded to 256 inside
  auto w = (at::randn({1024, 512}) * 0.05).requires_grad_();
  auto dy = at::randn({2, 100, 1024});
  Fp8WeightCache cache;
  auto y = fp8_linear(x, w, {}, cache);
  ASSERT_EQ(y.sizes(), dy.sizes());
  y.backward(dy);
  auto x2 = x.detach().reshape({200, 512}), dy2 = dy.reshape({200, 1024}), wd = w.detach();
  // y = x W^T: x per 1x128 tile, W per 128x128 block
  EXPECT_LT(rel(y.reshape({200, 1024}), at::mm(via_rows(x2), via_blocks(wd).t())), 1e-5);
  // dx = dy W: dy per 1x128 tile, W^T per 128x128 block
  EXPECT_LT(rel(x.grad().reshape({200, 512}), at::mm(via_rows(dy2), via_blocks(wd.t().contiguous()).t())), 1e-5);
  // dW = dy^T x: both transposed, per 1x128 tile along the tokens (padded to 256 with zeros)
  EXPECT_LT(rel(w.grad(), over_tokens(dy2, x2, 256)), 1e-5);
  // and each is a few percent from the float32 product (e4m3: 3 mantissa bits), not exact
  for (auto [got, want] : {std::pair{y.reshape({200, 1024}), at::mm(x2, wd.t())}, std::pair{x.grad().reshape({200, 512}), at::mm(dy2, wd)},
                           std::pair{w.grad(), at::mm(dy2.t(), x2)}}) {
    EXPECT_LT(rel(got, want), 0.06);
    EXPECT_GT(rel(got, want), 0.005);
  }
}

TEST(Fp8Linear, AutocastGivesBf16OutputsAndGradientsInTheInputsDtypes) {
  at::manual_seed(2);
  auto x = at::randn({130, 512}).requires_grad_();
  auto w = (at::randn({512, 512}) * 0.05).requires_grad_();
  auto b = at::zeros({512}).requires_grad_();
  Fp8WeightCache cache;
  at::autocast::set_autocast_enabled(at::kCPU, true);
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  auto y = fp8_linear(x, w, b, cache);
  at::autocast::set_autocast_enabled(at::kCPU, false);
  EXPECT_EQ(y.scalar_type(), at::kBFloat16);
  y.sum().backward();
  EXPECT_EQ(x.grad().scalar_type(), at::kFloat);
  EXPECT_EQ(w.grad().scalar_type(), at::kFloat);
  EXPECT_TRUE(at::allclose(b.grad(), at::full({512}, 130.f)));
}

TEST(Fp8Linear, WeightIsRequantisedOncePerGenerationOrWhenItChanges) {
  at::manual_seed(3);
  auto x = at::randn({64, 512});
  auto w = at::randn({512, 512}) * 0.05;
  Fp8WeightCache cache;
  auto y1 = fp8_linear(x, w, {}, cache);
  fp8_linear(x, w, {}, cache);  // a second micro-batch: the same quantised weight
  EXPECT_EQ(cache.refreshes(), 1);
  fp8_weights_updated();        // an optimizer step
  fp8_linear(x, w, {}, cache);
  fp8_linear(x, w, {}, cache);
  EXPECT_EQ(cache.refreshes(), 2);
  w.mul_(2);  // written in place outside the step (a load): its version counter moves
  auto y2 = fp8_linear(x, w, {}, cache);
  EXPECT_EQ(cache.refreshes(), 3);
  EXPECT_LT(rel(y2, 2 * y1), 1e-6);
}

TEST(Fp8Linear, SizesTheTilesCannotCoverAreRefused) {
  Fp8WeightCache cache;
  try {
    fp8_linear(at::randn({4, 100}), at::randn({512, 100}), {}, cache);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 128"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fp8_quantize_blocks(at::randn({200, 256})), Error);  // a weight's rows too
  EXPECT_TRUE(fp8_fits(2048, 16384));
  EXPECT_FALSE(fp8_fits(2048, 256));  // pi05's k/v: measured slower in FP8
  EXPECT_FALSE(fp8_fits(768, 3072));
  EXPECT_EQ(fp8_unsupported_reason(at::kCPU), "");
}

}  // namespace
}  // namespace ember::model
