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
