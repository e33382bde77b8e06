// Activation checkpointing (model/activation_checkpoint.h) on CPU: the rerun in the backward pass
// gives the gradients of the plain block, for inputs and parameters alike, under the autocast
// state the forward pass saw even when the backward runs outside it; and the pi05 policy with
// --policy.gradient_checkpointing computes the same loss and gradients in both layouts.
#include <gtest/gtest.h>

#include <ATen/autocast_mode.h>

#include "ember/model/activation_checkpoint.h"
#include "ember/model/pi05.h"
#include "model/policy_test_util.h"

namespace ember::model {
namespace {

// y = W2 gelu(W1 x) + x, z = sum(y^2): two outputs, one parameter each
struct Block {
  at::Tensor w1 = at::randn({16, 8}).requires_grad_(), w2 = at::randn({8, 16}).requires_grad_();
  std::vector<at::Tensor> operator()(const std::vector<at::Tensor>& in) const {
    auto y = at::linear(at::gelu(at::linear(in[0], w1)), w2) + in[0];
    return {y, y.square().sum(-1)};
  }
};

struct Grads {
  at::Tensor x, w1, w2;
};

Grads grads_of(const Block& block, const at::Tensor& x0, bool checkpoint, bool autocast) {
  block.w1.mutable_grad().reset();
  block.w2.mutable_grad().reset();
  auto x = x0.detach().requires_grad_();
  std::vector<at::Tensor> out;
  at::autocast::set_autocast_enabled(at::kCPU, autocast);
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  out = checkpoint ? checkpointed(block, {x}) : block({x});
  at::autocast::set_autocast_enabled(at::kCPU, false);
  at::autocast::clear_cache();
  // the backward pass outside the autocast scope: the rerun must restore it
  (out[0].to(at::kFloat).sum() * 0.5 + out[1].to(at::kFloat).sum() * 0.01).backward();
  return {x.grad().clone(), block.w1.grad().clone(), block.w2.grad().clone()};
}

TEST(ActivationCheckpoint, RerunGivesThePlainBlocksGradients) {
  at::manual_seed(3);
  Block block;
  auto x = at::randn({5, 8});
  for (bool autocast : {false, true}) {
    auto plain = grads_of(block, x, false, autocast), rerun = grads_of(block, x, true, autocast);
    EXPECT_TRUE(at::equal(rerun.x, plain.x)) << "autocast " << autocast;
    EXPECT_TRUE(at::equal(rerun.w1, plain.w1)) << "autocast " << autocast;
    EXPECT_TRUE(at::equal(rerun.w2, plain.w2)) << "autocast " << autocast;
  }
  // bf16 autocast changes the gradients: the rerun did not silently run in float32
  auto fp32 = grads_of(block, x, true, false), bf16 = grads_of(block, x, true, true);
  EXPECT_FALSE(at::equal(fp32.w1, bf16.w1));
}

TEST(ActivationCheckpoint, KeepsNoGraphInsideTheBlock) {
  at::manual_seed(4);
  Block block;
  auto x = at::randn({5, 8}).requires_grad_();
  auto out = checkpointed(block, {x});
  ASSERT_TRUE(out[0].requires_grad());
  // the outputs' history is one node over the inputs, not the block's operations
  ASSERT_TRUE(out[0].grad_fn());
  EXPECT_EQ(out[0].grad_fn(), out[1].grad_fn());
  // without grad mode, or without an input needing gradients, the block just runs
  {
    at::NoGradGuard no_grad;
    EXPECT_FALSE(checkpointed(block, {x})[0].requires_grad());
  }
  auto plain_out = checkpointed(block, {x.detach()});
  EXPECT_NE(plain_out[0].grad_fn(), nullptr);  // the block's own graph (its weights need grads)
  EXPECT_NE(plain_out[0].grad_fn(), out[0].grad_fn());
}

PolicyShape tiny() { return test::tiny_pi05_shape(); }

std::vector<PolicySample> make_samples(const PolicyShape& shape, int n) {
  at::manual_seed(11);
  std::vector<PolicySample> out(n);
  for (int i = 0; i < n; ++i) {
    auto& s = out[i];
    for (int c = 0; c <= i % 2; ++c) {
      s.images.push_back(at::rand({3, shape.vision.image_size, shape.vision.image_size}) * 2 - 1);
      s.camera_slots.push_back(c);
    }
    for (int j = 0; j < 4 + i; ++j) s.prompt.push_back((i * 17 + j * 5) % int(shape.vocab));
    s.actions = at::randn({shape.horizon, 3 + i});
    s.action_is_pad = at::zeros({shape.horizon}, at::kBool);
  }
  return out;
}

TEST(ActivationCheckpoint, Pi05PolicyComputesTheSameLossAndGradients) {
  auto shape = tiny();
  auto samples = make_samples(shape, 4);
  at::manual_seed(5);
  Pi05Policy policy(shape);
  auto noise = at::randn({4, shape.horizon, shape.max_action_dim});
  auto time = at::rand({4}) * 0.9 + 0.05;
  for (auto backend : {AttentionBackend::kVarlen, AttentionBackend::kPadded}) {
    auto in = collate(test::ptrs(samples), shape, backend);
    auto run = [&](bool recompute) {
      policy->options.gradient_checkpointing = recompute;
      policy->vision->checkpoint_blocks = recompute;
      return test::loss_and_grads(policy, in, noise, time, /*bf16=*/false);
    };
    auto plain = run(false), rerun = run(true);
    EXPECT_EQ(rerun.loss, plain.loss) << attention_backend_name(backend);
    auto names = policy->named_parameters();
    for (size_t i = 0; i < plain.grads.size(); ++i)
      EXPECT_LT(test::max_rel_err(rerun.grads[i], plain.grads[i]), 1e-6) << attention_backend_name(backend) << " " << names[i].key();
  }
}

}  // namespace
}  // namespace ember::model
