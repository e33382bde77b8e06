// The policy on CUDA: FlashAttention's varlen kernel (bf16) and the padded SDPA baseline
// compute the same loss and gradients within bf16 tolerance. Skips (with the reason) where no
// CUDA device is present.
#include <gtest/gtest.h>

#include <array>
#include <torch/cuda.h>

#include <ATen/autocast_mode.h>

#include "ember/model/attention.h"
#include "ember/model/fused_ops.h"
#include "ember/model/layers.h"
#include "ember/model/pi05.h"
#include "ember/model/vision.h"
#include "model/policy_test_util.h"

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

// `small`'s widths with few layers
PolicyShape test_shape(int layers) {
  auto shape = preset_shape("small");
  shape.lm.layers = shape.expert.layers = layers;
  shape.vision.layers = 2;
  shape.vocab = 1024;
  return shape;
}

using test::LossAndGrads;

// Every gradient within tol of the largest value of its reference.
void expect_grads_close(const LossAndGrads& a, const LossAndGrads& ref, double tol, Pi05Policy& policy) {
  auto names = policy->named_parameters();
  ASSERT_EQ(a.grads.size(), ref.grads.size());
  for (size_t i = 0; i < a.grads.size(); ++i) {
    double scale = std::max(ref.grads[i].abs().max().item<double>(), 1e-6);
    EXPECT_LT((a.grads[i] - ref.grads[i]).abs().max().item<double>() / scale, tol) << names[i].key();
  }
}

// Six samples, a 3-layer policy on GPU 0, and the noise and times of one loss.
struct CudaCase {
  PolicyShape shape = test_shape(3);
  std::vector<PolicySample> samples = samples_for(shape, 6);
  std::vector<const PolicySample*> ptrs;
  at::Device cuda{at::kCUDA, 0};
  Pi05Policy policy{nullptr};
  at::Tensor noise, time;
  CudaCase() {
    for (const auto& s : samples) ptrs.push_back(&s);
    at::manual_seed(2);
    policy = Pi05Policy(shape);
    policy->to(cuda);
    noise = at::randn({6, shape.horizon, shape.max_action_dim}).to(cuda);
    time = (at::rand({6}) * 0.9 + 0.05).to(cuda);
  }
  PolicyInputs inputs(AttentionBackend backend, int64_t prefix_multiple = 0) const {
    return collate(ptrs, shape, backend, {.prefix_multiple = prefix_multiple}).to(cuda);
  }
};

TEST(Pi05PolicyCuda, FlashVarlenMatchesPaddedInBf16) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
  CudaCase c;
  auto varlen = test::loss_and_grads(c.policy, c.inputs(AttentionBackend::kVarlen), c.noise, c.time);
  auto padded = test::loss_and_grads(c.policy, c.inputs(AttentionBackend::kPadded), c.noise, c.time);
  EXPECT_NEAR(varlen.loss, padded.loss, 2e-2 * std::abs(padded.loss));
  expect_grads_close(varlen, padded, 2e-2, c.policy);
}

// FlashAttention's varlen kernel with the prefix rounded up by filler (its own segment in
// cu_prefix) gives the loss and gradients it gives without, within bf16 tolerance.
TEST(Pi05PolicyCuda, PrefixFillerChangesNothingInBf16) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
  CudaCase c;
  auto filled_in = c.inputs(AttentionBackend::kVarlen, 256);
  ASSERT_GT(filled_in.plan.prefix_pad, 0);
  auto plain = test::loss_and_grads(c.policy, c.inputs(AttentionBackend::kVarlen), c.noise, c.time);
  auto filled = test::loss_and_grads(c.policy, filled_in, c.noise, c.time);
  EXPECT_NEAR(filled.loss, plain.loss, 2e-2 * std::abs(plain.loss));
  expect_grads_close(filled, plain, 2e-2, c.policy);
}

// --policy.gradient_checkpointing on CUDA: the backward pass runs on autograd's device thread,
// where autocast is off; the rerun restores the forward's bf16 autocast, so the loss and every
// gradient equal the plain pass's within one bf16 step (7.8e-3): flash attention's backward and the
// gradient sums run in another order (largest seen on the H200, 2026-12-01: 6.9e-3 of a max).
TEST(Pi05PolicyCuda, GradientCheckpointingChangesNothingInBf16) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
  CudaCase c;
  for (auto backend : {AttentionBackend::kVarlen, AttentionBackend::kPadded}) {
    auto in = c.inputs(backend);
    c.policy->options.gradient_checkpointing = c.policy->vision->checkpoint_blocks = false;
    auto plain = test::loss_and_grads(c.policy, in, c.noise, c.time);
    c.policy->options.gradient_checkpointing = c.policy->vision->checkpoint_blocks = true;
    auto rerun = test::loss_and_grads(c.policy, in, c.noise, c.time);
    EXPECT_NEAR(rerun.loss, plain.loss, 1e-6 * std::abs(plain.loss)) << attention_backend_name(backend);
    expect_grads_close(rerun, plain, 1e-2, c.policy);
  }
}

