// The CPU reference of the block-wise FP8 quantisation (kernels/fp8_reference.h): e4m3 rounding
// and saturation, the tiles' scales, padding, zero tiles, the transposed copies and the round
// trip's error bound. The GPU test holds the CUDA kernel to this reference byte for byte.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "ember/kernels/fp8_reference.h"

namespace ember::kernels::ref {
namespace {

struct Quantized {
  at::Tensor q, scale, qt, scale_t;  // uint8 bytes and float scales, reference layouts
};

Quantized rows_of(const at::Tensor& x, int64_t padded, bool transposed) {
  const int64_t rows = x.size(0), cols = x.size(1);
  Quantized r{at::empty({padded, cols}, at::kByte), at::empty({cols / 128, padded}), at::empty({cols, padded}, at::kByte),
              at::empty({padded / 128, cols})};
  fp8_quantize(x.data_ptr<float>(), rows, cols, padded, false, r.q.data_ptr<uint8_t>(), r.scale.data_ptr<float>(),
               transposed ? r.qt.data_ptr<uint8_t>() : nullptr, transposed ? r.scale_t.data_ptr<float>() : nullptr);
  return r;
}

at::Tensor decode(const at::Tensor& bytes) {
  auto out = at::empty(bytes.sizes());
  auto* b = bytes.data_ptr<uint8_t>();
  auto* o = out.data_ptr<float>();
  for (int64_t i = 0; i < bytes.numel(); ++i) o[i] = from_e4m3(b[i]);
  return out;
}

TEST(Fp8Reference, RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(from_e4m3(to_e4m3(1.0f)), 1.0f);
  EXPECT_EQ(from_e4m3(to_e4m3(1.0625f)), 1.0f);    // halfway between 1 and 1.125: the even one
  EXPECT_EQ(from_e4m3(to_e4m3(1.1875f)), 1.25f);   // halfway between 1.125 and 1.25: the even one
  EXPECT_EQ(from_e4m3(to_e4m3(1.07f)), 1.125f);
  EXPECT_EQ(to_e4m3(448.f), 0x7E);                 // the largest finite value
  EXPECT_EQ(to_e4m3(470.f), 0x7E);                 // past it: saturated, never NaN (0x7F)
  EXPECT_EQ(to_e4m3(1e30f), 0x7E);
  EXPECT_EQ(to_e4m3(-1e30f), 0xFE);
  EXPECT_EQ(from_e4m3(to_e4m3(0x1p-9f)), 0x1p-9f);  // the smallest subnormal survives
  EXPECT_EQ(from_e4m3(to_e4m3(0x1p-11f)), 0.f);     // a quarter of it rounds to zero
  EXPECT_EQ(fp8_scale(448.f), 1.f);
  EXPECT_EQ(fp8_scale(0.f), 0x1p-126f);  // an all-zero tile keeps a finite scale
}

TEST(Fp8Reference, RowTilesScaleByTheirAmaxAndRoundTripWithinE4m3Precision) {
  at::manual_seed(3);
  const int64_t rows = 200, cols = 384, padded = 256;
  auto x = at::randn({rows, cols}) * at::rand({rows, 1}) * 10;  // tiles of different magnitudes
  auto r = rows_of(x, padded, true);
  // each 1x128 tile: scale = amax / 448, and the largest magnitude lands on +-448
  auto xp = at::cat({x, at::zeros({padded - rows, cols})});
  auto amax = xp.abs().view({padded, cols / 128, 128}).amax(-1);  // [padded, cols/128]
  EXPECT_TRUE(at::equal(r.scale.t(), at::clamp_min(amax / 448.f, 0x1p-126f)));
  auto q = decode(r.q);
  EXPECT_EQ(q.narrow(0, 0, rows).abs().view({rows, cols / 128, 128}).amax(-1).min().item<float>(), 448.f);
  // dequantised: within e4m3's half step (2^-4 relative) or, near zero, half a subnormal step
  auto scale = r.scale.t().repeat_interleave(128, 1);  // [padded, cols]
  auto err = (q * scale - xp).abs();
  auto bound = at::maximum(xp.abs() * 0x1p-4f, scale * 0x1p-10f) * (1 + 1e-5f);  // slack: float32's own rounding
  EXPECT_TRUE((err <= bound).all().item<bool>()) << "worst excess " << (err - bound).max().item<float>();
  EXPECT_GT(err.max().item<float>(), 0.f);  // and it did round something
  // the padding rows quantise to zero
  EXPECT_EQ(r.q.narrow(0, rows, padded - rows).nonzero().size(0), 0);
}

TEST(Fp8Reference, TransposedCopyUses128x1TilesOfTheRows) {
  at::manual_seed(4);
  const int64_t rows = 130, cols = 256, padded = 256;
  auto x = at::randn({rows, cols}) * at::rand({1, cols}) * 3;
  auto r = rows_of(x, padded, true);
  auto xt = at::cat({x, at::zeros({padded - rows, cols})}).t().contiguous();  // [cols, padded]
  // quantising x^T by rows gives the same bytes and scales as the transposed copy
  auto direct = rows_of(xt, cols, false);
  EXPECT_TRUE(at::equal(r.qt, direct.q));
  EXPECT_TRUE(at::equal(r.scale_t, direct.scale));  // both [padded/128, cols]
  // the second 128-row tile holds 2 real rows: its scale is their column amax
  auto amax = x.narrow(0, 128, 2).abs().amax(0);
  EXPECT_TRUE(at::equal(r.scale_t[1], at::clamp_min(amax / 448.f, 0x1p-126f)));
}

TEST(Fp8Reference, ZeroTilesStayZero) {
  auto x = at::zeros({128, 256});
  x.narrow(1, 128, 128).normal_();
  auto r = rows_of(x, 128, true);
  EXPECT_EQ(r.q.narrow(1, 0, 128).nonzero().size(0), 0);
  EXPECT_TRUE((r.scale[0] == 0x1p-126f).all().item<bool>());
  EXPECT_TRUE(at::isfinite(decode(r.q)).all().item<bool>());
  EXPECT_TRUE(at::isfinite(decode(r.qt)).all().item<bool>());
}

TEST(Fp8Reference, WeightBlocksShareOneScaleAndTransposeExactly) {
  at::manual_seed(5);
  const int64_t rows = 256, cols = 384;
  auto w = at::randn({rows, cols});
  w.narrow(0, 128, 128).narrow(1, 256, 128).mul_(100);  // one loud block
  auto q = at::empty({rows, cols}, at::kByte), qt = at::empty({cols, rows}, at::kByte);
  auto scale = at::empty({rows / 128, cols / 128});
  fp8_quantize(w.data_ptr<float>(), rows, cols, rows, true, q.data_ptr<uint8_t>(), scale.data_ptr<float>(),
               qt.data_ptr<uint8_t>(), nullptr);
  auto amax = w.view({rows / 128, 128, cols / 128, 128}).abs().amax({1, 3});
  EXPECT_TRUE(at::equal(scale, amax / 448.f));
  EXPECT_TRUE(at::equal(qt, q.t().contiguous()));
  // the loud block does not coarsen its neighbours: they round within e4m3's half step
  auto sc = scale.repeat_interleave(128, 0).repeat_interleave(128, 1);
  auto quiet = [](const at::Tensor& t) { return t.narrow(0, 0, 128); };
  auto bound = at::maximum(quiet(w).abs() * 0x1p-4f, quiet(sc) * 0x1p-10f) * (1 + 1e-5f);
  EXPECT_TRUE(((quiet(decode(q) * sc) - quiet(w)).abs() <= bound).all().item<bool>());
}

}  // namespace
}  // namespace ember::kernels::ref
