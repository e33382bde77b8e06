// The pi0.5 policy on CPU: the varlen and padded layouts compute the same loss and gradients,
// training lowers the loss, and sample_actions with its prefix cache matches a plain Euler loop.
#include <gtest/gtest.h>

#include <iostream>

#include "ember/core/error.h"
#include "ember/model/layers.h"
#include "ember/model/pi05.h"
#include "ember/model/vision.h"
#include "model/policy_test_util.h"
#include "ember/train/optimizer.h"
#include <ATen/autocast_mode.h>
#include <torch/optim/adamw.h>
#include <ATen/Parallel.h>

namespace ember::model {
namespace {

PolicyShape tiny() { return test::tiny_pi05_shape(); }

// samples with 1..3 cameras in varying slots, prompts of varying length, action dims 3..8
std::vector<PolicySample> make_samples(const PolicyShape& shape, int n, uint64_t seed) {
  at::manual_seed(seed);
  std::vector<PolicySample> out(n);
  const int size = shape.vision.image_size;
  for (int i = 0; i < n; ++i) {
    auto& s = out[i];
    int cams = 1 + i % 3;
    for (int c = 0; c < cams; ++c) {
      s.images.push_back(at::rand({3, size, size}) * 2 - 1);
      s.camera_slots.push_back((c + i) % shape.max_cameras);
    }
    int len = 3 + (i * 5) % (shape.max_prompt - 3);
    for (int j = 0; j < len; ++j) s.prompt.push_back(int((i * 31 + j * 7) % shape.vocab));
    int dim = 3 + i % (shape.max_action_dim - 2);
    s.actions = at::randn({shape.horizon, dim});
    s.action_is_pad = at::zeros({shape.horizon}, at::kBool);
    if (i % 2) s.action_is_pad.narrow(0, shape.horizon - 2, 2).fill_(true);
  }
  return out;
}

using test::max_rel_err;
using test::ptrs;

TEST(Pi05Policy, VarlenAndPaddedComputeTheSameLossAndGradients) {
  auto shape = tiny();
  auto samples = make_samples(shape, 5, 1);
  auto batch = ptrs(samples);
  at::manual_seed(7);
  Pi05Policy policy(shape);
  auto noise = at::randn({5, shape.horizon, shape.max_action_dim});
  auto time = at::rand({5}) * 0.9 + 0.05;

  auto grads_of = [&](AttentionBackend backend) {
    policy->zero_grad();
    auto in = collate(batch, shape, backend);
    auto out = policy->loss(in, noise, time);
    out.loss.backward();
    std::vector<at::Tensor> g;
    for (const auto& p : policy->parameters()) g.push_back(p.grad().defined() ? p.grad().clone() : at::zeros_like(p));
    return std::make_pair(out.loss.item<double>(), g);
  };
  auto [loss_v, grad_v] = grads_of(AttentionBackend::kVarlen);
  auto [loss_p, grad_p] = grads_of(AttentionBackend::kPadded);
  EXPECT_NEAR(loss_v, loss_p, 1e-4 * std::abs(loss_p));
  auto names = policy->named_parameters();
  ASSERT_EQ(grad_v.size(), grad_p.size());
  int nonzero = 0;
  for (size_t i = 0; i < grad_v.size(); ++i) {
    EXPECT_LT(max_rel_err(grad_v[i], grad_p[i]), 1e-4) << names[i].key();
    if (grad_v[i].abs().max().item<double>() > 0) ++nonzero;
    else std::cout << "no gradient: " << names[i].key() << "\n";
  }
  // every parameter takes part but the time MLP (at initialisation its gradient flows through
  // the adaptive norms' zero-initialised weights)
  EXPECT_EQ(nonzero, int(grad_v.size()) - 4);
}

// Rounding the packed prefix up with filler tokens (CollateOptions::prefix_multiple) changes
// nothing real: the layout gains one segment of filler that no sample's keys include, and the
// loss, every gradient and the sampled actions equal those without filler (fp32, CPU).
TEST(Pi05Policy, PrefixFillerChangesNoLossGradientOrAction) {
  auto shape = tiny();
  shape.flow_steps = 3;
  auto samples = make_samples(shape, 5, 1);
  auto batch = ptrs(samples);
  auto plain = collate(batch, shape, AttentionBackend::kVarlen);
  auto filled = collate(batch, shape, AttentionBackend::kVarlen, {.prefix_multiple = 64});
  const int64_t tp = plain.prefix_rows();
  ASSERT_NE(tp % 64, 0) << "the test needs a prefix that is not already a multiple";
  EXPECT_EQ(filled.prefix_rows() % 64, 0);
  EXPECT_EQ(filled.plan.prefix_pad, filled.prefix_rows() - tp);
  EXPECT_EQ(filled.plan.cu_prefix.size(0), plain.plan.cu_prefix.size(0) + 1);
  EXPECT_EQ(filled.plan.cu_prefix[-1].item<int64_t>(), filled.prefix_rows());
  EXPECT_EQ(filled.plan.prefix_lens, plain.plan.prefix_lens);
  EXPECT_TRUE(at::equal(filled.plan.cu_joint, plain.plan.cu_joint));
  EXPECT_LT(filled.plan.joint_index.max().item<int64_t>(), filled.prefix_rows() + plain.plan.cu_suffix[-1].item<int64_t>());
  EXPECT_EQ(filled.real_prefix_tokens, tp);
  // already a multiple: no filler
  EXPECT_EQ(collate(batch, shape, AttentionBackend::kVarlen, {.prefix_multiple = tp}).plan.prefix_pad, 0);

  at::manual_seed(7);
  Pi05Policy policy(shape);
  auto noise = at::randn({5, shape.horizon, shape.max_action_dim});
  auto time = at::rand({5}) * 0.9 + 0.05;
  auto [loss_a, grad_a] = test::loss_and_grads(policy, plain, noise, time, /*bf16=*/false);
  auto [loss_b, grad_b] = test::loss_and_grads(policy, filled, noise, time, /*bf16=*/false);
  EXPECT_NEAR(loss_a, loss_b, 1e-6 * std::abs(loss_a));
  auto names = policy->named_parameters();
  for (size_t i = 0; i < grad_a.size(); ++i) EXPECT_LT(max_rel_err(grad_b[i], grad_a[i]), 1e-5) << names[i].key();
  auto actions_a = policy->sample_actions(plain, noise), actions_b = policy->sample_actions(filled, noise);
  EXPECT_LT(max_rel_err(actions_b, actions_a), 1e-5);
}

// RoPE as Gemma applies it to the two halves of each head: [x1, x2] -> [x1 cos - x2 sin,
// x2 cos + x1 sin] with angle position / base^(2i / d); position 0 is the identity; the dot
// product of a rotated query and key depends on their distance only; bf16 in, bf16 out.
// The patch embedding as one matrix product over the patches equals the strided convolution it
// replaces (fp32, CPU), with the gradients of its weight and bias.
TEST(VisionTower, PatchEmbeddingEqualsTheStridedConvolution) {
  at::manual_seed(5);
  const int patch = 4;
  auto images = at::rand({3, 3, 16, 16}) * 2 - 1;
  auto w1 = (at::randn({8, 3, patch, patch}) * 0.1).requires_grad_();
  auto b1 = at::randn({8}).requires_grad_();
  auto w2 = w1.detach().clone().requires_grad_(), b2 = b1.detach().clone().requires_grad_();
  auto ours = patch_embed(images, w1, b1, patch);  // [n, P, w]
  auto conv = at::conv2d(images, w2, b2, {patch, patch}).flatten(2).transpose(1, 2);
  ASSERT_EQ(ours.sizes(), conv.sizes());
  EXPECT_LT(max_rel_err(ours, conv), 1e-6);
  auto g = at::randn_like(conv);
  (ours * g).sum().backward();
  (conv * g).sum().backward();
  EXPECT_LT(max_rel_err(w1.grad(), w2.grad()), 1e-5);
  EXPECT_LT(max_rel_err(b1.grad(), b2.grad()), 1e-5);
}

// Under bf16 autocast the vision tower's residual stream stays bf16 (autocast would run LayerNorm in
// float32 and make everything after it float32), the norm still accumulates in float32, its
// float32 weights get float32 gradients, and the tower's output is the float32 tower's to bf16
// precision.
TEST(VisionTower, StaysInBf16UnderAutocast) {
  at::manual_seed(9);
  auto shape = tiny().vision;
  VisionTower tower(shape);
  auto images = at::rand({2, 3, shape.image_size, shape.image_size}) * 2 - 1;
  auto reference = tower->forward(images);
  LayerNorm norm(16);
  {
    at::NoGradGuard no_grad;
    norm->weight.uniform_(0.5, 1.5);
    norm->bias.uniform_(-0.5, 0.5);
  }
  auto x = (at::randn({5, 16}) * 3 + 1).to(at::kBFloat16).requires_grad_();
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  at::autocast::set_autocast_enabled(at::kCPU, true);
  auto out = tower->forward(images);
  auto y = norm->forward(x);
  at::autocast::set_autocast_enabled(at::kCPU, false);
  at::autocast::clear_cache();
  EXPECT_EQ(out.scalar_type(), at::kBFloat16);
  EXPECT_LT(max_rel_err(out.to(at::kFloat), reference), 5e-2);
  ASSERT_EQ(y.scalar_type(), at::kBFloat16);
  auto exact = at::layer_norm(x.detach().to(at::kFloat), {16}, norm->weight.detach(), norm->bias.detach(), 1e-6);
  EXPECT_LT(max_rel_err(y.to(at::kFloat), exact), 2e-2);
  y.to(at::kFloat).sum().backward();
  ASSERT_TRUE(norm->weight.grad().defined());
  EXPECT_EQ(norm->weight.grad().scalar_type(), at::kFloat);
  EXPECT_EQ(x.grad().scalar_type(), at::kBFloat16);
}

TEST(Rope, RotatesTheTwoHalvesAsGemma) {
  at::manual_seed(7);
  const int64_t d = 8, heads = 3;
  auto positions = at::tensor(std::vector<int64_t>{0, 1, 5, 6, 40}, at::kLong);
  auto x = at::randn({5, heads, d});
  auto out = apply_rope(x, make_rope(positions, d));
  auto inv_freq = at::pow(10000.0, at::arange(0, d, 2, at::kFloat) / double(d)).reciprocal();
  auto angle = (positions.to(at::kFloat).unsqueeze(1) * inv_freq).unsqueeze(1);  // [T, 1, d/2]
  auto x1 = x.narrow(-1, 0, d / 2), x2 = x.narrow(-1, d / 2, d / 2);
  auto expected = at::cat({x1 * angle.cos() - x2 * angle.sin(), x2 * angle.cos() + x1 * angle.sin()}, -1);
  EXPECT_LT((out - expected).abs().max().item<double>(), 1e-6);
  EXPECT_TRUE(at::allclose(out[0], x[0]));
  // the same query and key at positions (1, 0) and (6, 5): the same dot product
  auto q = at::randn({1, 1, d}).expand({5, 1, d}).contiguous(), k = at::randn({1, 1, d}).expand({5, 1, d}).contiguous();
  auto rq = apply_rope(q, make_rope(positions, d)), rk = apply_rope(k, make_rope(positions, d));
  EXPECT_NEAR((rq[1] * rk[0]).sum().item<double>(), (rq[3] * rk[2]).sum().item<double>(), 1e-5);
  EXPECT_EQ(apply_rope(x.to(at::kBFloat16), make_rope(positions, d)).scalar_type(), at::kBFloat16);
}

// The loader collates with its pool copying the images: the same batch as serial copies, blank
// images in the padded layout's absent camera slots, and the padded mask made on demand.
TEST(Collate, ImagesCopiedOnAPoolEqualSerialCopies) {
  auto shape = tiny();
  auto samples = make_samples(shape, 7, 4);
  ThreadPool pool(3);
  for (auto backend : {AttentionBackend::kVarlen, AttentionBackend::kPadded}) {
    auto serial = collate(ptrs(samples), shape, backend);
    auto pooled = collate(ptrs(samples), shape, backend, {.pin_images = false, .pool = &pool});
    SCOPED_TRACE(attention_backend_name(backend));
    EXPECT_TRUE(at::equal(serial.images, pooled.images));
    EXPECT_TRUE(at::equal(serial.prefix_gather, pooled.prefix_gather));
    EXPECT_TRUE(at::equal(serial.actions, pooled.actions));
  }
  // padded: sample 0 has one camera, in slot 0; its slots 1 and 2 are blank
  auto padded = collate(ptrs(samples), shape, AttentionBackend::kPadded, {.pin_images = false, .pool = &pool});
  EXPECT_TRUE(at::equal(padded.images[0], samples[0].images[0]));
  EXPECT_EQ(padded.images[1].abs().sum().item<float>(), 0.0f);
  EXPECT_EQ(padded.images[2].abs().sum().item<float>(), 0.0f);
  EXPECT_FALSE(padded.plan.mask.defined());
  auto plan = padded.plan.with_mask();
  const int64_t l = padded.plan.prefix_len + padded.plan.suffix_len;
  EXPECT_EQ(plan.mask.sizes(), (std::vector<int64_t>{7, 1, l, l}));
  // an action query of sample 0 sees its first image's tokens and no blank slot's
  const int64_t p = shape.vision.tokens();
  auto row = plan.mask[0][0][padded.plan.prefix_len];
  EXPECT_TRUE(row[0].item<bool>());
  EXPECT_FALSE(row[p].item<bool>());
}

// Two collations of the same samples have one shape key; a batch with a longer prompt, or
// with its prefix rounded up (filler), has another.
TEST(PolicyInputs, ShapeKeyFollowsTheTensorSizes) {
  auto shape = tiny();
  auto samples = make_samples(shape, 4, 3);
  auto key = collate(ptrs(samples), shape, AttentionBackend::kVarlen).shape_key();
  EXPECT_EQ(collate(ptrs(samples), shape, AttentionBackend::kVarlen).shape_key(), key);
  EXPECT_NE(collate(ptrs(samples), shape, AttentionBackend::kVarlen, {.prefix_multiple = 1000}).shape_key(), key);
  samples[0].prompt.push_back(1);
  EXPECT_NE(collate(ptrs(samples), shape, AttentionBackend::kVarlen).shape_key(), key);
  EXPECT_NE(collate(ptrs(samples), shape, AttentionBackend::kPadded).shape_key(), key);
}

TEST(Pi05Policy, PaddedSlotsDoNotLeakIntoRealTokens) {
  // the same samples, padded in a batch with a long-prompt, three-camera sample or alone
  auto shape = tiny();
  auto samples = make_samples(shape, 3, 2);
  at::manual_seed(3);
  Pi05Policy policy(shape);
  auto noise = at::randn({1, shape.horizon, shape.max_action_dim});
  auto time = at::full({1}, 0.4);
  std::vector<const PolicySample*> alone{&samples[0]};
  auto a = policy->loss(collate(alone, shape, AttentionBackend::kPadded), noise, time).loss.item<double>();
  auto b = policy->loss(collate(alone, shape, AttentionBackend::kVarlen), noise, time).loss.item<double>();
  EXPECT_NEAR(a, b, 1e-5 * std::abs(b));
}

TEST(Pi05Policy, TrainingLowersTheLossOnAFixedBatch) {
  auto shape = tiny();
  auto samples = make_samples(shape, 4, 3);
  auto in = collate(ptrs(samples), shape, AttentionBackend::kVarlen);
  at::set_num_threads(1);  // the tiny model's operations are too small to split
  at::manual_seed(11);
  Pi05Policy policy(shape);
  torch::optim::AdamW opt(policy->parameters(), torch::optim::AdamWOptions(3e-3).weight_decay(0));
  double first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    opt.zero_grad();
    auto out = policy->loss(in);
    out.loss.backward();
    opt.step();
    if (step < 5) first += out.loss.item<double>() / 5;
    if (step >= 295) last += out.loss.item<double>() / 5;
  }
  std::cout << "first " << first << " last " << last << "\n";
  EXPECT_LT(last, 0.4 * first) << "first " << first << " last " << last;
}

TEST(Pi05Policy, SampleActionsMatchesAnUncachedEulerLoop) {
  auto shape = tiny();
  shape.flow_steps = 4;
  auto samples = make_samples(shape, 3, 4);
  for (auto backend : {AttentionBackend::kVarlen, AttentionBackend::kPadded}) {
    auto in = collate(ptrs(samples), shape, backend);
    at::manual_seed(5);
    Pi05Policy policy(shape);
    auto noise = at::randn({3, shape.horizon, shape.max_action_dim});
    auto actions = policy->sample_actions(in, noise);
    ASSERT_EQ(actions.sizes(), noise.sizes());
    at::NoGradGuard no_grad;
    at::Tensor x = noise;
    for (int i = 0; i < shape.flow_steps; ++i) {
      auto t = at::full({3}, 1.0 - double(i) / shape.flow_steps);
      x = x - policy->velocity(in, x, t) / shape.flow_steps;
    }
    EXPECT_LT(max_rel_err(actions, x), 1e-5) << attention_backend_name(backend);
    EXPECT_TRUE(actions.isfinite().all().item<bool>());
  }
}

// K noisy chunks per sample in one cached pass (with_suffix_copies) give each copy the velocity
// that its own cached pass gives, and the same gradients as the K passes summed, with prefixes of
// varying length, with and without prefix filler.
TEST(Pi05Policy, SuffixCopiesOverOnePrefixCacheEqualSeparatePasses) {
  auto shape = tiny();
  auto samples = make_samples(shape, 4, 6);
  const int64_t n = 4, K = 3;
  for (int64_t multiple : {0, 64}) {
    auto in = collate(ptrs(samples), shape, AttentionBackend::kVarlen, {.prefix_multiple = multiple});
    at::manual_seed(8);
    Pi05Policy policy(shape);
    auto x = at::randn({K * n, shape.horizon, shape.max_action_dim});
    auto t = at::rand({K * n}) * 0.9 + 0.05;
    auto w = at::randn({K * n, shape.horizon, shape.max_action_dim});  // a loss weighting every output
    auto grads = [&] {
      std::vector<at::Tensor> g;
      for (const auto& p : policy->parameters())
        g.push_back(p.grad().defined() ? p.grad().clone() : at::zeros_like(p));
      policy->zero_grad();
      return g;
    };
    policy->zero_grad();
    auto cache = policy->prefix_cache(in);
    auto together = policy->velocity_cached(with_suffix_copies(in, K), cache, x, t);
    ASSERT_EQ(together.sizes(), x.sizes());
    (together * w).sum().backward();
    auto g_together = grads();
    std::vector<at::Tensor> apart;
    cache = policy->prefix_cache(in);
    for (int64_t j = 0; j < K; ++j) apart.push_back(policy->velocity_cached(in, cache, x.narrow(0, j * n, n), t.narrow(0, j * n, n)));
    auto v_apart = at::cat(apart);
    (v_apart * w).sum().backward();
    auto g_apart = grads();
    EXPECT_LT(max_rel_err(together, v_apart), 1e-5) << "filler multiple " << multiple;
    auto names = policy->named_parameters();
    for (size_t i = 0; i < g_apart.size(); ++i)
      EXPECT_LT(max_rel_err(g_together[i], g_apart[i]), 1e-4) << names[i].key() << ", filler multiple " << multiple;
  }
  auto padded = collate(ptrs(samples), shape, AttentionBackend::kPadded);
  EXPECT_THROW(with_suffix_copies(padded, 2), Error);
}

TEST(Pi05Policy, CollateRejectsSamplesThatDoNotFit) {
  auto shape = tiny();
  auto samples = make_samples(shape, 1, 5);
  samples[0].prompt.resize(shape.max_prompt + 1, 1);
  EXPECT_THROW(collate(ptrs(samples), shape, AttentionBackend::kVarlen), Error);
  samples = make_samples(shape, 1, 5);
  samples[0].images[0] = at::zeros({3, 8, 8});
  EXPECT_THROW(collate(ptrs(samples), shape, AttentionBackend::kPadded), Error);
  EXPECT_THROW(preset_shape("huge"), Error);
}

TEST(Pi05Policy, PresetParameterCountsMatchTheModules) {
  for (const char* preset : {"tiny"}) {
    auto shape = preset_shape(preset);
    Pi05Policy policy(shape);
    int64_t n = 0;
    for (const auto& p : policy->parameters()) n += p.numel();
    EXPECT_EQ(n, parameter_count(shape)) << preset;
  }
  EXPECT_GT(parameter_count(preset_shape("pi05")), int64_t(3'000'000'000));
}

TEST(Pi05Policy, Fp8TakesOnlyTheLanguageBackbonesFittingLayersAndLeavesTheWeightsAlone) {
  // a tiny policy whose language backbone has FP8-sized layers: width 512, heads 2 x 256, mlp 1024
  auto shape = tiny();
  shape.lm = {512, 2, 2, 1, 256, 1024};
  shape.expert = {128, 2, 2, 1, 256, 256};
  at::manual_seed(7);
  Pi05Policy plain(shape);
  at::manual_seed(7);
  Pi05Policy fp8(shape, PolicyOptions{.fp8 = true});
  // layer 1 (the last) computes only keys and values; k/v (512 -> 256) do not fit
  EXPECT_EQ(fp8_layer_names(fp8),
            (std::vector<std::string>{"lm.0.q", "lm.0.o", "lm.0.mlp.gate", "lm.0.mlp.up", "lm.0.mlp.down"}));
  EXPECT_TRUE(fp8_layer_names(plain).empty());
  // the same parameters under the same names: a checkpoint holds no FP8
  auto a = plain->named_parameters(), b = fp8->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& p : a) EXPECT_TRUE(at::equal(p.value(), b[p.key()])) << p.key();
  auto samples = make_samples(shape, 3, 2);
  auto in = collate(ptrs(samples), shape, AttentionBackend::kVarlen);
  auto noise = at::randn({3, shape.horizon, shape.max_action_dim});
  auto time = at::rand({3}) * 0.9 + 0.05;
  auto lp = plain->loss(in, noise, time).loss, lf = fp8->loss(in, noise, time).loss;
  lp.backward();
  lf.backward();
  const double gap = std::abs(lf.item<double>() - lp.item<double>()) / lp.item<double>();
  EXPECT_LT(gap, 0.02);
  EXPECT_GT(gap, 0.0);  // FP8 did run
  auto gp = plain->named_parameters()["lm.0.mlp.up.weight"].grad(), gf = fp8->named_parameters()["lm.0.mlp.up.weight"].grad();
  EXPECT_LT((gf - gp).norm().item<double>() / gp.norm().item<double>(), 0.15);
  // a layer FP8 does not touch (the expert) differs only through what FP8 changed upstream
  EXPECT_TRUE(fp8->named_parameters()["expert.0.q.weight"].grad().isfinite().all().item<bool>());
}

}  // namespace
}  // namespace ember::model
