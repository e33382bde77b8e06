// The GR00T-N1.5-style policy on CPU (tiny preset): its presets' shapes and parameter counts,
// the packed (varlen) and padded layouts computing the same loss and gradients, samples grouped
// by embodiment (each group through its own heads at its own widths), the frozen backbone, and
// the FLOP count.
#include <gtest/gtest.h>

#include <cmath>

#include <iostream>

#include "ember/core/error.h"
#include "ember/model/groot.h"
#include "model/policy_test_util.h"
#include <torch/optim/adamw.h>

namespace ember::model {
namespace {

GrootShape tiny() {
  auto s = groot_preset_shape("tiny");
  s.base.horizon = 6;
  s.base.max_action_dim = 12;
  s.base.max_prompt = 12;
  s.base.flow_steps = 3;
  s.dropout = 0;  // the layouts are compared function for function
  return s;
}

// samples with 1..3 cameras in varying slots, prompts of varying length, embodiment i % 3 (its
// state and action widths), some chunks ending early
std::vector<PolicySample> make_samples(const GrootShape& shape, int n, uint64_t seed) {
  at::manual_seed(seed);
  std::vector<PolicySample> out(n);
  const auto& b = shape.base;
  for (int i = 0; i < n; ++i) {
    auto& s = out[i];
    int cams = 1 + i % 3;
    for (int c = 0; c < cams; ++c) {
      s.images.push_back(at::rand({3, b.vision.image_size, b.vision.image_size}) * 2 - 1);
      s.camera_slots.push_back((c + i) % b.max_cameras);
    }
    int len = 3 + (i * 5) % (b.max_prompt - 3);
    for (int j = 0; j < len; ++j) s.prompt.push_back(int((i * 31 + j * 7) % b.vocab));
    s.embodiment = (i * 2) % 3;
    const auto& e = shape.embodiments[size_t(s.embodiment)];
    s.state = at::randn({e.state_dim});
    s.actions = at::randn({b.horizon, e.action_dim});
    s.action_is_pad = at::zeros({b.horizon}, at::kBool);
    if (i % 2) s.action_is_pad.narrow(0, b.horizon - 2, 2).fill_(true);
  }
  return out;
}

using test::max_rel_err;
using test::ptrs;

int64_t module_parameters(torch::nn::Module& m, bool backbone) {
  int64_t n = 0;
  for (const auto& p : m.named_parameters())
    if (is_backbone_param(p.key()) == backbone) n += p.value().numel();
  return n;
}

TEST(GrootShape, PresetsCountTheirParameters) {
  for (const char* preset : {"tiny", "small"}) {
    auto shape = groot_preset_shape(preset);
    GrootPolicy policy(shape);
    auto count = parameter_count(shape);
    EXPECT_EQ(module_parameters(*policy, true), count.backbone) << preset;
    EXPECT_EQ(module_parameters(*policy, false), count.head) << preset;
    std::cout << preset << ": " << count.backbone << " backbone + " << count.head << " head parameters\n";
  }
  // N1.5's shapes (docs/groot.md): 256 tokens per 224 px image (no pixel shuffle, one Linear into
  // the language model: N1.5's Eagle config), a 12-layer 2048-wide language model,
  // a DiT of 16 blocks 32 x 48 wide over 1 + 32 + 16 tokens, cross-attending to 2048-wide tokens,
  // 32 embodiments of 64 state and 32 action dimensions, 4 Euler steps
  auto n15 = groot_preset_shape("n15");
  EXPECT_EQ(n15.base.vision.out_tokens(), 256);
  EXPECT_EQ(n15.connector_layers, 1);
  EXPECT_EQ(n15.base.vocab, 151680);
  EXPECT_EQ(n15.base.lm.layers, 12);
  EXPECT_EQ(n15.base.lm.width, 2048);
  EXPECT_EQ(n15.inner(), 1536);
  EXPECT_EQ(n15.step_tokens(), 49);
  EXPECT_EQ(n15.backbone_dim, 2048);
  EXPECT_EQ(n15.embodiments.size(), 32u);
  EXPECT_EQ(n15.base.flow_steps, 4);
  auto c = parameter_count(n15);
  std::cout << "n15: " << c.backbone << " backbone + " << c.head << " head parameters\n";
  // by parts: the backbone is SigLIP (~0.41 B), 12 layers of Qwen3-1.7B's shape (~50 M each),
  // its 151680 x 2048 embedding and the connector; the head ~1.07 B (the DiT ~0.55 B, the 4 vl
  // self-attention blocks ~0.2 B, 32 embodiments' MLPs ~0.3 B)
  const int64_t lm_layer = 2048 * 16 * 128 * 2 + 2048 * 8 * 128 * 2 + 3 * 2048 * 6144 + 2 * 2048;
  EXPECT_GT(c.backbone, 12 * lm_layer + int64_t(151680) * 2048 + int64_t(4e8));
  EXPECT_LT(c.backbone, 12 * lm_layer + int64_t(151680) * 2048 + int64_t(4.4e8));
  EXPECT_GT(c.head, int64_t(9e8));
  EXPECT_LT(c.head, int64_t(1.2e9));
  EXPECT_THROW(groot_preset_shape("pi05"), Error);
  auto bad = tiny();
  bad.embodiments.assign(kMaxEmbodiments + 1, {4, 4});
  EXPECT_THROW(validate(bad), Error);
  bad = tiny();
  bad.embodiments[1].action_dim = bad.base.max_action_dim + 1;
  EXPECT_THROW(validate(bad), Error);
}

// The packed layout (absent cameras skipped, prefixes back to back, cross-attention with separate
// query and key offsets) and the padded one (fixed camera and prompt slots, masked) compute the
// same loss and gradients: every parameter's, the backbone's too (--policy.tune_backbone).
TEST(GrootPolicy, PackedAndPaddedComputeTheSameLossAndGradients) {
  auto shape = tiny();
  auto samples = make_samples(shape, 5, 1);
  auto batch = ptrs(samples);
  at::manual_seed(7);
  GrootPolicy policy(shape, /*tune_backbone=*/true);
  auto noise = at::randn({5, shape.base.horizon, shape.base.max_action_dim});
  auto time = at::rand({5}) * 0.9 + 0.05;
  auto grads_of = [&](const PolicyInputs& in) {
    auto r = test::loss_and_grads(policy, in, noise, time, /*bf16=*/false);
    return std::make_pair(r.loss, r.grads);
  };
  auto packed = collate(batch, shape.base, AttentionBackend::kVarlen);
  auto padded = collate(batch, shape.base, AttentionBackend::kPadded);
  EXPECT_LT(packed.prefix_rows(), padded.prefix_rows());
  EXPECT_LT(packed.images.size(0), padded.images.size(0));  // absent cameras cost nothing
  auto [loss_v, grad_v] = grads_of(packed);
  auto [loss_p, grad_p] = grads_of(padded);
  EXPECT_NEAR(loss_v, loss_p, 1e-4 * std::abs(loss_p));
  auto names = policy->named_parameters();
  int nonzero = 0;
  for (size_t i = 0; i < grad_v.size(); ++i) {
    EXPECT_LT(max_rel_err(grad_v[i], grad_p[i]), 1e-4) << names[i].key();
    if (grad_v[i].abs().max().item<double>() > 0) ++nonzero;
    else std::cout << "no gradient: " << names[i].key() << "\n";
  }
  EXPECT_GT(nonzero, int(grad_v.size()) * 9 / 10);
  // filler after the packed prefixes changes nothing either
  auto filled = collate(batch, shape.base, AttentionBackend::kVarlen, {.prefix_multiple = 64});
  ASSERT_GT(filled.plan.prefix_pad, 0);
  auto [loss_f, grad_f] = grads_of(filled);
  EXPECT_NEAR(loss_f, loss_v, 1e-5 * std::abs(loss_v));
  for (size_t i = 0; i < grad_v.size(); ++i) EXPECT_LT(max_rel_err(grad_f[i], grad_v[i]), 1e-4) << names[i].key();
  // and the sampled actions agree between the layouts
  auto a = policy->sample_actions(packed, noise), b = policy->sample_actions(padded, noise);
  EXPECT_LT(max_rel_err(a, b), 1e-4);
}

// A batch mixing embodiments is the sum of its embodiments' batches: each group's samples go
// through that embodiment's heads only, at its own state and action widths; a sample's actions do
// not depend on the other samples; past its embodiment's width the output is zero.
TEST(GrootPolicy, EmbodimentsAreGroupedNotPadded) {
  auto shape = tiny();
  auto samples = make_samples(shape, 6, 2);
  at::manual_seed(3);
  GrootPolicy policy(shape);
  auto noise = at::randn({6, shape.base.horizon, shape.base.max_action_dim});
  auto time = at::rand({6});
  auto mixed = policy->loss(collate(ptrs(samples), shape.base, AttentionBackend::kVarlen), noise, time);
  double sum = 0, count = 0;
  for (int e = 0; e < 3; ++e) {
    std::vector<const PolicySample*> group;
    std::vector<int64_t> rows;
    for (int i = 0; i < 6; ++i)
      if (samples[size_t(i)].embodiment == e) group.push_back(&samples[size_t(i)]), rows.push_back(i);
    ASSERT_FALSE(group.empty());
    auto idx = at::tensor(rows, at::kLong);
    auto out = policy->loss(collate(group, shape.base, AttentionBackend::kVarlen), noise.index_select(0, idx), time.index_select(0, idx));
    sum += out.loss_sum.item<double>();
    count += out.count.item<double>();
  }
  EXPECT_NEAR(mixed.loss_sum.item<double>(), sum, 1e-4 * sum);
  EXPECT_EQ(mixed.count.item<double>(), count);
  // the heads of an embodiment absent from the batch get no gradient
  std::vector<const PolicySample*> only0;
  for (const auto& s : samples)
    if (s.embodiment == 0) only0.push_back(&s);
  policy->zero_grad();
  policy->loss(collate(only0, shape.base, AttentionBackend::kVarlen)).loss.backward();
  for (const auto& p : policy->named_parameters()) {
    const bool other_head = p.key().rfind("heads.1.", 0) == 0 || p.key().rfind("heads.2.", 0) == 0;
    if (other_head) {
      EXPECT_FALSE(p.value().grad().defined()) << p.key();
    }
    if (p.key().rfind("heads.0.", 0) == 0) {
      EXPECT_TRUE(p.value().grad().defined()) << p.key();
    }
  }
  // inference: one sample alone gives the same chunk as inside the mixed batch
  auto all = policy->sample_actions(collate(ptrs(samples), shape.base, AttentionBackend::kVarlen), noise);
  std::vector<const PolicySample*> one{&samples[4]};
  auto alone = policy->sample_actions(collate(one, shape.base, AttentionBackend::kVarlen), noise.narrow(0, 4, 1));
  EXPECT_LT(max_rel_err(alone[0], all[4]), 1e-4);
  const int a = shape.embodiments[size_t(samples[4].embodiment)].action_dim;
  if (a < shape.base.max_action_dim) {
    EXPECT_EQ(all[4].narrow(1, a, shape.base.max_action_dim - a).abs().max().item<double>(), 0.0);
  }
  // an embodiment the policy lacks is refused, naming the sample
  auto bad = samples;
  bad[1].embodiment = 7;
  try {
    policy->loss(collate(ptrs(bad), shape.base, AttentionBackend::kVarlen));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sample 1: embodiment 7"), std::string::npos) << e.what();
  }
}

// A policy of one embodiment gathers nothing (GrootPolicyImpl::Groups, graph_safe): the same
// weights as embodiment 0 of a three-embodiment policy give the same loss, gradients and chunks
// on embodiment 0's samples; an embodiment it lacks is still refused.
TEST(GrootPolicy, OneEmbodimentComputesWhatItsHeadComputesAmongOthers) {
  auto three = tiny();
  auto one = three;
  one.embodiments = {three.embodiments[0]};
  auto all = make_samples(three, 6, 5);
  std::vector<PolicySample> samples;
  for (const auto& s : all)
    if (s.embodiment == 0) samples.push_back(s);
  ASSERT_GE(samples.size(), 2u);
  at::manual_seed(8);
  GrootPolicy a(three), b(one);
  EXPECT_FALSE(a->graph_safe());
  EXPECT_TRUE(b->graph_safe());
  {
    at::NoGradGuard no_grad;
    auto pa = a->named_parameters();
    for (auto& q : b->named_parameters()) q.value().copy_(pa[q.key()]);
  }
  const int64_t n = int64_t(samples.size());
  auto noise = at::randn({n, three.base.horizon, three.base.max_action_dim});
  auto time = at::rand({n});
  auto in = collate(ptrs(samples), three.base, AttentionBackend::kVarlen);
  auto la = a->loss(in, noise, time), lb = b->loss(in, noise, time);
  EXPECT_NEAR(la.loss.item<double>(), lb.loss.item<double>(), 1e-5);
  la.loss.backward();
  lb.loss.backward();
  auto ga = a->named_parameters();
  for (const auto& q : b->named_parameters()) {
    if (!q.value().grad().defined()) continue;  // the frozen backbone
    EXPECT_LT(max_rel_err(q.value().grad(), ga[q.key()].grad()), 1e-4) << q.key();
  }
  at::NoGradGuard no_grad;
  EXPECT_LT(max_rel_err(b->sample_actions(in, noise), a->sample_actions(in, noise)), 1e-5);
  auto bad = samples;
  bad[0].embodiment = 1;
  EXPECT_THROW(b->loss(collate(ptrs(bad), one.base, AttentionBackend::kVarlen)), Error);
}

// Frozen (the default): the backbone's parameters get no gradient and its forward keeps no graph;
// the rest trains, and a few steps of AdamW lower the loss.
TEST(GrootPolicy, FrozenBackboneGetsNoGradientAndTheHeadLearns) {
  auto shape = tiny();
  auto samples = make_samples(shape, 6, 4);
  auto in = collate(ptrs(samples), shape.base, AttentionBackend::kVarlen);
  at::manual_seed(5);
  GrootPolicy policy(shape);
  std::vector<at::Tensor> trained;
  for (const auto& p : policy->named_parameters()) {
    EXPECT_EQ(p.value().requires_grad(), !is_backbone_param(p.key())) << p.key();
    if (p.value().requires_grad()) trained.push_back(p.value());
  }
  auto noise = at::randn({6, shape.base.horizon, shape.base.max_action_dim});
  auto time = at::rand({6});
  torch::optim::AdamW opt(trained, torch::optim::AdamWOptions(3e-3).weight_decay(0));
  double first = 0, last = 0;
  for (int step = 0; step < 20; ++step) {
    opt.zero_grad();
    auto out = policy->loss(in, noise, time);
    out.loss.backward();
    opt.step();
    if (step == 0) first = out.loss.item<double>();
    last = out.loss.item<double>();
  }
  for (const auto& p : policy->named_parameters())
    if (is_backbone_param(p.key())) {
      EXPECT_FALSE(p.value().grad().defined()) << p.key();
    }
  std::cout << "loss " << first << " -> " << last << "\n";
  EXPECT_LT(last, 0.75 * first);
}

// Dropout (N1.5's 0.2 in the vl self-attention and DiT blocks) applies to the training loss only:
// two training losses differ, in eval mode the loss is the dropout-free policy's, and sampling
// never drops out.
TEST(GrootPolicy, InitialisedAsN15) {
  // diffusers' DiT / vl blocks, the timestep MLP and the output projections keep PyTorch's
  // default, uniform on +-1/sqrt(fan_in); the action head's MLPs, future tokens and positions
  // N(0, 0.02^2), as N1.5 sets them
  at::manual_seed(3);
  GrootPolicy p(tiny());
  auto params = p->named_parameters();
  auto uniform_default = [&](const std::string& name) {
    const auto& w = params[name];
    const double bound = 1.0 / std::sqrt(double(w.size(1)));
    EXPECT_LE(w.abs().max().item<double>(), bound * (1 + 1e-6)) << name;
    EXPECT_NEAR(w.std().item<double>(), bound / std::sqrt(3.0), 0.25 * bound / std::sqrt(3.0)) << name;
  };
  for (const char* n : {"dit.0.q.weight", "dit.0.ff2.weight", "dit.0.ada.weight", "vl.0.k.weight", "time1.weight", "time2.weight",
                        "out1.weight", "out2.weight"})
    uniform_default(n);
  for (const char* n : {"heads.0.act1.weight", "heads.0.dec2.weight", "future_tokens", "positions"})
    EXPECT_NEAR(params[n].std().item<double>(), 0.02, 0.006) << n;
}

TEST(GrootPolicy, TorchHeadInitRedrawsOnlyTheEmbodimentMlps) {
  // --policy.head_init=torch: the embodiment heads' linear layers as torch.nn.Linear starts them
  // (from scratch); everything else as N1.5 (above)
  at::manual_seed(3);
  GrootPolicy p(tiny(), false, /*torch_head_init=*/true);
  auto params = p->named_parameters();
  for (const char* n : {"heads.0.state1.weight", "heads.0.state2.weight", "heads.0.act1.weight", "heads.0.act2.weight",
                        "heads.1.act3.weight", "heads.2.dec1.weight", "heads.2.dec2.weight", "heads.2.dec2.bias"}) {
    const auto& w = params[n];
    const double bound = 1.0 / std::sqrt(double(params[std::string(n).substr(0, std::string(n).rfind('.')) + ".weight"].size(1)));
    EXPECT_LE(w.abs().max().item<double>(), bound * (1 + 1e-6)) << n;
    EXPECT_GT(w.abs().max().item<double>(), 0.5 * bound) << n;  // not N(0, 0.02^2) nor zeros
  }
  for (const char* n : {"future_tokens", "positions"}) EXPECT_NEAR(params[n].std().item<double>(), 0.02, 0.006) << n;
}

TEST(GrootPolicy, DropoutOnlyWhileTraining) {
  auto shape = tiny();
  auto samples = make_samples(shape, 4, 6);
  auto in = collate(ptrs(samples), shape.base, AttentionBackend::kVarlen);
  auto noise = at::randn({4, shape.base.horizon, shape.base.max_action_dim});
  auto time = at::rand({4});
  at::manual_seed(8);
  GrootPolicy plain(shape);
  shape.dropout = 0.3;
  at::manual_seed(8);
  GrootPolicy dropping(shape);  // the same weights
  const double exact = plain->loss(in, noise, time).loss.item<double>();
  const double a = dropping->loss(in, noise, time).loss.item<double>(), b = dropping->loss(in, noise, time).loss.item<double>();
  EXPECT_NE(a, b);
  EXPECT_NE(a, exact);
  EXPECT_LT(max_rel_err(dropping->sample_actions(in, noise), plain->sample_actions(in, noise)), 1e-6);
  dropping->eval();
  plain->eval();  // the same path (train mode may take other kernels: 7e-5 apart with N1.5's initialisation)
  EXPECT_NEAR(dropping->loss(in, noise, time).loss.item<double>(), plain->loss(in, noise, time).loss.item<double>(), 1e-6 * exact);
  EXPECT_NEAR(dropping->loss(in, noise, time).loss.item<double>(), exact, 1e-3 * exact);
  shape.dropout = 1;
  EXPECT_THROW(validate(shape), Error);
}

// The FLOP count: the padded layout computes more than the packed one; the frozen backbone's
// forward counts once, tuned three times; the packed batch's real work equals its layout's.
TEST(GrootPolicy, FlopsCountTheFrozenForwardOnce) {
  auto shape = tiny();
  auto samples = make_samples(shape, 5, 1);
  auto packed = collate(ptrs(samples), shape.base, AttentionBackend::kVarlen);
  auto padded = collate(ptrs(samples), shape.base, AttentionBackend::kPadded);
  GrootPolicy frozen(shape), tuned(shape, true);
  EXPECT_EQ(frozen->step_flops(packed, true), frozen->step_flops(packed, false));
  EXPECT_EQ(frozen->step_flops(padded, true), frozen->step_flops(packed, true));
  EXPECT_GT(frozen->step_flops(padded, false), frozen->step_flops(packed, false));
  EXPECT_GT(tuned->step_flops(packed, true), frozen->step_flops(packed, true));
  // by hand: a backbone-only work (no prefix tokens) is 2 x forward frozen, 6 x tuned
  const double one_image = groot_train_flops(shape, 1, {}, 0, false);
  EXPECT_NEAR(groot_train_flops(shape, 1, {}, 0, true), 3 * one_image, 1e-6 * one_image);
}

}  // namespace
}  // namespace ember::model