// The vision tower's attention on CUDA (FlashAttention on the strided q, k, v views of the fused
// qkv projection) equals PyTorch's math attention in fp32 within bf16 tolerance, forward and
// backward, with a number of images that is not a multiple of anything.
TEST(Pi05PolicyCuda, ImageAttentionMatchesMathAttention) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
  at::manual_seed(4);
  const int64_t n = 7, p = 64, heads = 4, d = 72;  // d as SigLIP's (1152 / 16)
  at::Device cuda(at::kCUDA, 0);
  auto qkv32 = at::randn({n, p, 3 * heads * d}, at::TensorOptions().device(cuda));
  auto views = [&](const at::Tensor& qkv) {
    auto t = qkv.view({n, p, 3, heads, d}).unbind(2);  // as the vision tower makes them
    return std::array<at::Tensor, 3>{t[0].transpose(1, 2), t[1].transpose(1, 2), t[2].transpose(1, 2)};
  };
  auto a = qkv32.to(at::kBFloat16).requires_grad_();
  auto b = qkv32.clone().requires_grad_();
  auto [qa, ka, va] = views(a);
  auto [qb, kb, vb] = views(b);
  auto fast = image_attention(qa, ka, va);
  auto ref = std::get<0>(at::_scaled_dot_product_attention_math(qb, kb, vb));
  ASSERT_EQ(fast.sizes(), ref.sizes());
  auto rel = [](const at::Tensor& x, const at::Tensor& y) {
    return (x.to(at::kFloat) - y).abs().max().item<double>() / std::max(y.abs().max().item<double>(), 1e-6);
  };
  EXPECT_LT(rel(fast, ref), 2e-2);
  auto g = at::randn_like(ref);
  (fast.to(at::kFloat) * g).sum().backward();
  (ref * g).sum().backward();
  EXPECT_LT(rel(a.grad(), b.grad()), 3e-2);
}

// CUDA's autocast runs LayerNorm in float32 (CPU's does not, so this is the test that sees it): the
// vision tower's norm must stay in bf16, accumulate in float32, and give float32 weights float32
// gradients; the tower's output is bf16.
TEST(VisionTowerCuda, StaysInBf16UnderAutocast) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
  at::manual_seed(6);
  at::Device cuda(at::kCUDA, 0);
  auto shape = test_shape(1).vision;
  VisionTower tower(shape);
  tower->to(cuda);
  LayerNorm norm(64);
  norm->to(cuda);
  {
    at::NoGradGuard no_grad;
    norm->weight.uniform_(0.5, 1.5);
    norm->bias.uniform_(-0.5, 0.5);
  }
  auto x = (at::randn({33, 64}, at::TensorOptions().device(cuda)) * 3 + 1).to(at::kBFloat16).requires_grad_();
  auto images = at::rand({2, 3, shape.image_size, shape.image_size}, at::TensorOptions().device(cuda)) * 2 - 1;
  at::autocast::set_autocast_enabled(at::kCUDA, true);
  at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
  auto y = norm->forward(x);
  auto out = tower->forward(images);
  at::autocast::set_autocast_enabled(at::kCUDA, false);
  at::autocast::clear_cache();
  EXPECT_EQ(out.scalar_type(), at::kBFloat16);
  ASSERT_EQ(y.scalar_type(), at::kBFloat16);
  auto exact = at::layer_norm(x.detach().to(at::kFloat), {64}, norm->weight.detach(), norm->bias.detach(), 1e-6);
  EXPECT_LT((y.to(at::kFloat) - exact).abs().max().item<double>() / exact.abs().max().item<double>(), 2e-2);
  y.to(at::kFloat).sum().backward();
  ASSERT_TRUE(norm->weight.grad().defined());
  EXPECT_EQ(norm->weight.grad().scalar_type(), at::kFloat);
}

// max |x - y| / max |y|
double rel_err(const at::Tensor& x, const at::Tensor& y) {
  return (x.to(at::kDouble) - y.to(at::kDouble)).abs().max().item<double>() /
         std::max(y.abs().max().item<double>(), 1e-12);
}

// Forward output and the inputs' gradients (under an upstream gradient g) of f at x (fp64 copies
// of the inputs when exact: the exact answer for the rounded inputs).
template <typename F>
std::vector<at::Tensor> value_and_grads(F f, std::vector<at::Tensor> inputs, const at::Tensor& g, bool exact) {
  for (auto& t : inputs) t = (exact ? t.to(at::kDouble) : t.clone()).requires_grad_();
  auto out = f(inputs);
  (out.to(at::kDouble) * g.to(at::kDouble)).sum().backward();
  std::vector<at::Tensor> r{out.detach()};
  for (auto& t : inputs) r.push_back(t.grad());
  return r;
}

