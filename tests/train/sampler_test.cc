// The inference engine's padded inputs (train/sampler.h) on the CPU: the buckets, the prompt
// filler and the repeated samples change no chunk. The CUDA graphs themselves: train_gpu_test.
#include <gtest/gtest.h>

#include "ember/core/error.h"
#include "ember/model/pi05.h"
#include "ember/train/inference.h"
#include "ember/train/sampler.h"
#include "model/policy_test_util.h"

namespace ember::train {
namespace {

using model::PolicySample;

using model::test::inference_samples;

TEST(Collate, TextMultipleRoundsThePromptsUpInTheFillerSegment) {
  auto shape = model::test::tiny_pi05_shape();
  auto samples = inference_samples(shape, 3, 1);
  auto p = model::test::ptrs(samples);
  auto plain = model::collate(p, shape, model::AttentionBackend::kVarlen);
  auto padded = model::collate(p, shape, model::AttentionBackend::kVarlen, {.text_multiple = 16});
  const int64_t text = plain.text_ids.size(0), rounded = (text + 15) / 16 * 16;
  EXPECT_EQ(padded.text_ids.size(0), rounded);
  EXPECT_EQ(padded.plan.prefix_pad, rounded - text);
  EXPECT_EQ(padded.prefix_rows(), plain.prefix_rows() + rounded - text);
  // the samples' own rows, positions and joint keys are the plain batch's
  EXPECT_TRUE(at::equal(padded.prefix_gather.narrow(0, 0, plain.prefix_rows()), plain.prefix_gather));
  EXPECT_TRUE(at::equal(padded.plan.cu_joint, plain.plan.cu_joint));
  EXPECT_TRUE(at::equal(padded.plan.cu_prefix.narrow(0, 0, 4), plain.plan.cu_prefix));
  // with prefix_multiple on top, one filler segment covers both
  auto both = model::collate(p, shape, model::AttentionBackend::kVarlen, {.prefix_multiple = 64, .text_multiple = 16});
  EXPECT_EQ(both.prefix_rows() % 64, 0);
  EXPECT_EQ(both.text_ids.size(0), rounded);
  EXPECT_EQ(both.plan.cu_prefix.size(0), 5);
  // prompts whose total differs within the multiple give one shape
  auto other = inference_samples(shape, 3, 1);
  other[0].prompt.pop_back();
  if (other[0].prompt.empty()) other[0].prompt.push_back(3);
  auto q = model::test::ptrs(other);
  auto padded2 = model::collate(q, shape, model::AttentionBackend::kVarlen, {.text_multiple = 64});
  EXPECT_EQ(padded2.shape_key(), model::collate(p, shape, model::AttentionBackend::kVarlen, {.text_multiple = 64}).shape_key());
}

// The padded path (the graph's inputs, run eagerly) samples sample_chunks's chunks: batches of
// 1, 3 (bucket 4: one sample repeated) and 5 (bucket 8), prompts rounded up to 8 tokens, given
// noise and noise drawn from the generator.
TEST(Sampler, PaddedBucketsSampleWhatEagerSamples) {
  auto shape = model::test::tiny_pi05_shape();
  at::manual_seed(3);
  model::Pi05Policy policy(shape);
  policy->eval();
  const at::Device cpu(at::kCPU);
  Sampler padded(*policy, shape, cpu, {.text_multiple = 8, .mode = SamplerMode::kStatic});
  Sampler eager(*policy, shape, cpu);
  EXPECT_EQ(eager.mode(), SamplerMode::kEager);  // no CUDA: eager by default
  for (int n : {1, 3, 5}) {
    auto samples = inference_samples(shape, n, uint64_t(n));
    auto p = model::test::ptrs(samples);
    auto noise = at::randn({n, shape.horizon, shape.max_action_dim});
    auto want = sample_chunks(*policy, shape, p, cpu, noise);
    auto got = padded.sample(p, noise);
    ASSERT_EQ(got.sizes(), want.sizes());
    EXPECT_LT(model::test::max_rel_err(got, want), 1e-5) << "batch " << n;
    EXPECT_LT(model::test::max_rel_err(eager.sample(p, noise), want), 1e-6) << "batch " << n;
    // noise from the generator: the same draws as sample_actions makes
    at::manual_seed(11);
    auto drawn = padded.sample(p);
    at::manual_seed(11);
    EXPECT_LT(model::test::max_rel_err(drawn, sample_chunks(*policy, shape, p, cpu)), 1e-5) << "batch " << n;
  }
  EXPECT_EQ(padded.stats().captures, 0);
}

TEST(Sampler, RefusesNoiseOfAnotherShape) {
  auto shape = model::test::tiny_pi05_shape();
  model::Pi05Policy policy(shape);
  policy->eval();
  Sampler padded(*policy, shape, at::Device(at::kCPU), {.mode = SamplerMode::kStatic});
  auto samples = inference_samples(shape, 2, 1);
  auto p = model::test::ptrs(samples);
  EXPECT_THROW(padded.sample(p, at::randn({1, shape.horizon, shape.max_action_dim})), Error);
  EXPECT_THROW(Sampler(*policy, shape, at::Device(at::kCPU), {.mode = SamplerMode::kGraphs}), Error);
}

}  // namespace
}  // namespace ember::train
