// The policy on CUDA: FlashAttention's varlen kernel (bf16) and the padded SDPA baseline
// compute the same loss and gradients within bf16 tolerance. Skips (with the reason) where no
// CUDA device is present.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <ATen/autocast_mode.h>

#include "ember/model/pi05.h"
#include "ember/train/bf16_weights.h"

namespace ember::model {
namespace {

std::vector<PolicySample> samples_for(const PolicyShape& shape, int n) {
  at::manual_seed(1);
  std::vector<PolicySample> out(n);
  for (int i = 0; i < n; ++i) {
    auto& s = out[i];
    for (int c = 0; c <= i % 3; ++c) {
      s.images.push_back(at::rand({3, shape.vision.image_size, shape.vision.image_size}) * 2 - 1);
      s.camera_slots.push_back((c + i) % 3);
    }
    for (int j = 0; j < 5 + 7 * i % 40; ++j) s.prompt.push_back((i * 13 + j * 5) % shape.vocab);
    s.actions = at::randn({shape.horizon, 7});
  }
  return out;
}

TEST(Pi05PolicyCuda, FlashVarlenMatchesPaddedInBf16) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
  auto shape = preset_shape("small");
  shape.lm.layers = shape.expert.layers = 3;
  shape.vision.layers = 2;
  shape.vocab = 1024;
  auto samples = samples_for(shape, 6);
  std::vector<const PolicySample*> ptrs;
  for (const auto& s : samples) ptrs.push_back(&s);
  at::manual_seed(2);
  Pi05Policy policy(shape);
  at::Device cuda(at::kCUDA, 0);
  policy->to(cuda);
  auto noise = at::randn({6, shape.horizon, shape.max_action_dim}).to(cuda);
  auto time = (at::rand({6}) * 0.9 + 0.05).to(cuda);
  auto run = [&](AttentionBackend backend) {
    policy->zero_grad();
    auto in = collate(ptrs, shape, backend).to(cuda);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    auto out = policy->loss(in, noise, time);
    out.loss.backward();
    at::autocast::set_autocast_enabled(at::kCUDA, false);
    at::autocast::clear_cache();
    std::vector<at::Tensor> g;
    for (const auto& p : policy->parameters()) g.push_back(p.grad().defined() ? p.grad().clone() : at::zeros_like(p));
    return std::make_pair(out.loss.item<double>(), g);
  };
  auto [lv, gv] = run(AttentionBackend::kVarlen);
  auto [lp, gp] = run(AttentionBackend::kPadded);
  EXPECT_NEAR(lv, lp, 2e-2 * std::abs(lp));
  auto names = policy->named_parameters();
  for (size_t i = 0; i < gv.size(); ++i) {
    double scale = std::max(gp[i].abs().max().item<double>(), 1e-6);
    double err = (gv[i] - gp[i]).abs().max().item<double>() / scale;
    EXPECT_LT(err, 2e-2) << names[i].key();
  }
}

// On CUDA, bf16 weight copies made once per step give autocast's loss and gradients: the same
// bf16 weights and bf16 gradients, up to the order of FlashAttention's backward accumulation
// (a bf16 rounding step: 1e-2 of each tensor's largest value).
TEST(Pi05PolicyCuda, Bf16WeightsMatchAutocastCasts) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
  auto shape = preset_shape("small");
  shape.lm.layers = shape.expert.layers = 2;
  shape.vision.layers = 2;
  shape.vocab = 1024;
  auto samples = samples_for(shape, 4);
  std::vector<const PolicySample*> ptrs;
  for (const auto& s : samples) ptrs.push_back(&s);
  at::Device cuda(at::kCUDA, 0);
  auto in = collate(ptrs, shape, AttentionBackend::kVarlen).to(cuda);
  auto noise = at::randn({4, shape.horizon, shape.max_action_dim}).to(cuda);
  auto time = (at::rand({4}) * 0.9 + 0.05).to(cuda);
  auto run = [&](bool copies) {
    at::manual_seed(5);
    Pi05Policy policy(shape);
    policy->to(cuda);
    std::unique_ptr<train::Bf16Weights> weights;
    if (copies) weights = std::make_unique<train::Bf16Weights>(matmul_parameters(*policy)), weights->cast();
    at::autocast::set_autocast_enabled(at::kCUDA, true);
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    auto out = policy->loss(in, noise, time);
    out.loss.backward();
    at::autocast::set_autocast_enabled(at::kCUDA, false);
    at::autocast::clear_cache();
    if (weights) weights->restore();
    std::vector<at::Tensor> g;
    for (const auto& p : policy->parameters()) {
      EXPECT_EQ(p.scalar_type(), at::kFloat);
      g.push_back(p.grad().defined() ? p.grad().clone() : at::zeros_like(p));
    }
    return std::make_pair(out.loss.item<double>(), g);
  };
  auto [la, ga] = run(false);
  auto [lb, gb] = run(true);
  EXPECT_NEAR(la, lb, 1e-5 * std::abs(la));
  for (size_t i = 0; i < ga.size(); ++i) {
    double scale = std::max(ga[i].abs().max().item<double>(), 1e-6);
    EXPECT_LT((gb[i] - ga[i]).abs().max().item<double>() / scale, 1e-2) << i;
  }
}

}  // namespace
}  // namespace ember::model