// ember's fused CUDA kernels (gated GELU, RoPE) against the fp64 answer, forward and backward, in
// fp32 and bf16: whole 16-byte packs, a tail that is not, and an input that is not 16-byte aligned.
TEST(FusedOpsCuda, GeluTanhMulAndRopeMatchTheExactAnswer) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
  ASSERT_TRUE(fused_kernels_built()) << "ember was built without nvcc: the fused kernels are not in this build";
  at::manual_seed(5);
  at::Device cuda(at::kCUDA, 0);
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    const double tol = dtype == at::kFloat ? 1e-5 : 1e-2;
    for (int64_t n : {4096 * 3, 1000 * 7 + 3}) {
      for (bool unaligned : {false, true}) {
        SCOPED_TRACE(std::string(c10::toString(dtype)) + " n=" + std::to_string(n) + (unaligned ? " unaligned" : ""));
        auto make = [&] {
          auto t = at::randn({n + 1}, at::TensorOptions().device(cuda)).mul_(2).to(dtype);
          return unaligned ? t.narrow(0, 1, n) : t.narrow(0, 0, n);
        };
        auto gate = make(), up = make(), g = at::randn({n}, at::TensorOptions().device(cuda));
        auto fn = [](std::vector<at::Tensor>& in, bool fused) {
          return fused ? gelu_tanh_mul(in[0], in[1]) : gelu_tanh_mul_reference(in[0], in[1]);
        };
        auto fused = value_and_grads([&](auto& in) { return fn(in, true); }, {gate, up}, g, false);
        auto exact = value_and_grads([&](auto& in) { return fn(in, false); }, {gate, up}, g, true);
        ASSERT_EQ(fused[0].scalar_type(), dtype);
        for (size_t i = 0; i < fused.size(); ++i) EXPECT_LT(rel_err(fused[i], exact[i]), tol) << "output " << i;
      }
    }
    // 6: pairs that are not whole packs; slice: x is a column slice of a wider product (as the
    // q/k/v projection's), tokens further apart than its heads
    for (int64_t d : {256, 6}) {
      for (bool slice : {false, true}) {
        SCOPED_TRACE(std::string(c10::toString(dtype)) + " head_dim=" + std::to_string(d) + (slice ? " slice" : ""));
        const int64_t tokens = 37, heads = 3, width = slice ? (heads + 2) * d : heads * d;
        auto rope = make_rope(at::randint(0, 600, {tokens}, at::TensorOptions().dtype(at::kLong).device(cuda)), d);
        auto wide = at::randn({tokens, width}, at::TensorOptions().device(cuda)).to(dtype);
        auto g = at::randn({tokens, heads, d}, at::TensorOptions().device(cuda));
        auto x_of = [&](const at::Tensor& w) { return w.narrow(1, slice ? d : 0, heads * d).view({tokens, heads, d}); };
        auto fused = value_and_grads([&](auto& in) { return rope_rotate(x_of(in[0]), rope.cos, rope.sin); }, {wide}, g,
                                     false);
        auto exact = value_and_grads(
            [&](auto& in) {
              return rope_rotate_reference(x_of(in[0]), rope.cos.to(at::kDouble), rope.sin.to(at::kDouble));
            },
            {wide}, g, true);
        ASSERT_EQ(fused[0].scalar_type(), dtype);
        for (size_t i = 0; i < fused.size(); ++i) EXPECT_LT(rel_err(fused[i], exact[i]), tol) << "output " << i;
      }
    }
  }
}

// --policy.param_dtype=bf16 on CUDA: the same policy with bf16 weights (norms and the patch and
// position embeddings kept fp32) gives the fp32-master loss and gradients within bf16 tolerance,
// through the varlen kernel.
TEST(Pi05PolicyCuda, Bf16ParametersMatchFp32MasterWeights) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
  CudaCase c;
  auto& policy = c.policy;
  // fp32 weights already rounded to bf16: the two runs start from the same values
  set_param_dtype(policy, at::kBFloat16);
  set_param_dtype(policy, at::kFloat);
  auto in = c.inputs(AttentionBackend::kVarlen);
  auto master = test::loss_and_grads(policy, in, c.noise, c.time);
  set_param_dtype(policy, at::kBFloat16);
  int bf16 = 0;
  for (const auto& p : policy->named_parameters()) bf16 += p.value().scalar_type() == at::kBFloat16;
  EXPECT_GT(bf16, int(policy->named_parameters().size()) / 2);
  auto half = test::loss_and_grads(policy, in, c.noise, c.time);
  EXPECT_NEAR(half.loss, master.loss, 2e-2 * std::abs(master.loss));
  expect_grads_close(half, master, 5e-2, policy);
}

}  // namespace
}  // namespace ember::model
