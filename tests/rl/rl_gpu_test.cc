// `ember rl` on CUDA: --rl.placement=split puts the rollout on a GPU of its own (cuda:1 beside
// the learner's cuda:0); the loop runs and learns as with the shared placement.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cmath>

#include "rl_loop_util.h"
#include "test_util.h"

namespace ember::rl {
namespace {

TEST(RlLoopCuda, SplitPlacementRunsTheRolloutOnItsOwnGpu) {
  if (torch::cuda::device_count() < 2) GTEST_SKIP() << "fewer than two CUDA devices: --rl.placement=split needs two";
  if (!have_renderer()) GTEST_SKIP() << "no offscreen renderer (OSMesa/EGL) on this machine";
  test::TempDir dir("rl_split");
  auto c = tiny_run(dir.path() + "/shared");
  c.device = "cuda";
  c.mode = "sync";
  c.max_batch = 1;
  c.iterations = 2;
  auto shared = run_rl(c);
  c.output_dir = dir.path() + "/split";
  c.placement = "split";
  auto split = run_rl(c);
  ASSERT_EQ(shared.iterations.size(), 2u);
  ASSERT_EQ(split.iterations.size(), 2u);
  // the first step: the same episodes on the same weights (bf16 kernels of two GPUs of a kind)
  const auto &a = shared.iterations[0].learner, &b = split.iterations[0].learner;
  EXPECT_NEAR(a.ret, b.ret, 2e-2 * std::max(1.0, std::abs(a.ret)));
  EXPECT_NEAR(a.grad_norm, b.grad_norm, 2e-2 * a.grad_norm);
  EXPECT_GT(split.iterations[1].learner.kl, 0);  // the swapped weights moved the rollout's policy
  EXPECT_GT(split.iterations[1].rollout_busy, 0);
}

}  // namespace
}  // namespace ember::rl

#include "ember/model/pi05.h"
#include "ember/model/tokenizer.h"
#include "ember/rl/rollout_server.h"
#include "model/policy_test_util.h"

namespace ember::rl {
namespace {

// The rollout's CUDA graphs answer what its eager sampling answers: the same draws (the seeds),
// chains to bf16 rounding, the same log-probabilities; after a weight swap, the new weights'.
TEST(RolloutServerCuda, GraphsAnswerWhatEagerSamplingAnswers) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
  const at::Device cuda(at::kCUDA, 0);
  auto shape = model::test::tiny_pi05_shape();
  shape.flow_steps = 4;
  at::manual_seed(5);
  model::Pi05Policy policy(shape), other(shape);
  policy->to(cuda), other->to(cuda);
  policy->eval(), other->eval();
  model::FeatureSpec spec;
  spec.cameras = {"observation.images.a", "observation.images.b", "observation.images.c"};
  spec.state_dim = 8, spec.action_dim = 7;
  model::TokenizerTrainOptions to;
  to.vocab_size = 300;
  const std::vector<std::string> texts = {"pick the red cube", "push the blue block to the pad", "press the button"};
  auto tokenizer = model::train_tokenizer(texts, to);
  model::SampleBuilder builder(spec, shape, tokenizer);
  const FlowNoise noise{.sigma = 0.5, .action_dim = 7, .method = NoiseMethod::kSde, .rows = 3};
  auto samples = model::test::inference_samples(shape, 6, 9);
  auto answers = [&](bool graphs, const std::function<void(RolloutServer&)>& before = nullptr) {
    RolloutServer server(policy.ptr(), builder, noise, cuda, {.max_batch = 8, .timeout_ms = 20, .cuda_graphs = graphs}, 0);
    if (before) before(server);
    std::vector<std::future<PolicyResponse>> futures;
    for (size_t i = 0; i < samples.size(); ++i) futures.push_back(server.submit(samples[i], 100 + i));
    std::vector<PolicyResponse> out;
    for (auto& f : futures) out.push_back(f.get());
    if (graphs) EXPECT_GE(server.graph_captures(), 1);
    else EXPECT_EQ(server.graph_captures(), 0);
    return out;
  };
  auto expect_same = [&](const std::vector<PolicyResponse>& got, const std::vector<PolicyResponse>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].noisy_step, want[i].noisy_step) << what << " " << i;
      EXPECT_LT(model::test::max_rel_err(got[i].chain, want[i].chain), 2e-2) << what << " " << i;
      EXPECT_LT((got[i].log_prob - want[i].log_prob).abs().max().item<double>(), 1e-2 * (1 + want[i].log_prob.abs().max().item<double>()))
          << what << " " << i;
    }
  };
  auto eager = answers(false);
  expect_same(answers(true), eager, "graphs");
  // graphs captured, then new weights copied in: the answers follow them
  auto swapped = answers(true, [&](RolloutServer& server) {
    std::vector<std::future<PolicyResponse>> warm;
    for (size_t i = 0; i < samples.size(); ++i) warm.push_back(server.submit(samples[i], 7));
    for (auto& f : warm) f.get();
    server.swap_weights(*other, 1);
  });
  auto eager_other = answers(false);  // policy now holds other's weights
  expect_same(swapped, eager_other, "after the swap");
  EXPECT_GT(model::test::max_rel_err(eager_other[0].chain, eager[0].chain), 1e-2);  // the weights did change the chains
}

}  // namespace
}  // namespace ember::rl
