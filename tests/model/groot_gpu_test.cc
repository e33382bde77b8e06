// The groot policy on CUDA: the packed layout (FlashAttention's varlen kernel in bf16 for the
// prefix attentions and the DiT's cross-attention, with separate query and key offsets) and the
// padded SDPA baseline compute the same loss and gradients: to 1e-4 in fp32, and in bf16 each as
// close to the fp32 answer as the other; the frozen backbone (inference mode) trains and samples
// under autocast. Skips (with the reason) without a CUDA device.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "ember/model/groot.h"
#include "model/policy_test_util.h"

namespace ember::model {
namespace {

using test::LossAndGrads;

// `small`'s widths with few layers, two embodiments, no dropout (layouts compared function for function)
GrootShape test_shape() {
  auto s = groot_preset_shape("small");
  s.base.vision.layers = 2;
  s.base.lm.layers = 2;
  s.vl_layers = 1;
  s.dit_layers = 4;
  s.base.vocab = 1024;
  s.embodiments = {{8, 7}, {6, 12}};
  s.dropout = 0;
  return s;
}

std::vector<PolicySample> samples_for(const GrootShape& shape, int n) {
  at::manual_seed(1);
  std::vector<PolicySample> out(n);
  const int size = shape.base.vision.image_size;
  for (int i = 0; i < n; ++i) {
    auto& s = out[i];
    for (int c = 0; c <= i % 3; ++c) {
      s.images.push_back(at::rand({3, size, size}) * 2 - 1);
      s.camera_slots.push_back((c + i) % 3);
    }
    for (int j = 0; j < 5 + 7 * i % 40; ++j) s.prompt.push_back((i * 13 + j * 5) % shape.base.vocab);
    s.embodiment = i % 2;
    const auto& e = shape.embodiments[size_t(s.embodiment)];
    s.state = at::randn({e.state_dim});
    s.actions = at::randn({shape.base.horizon, e.action_dim});
  }
  return out;
}

// Six samples (1-3 cameras, prompts of 5-40 tokens, two embodiments), the policy with its
// backbone tuned (every gradient compared) on GPU 0, and the noise and times of one loss.
struct CudaCase {
  GrootShape shape = test_shape();
  std::vector<PolicySample> samples = samples_for(shape, 6);
  at::Device cuda{at::kCUDA, 0};
  GrootPolicy policy{nullptr};
  at::Tensor noise, time;
  explicit CudaCase(bool tune_backbone = true) {
    at::manual_seed(2);
    policy = GrootPolicy(shape, tune_backbone);
    policy->to(cuda);
    noise = at::randn({6, shape.base.horizon, shape.base.max_action_dim}).to(cuda);
    time = (at::rand({6}) * 0.9 + 0.05).to(cuda);
  }
  PolicyInputs inputs(AttentionBackend backend) const { return collate(test::ptrs(samples), shape.base, backend).to(cuda); }
  LossAndGrads pass(AttentionBackend backend, bool bf16) { return test::loss_and_grads(policy, inputs(backend), noise, time, bf16); }
};

// a key bias shifts every score of a query alike: its gradient is zero but for rounding
bool zero_in_exact_arithmetic(const std::string& name) { return name.ends_with(".k.bias"); }

// fp32 on the GPU (TF32 off): the layouts' masks, offsets and cross-attention key lengths agree as
// on the CPU (GrootPolicy.PackedAndPaddedComputeTheSameLossAndGradients). The packed prefix runs
// as one attention call per sample here (FlashAttention takes 16-bit inputs only).
TEST(GrootPolicyCuda, PackedMatchesPaddedInFp32) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
  const bool tf32_blas = at::globalContext().allowTF32CuBLAS(), tf32_dnn = at::globalContext().allowTF32CuDNN();
  at::globalContext().setAllowTF32CuBLAS(false);
  at::globalContext().setAllowTF32CuDNN(false);
  CudaCase c;
  auto packed = c.pass(AttentionBackend::kVarlen, false);
  auto padded = c.pass(AttentionBackend::kPadded, false);
  at::globalContext().setAllowTF32CuBLAS(tf32_blas);
  at::globalContext().setAllowTF32CuDNN(tf32_dnn);
  EXPECT_NEAR(packed.loss, padded.loss, 1e-5 * std::abs(padded.loss));
  auto names = c.policy->named_parameters();
  for (size_t i = 0; i < packed.grads.size(); ++i) {
    if (zero_in_exact_arithmetic(names[i].key())) continue;
    EXPECT_LT(test::max_rel_err(packed.grads[i], padded.grads[i]), 1e-4) << names[i].key();
  }
}

// bf16 autocast: measured on an H200 (bench/results/groot_h200_2026-12-01b.md), the gradients of
// either layout differ from the fp32 answer by about 7 % (norm-relative), and from each other by
// as much. The cause is the action decoder's ReLU (N1.5's CategorySpecificMLP): bf16 rounding of
// the forward flips the sign of some hidden pre-activations near zero, each flip drops or adds a
// unit's whole gradient, and every gradient upstream of the decoder inherits it (with a smooth
// activation there, the same comparison gives ~1 %: docs/groot.md). The 2e-2 between the
// layouts holds for the loss and for the gradients past that ReLU; for the others the test
// compares like with like: the packed layout's bf16 error against fp32 is bounded by the padded
// baseline's, per tensor and over all gradients together. A wrong mask, offset or key length
// gives errors of tens of per cent against fp32 (and of 100 % for a tensor it zeroes).
TEST(GrootPolicyCuda, PackedIsAsAccurateAsPaddedInBf16) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
  CudaCase c;
  auto exact = c.pass(AttentionBackend::kPadded, false);
  auto packed = c.pass(AttentionBackend::kVarlen, true);
  auto padded = c.pass(AttentionBackend::kPadded, true);
  EXPECT_NEAR(packed.loss, padded.loss, 2e-2 * std::abs(padded.loss));
  EXPECT_NEAR(packed.loss, exact.loss, 2e-2 * std::abs(exact.loss));
  auto names = c.policy->named_parameters();
  double err_v = 0, err_p = 0, norm = 0;
  std::vector<double> all_v, all_p, all_vp;
  for (size_t i = 0; i < packed.grads.size(); ++i) {
    const auto& name = names[i].key();
    if (zero_in_exact_arithmetic(name)) continue;
    const auto& ref = exact.grads[i];
    if (ref.abs().max().item<double>() == 0) {  // no gradient in either layout
      EXPECT_EQ(packed.grads[i].abs().max().item<double>(), 0) << name;
      continue;
    }
    const double ev = test::norm_rel_err(packed.grads[i], ref), ep = test::norm_rel_err(padded.grads[i], ref);
    const double evp = test::norm_rel_err(packed.grads[i], padded.grads[i]);
    EXPECT_LT(ev, 0.25) << name;
    EXPECT_LT(ev, 2 * ep + 1e-2) << name << " (padded's bf16 error " << ep << ")";
    if (name.find(".dec2.") != std::string::npos) {  // past the decoder's ReLU
      EXPECT_LT(evp, 2e-2) << name;
    }
    const double r2 = ref.to(at::kDouble).square().sum().item<double>();
    err_v += ev * ev * r2, err_p += ep * ep * r2, norm += r2;
    all_v.push_back(ev), all_p.push_back(ep), all_vp.push_back(evp);
  }
  err_v = std::sqrt(err_v / norm), err_p = std::sqrt(err_p / norm);
  auto quantiles = [](std::vector<double> x) {
    std::sort(x.begin(), x.end());
    return "median " + std::to_string(x[x.size() / 2]) + ", 90th percentile " + std::to_string(x[x.size() * 9 / 10]) +
           ", largest " + std::to_string(x.back());
  };
  std::cout << "bf16 loss: packed " << packed.loss << ", padded " << padded.loss << ", fp32 " << exact.loss << "\n"
            << "bf16 gradients, norm-relative error per tensor (" << all_v.size() << " tensors):\n"
            << "  packed against fp32: " << quantiles(all_v) << "\n  padded against fp32: " << quantiles(all_p)
            << "\n  packed against padded: " << quantiles(all_vp) << "\n  all gradients together against fp32: packed "
            << err_v << ", padded " << err_p << "\n";
  EXPECT_LT(err_v, 1.25 * err_p + 5e-3);
}

TEST(GrootPolicyCuda, FrozenBackboneTrainsAndSamplesInBf16) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
  CudaCase c(/*tune_backbone=*/false);
  auto in = c.inputs(AttentionBackend::kVarlen);
  auto r = test::loss_and_grads(c.policy, in, c.noise, c.time);
  EXPECT_TRUE(std::isfinite(r.loss));
  for (const auto& p : c.policy->named_parameters()) {
    if (is_backbone_param(p.key())) {
      EXPECT_FALSE(p.value().grad().defined()) << p.key();
    }
  }
  at::autocast::set_autocast_enabled(at::kCUDA, true);
  auto actions = c.policy->sample_actions(in);
  at::autocast::set_autocast_enabled(at::kCUDA, false);
  EXPECT_TRUE(at::isfinite(actions).all().item<bool>());
}

}  // namespace
}  // namespace ember::model
