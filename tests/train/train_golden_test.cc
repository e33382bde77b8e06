// Golden per-step losses of a fixed-seed CPU run (tiny preset, the v3.0 fixture dataset),
// pinned bit for bit: a refactor that does not change the math must reproduce them exactly
// (torchtitan's rule). A deliberate change of the math re-pins them, saying why in its commit.
// They hold with ATen's AVX2 kernels, which CTest selects for this test (ATEN_CPU_CAPABILITY=avx2,
// tests/train/CMakeLists.txt): with AVX-512 kernels, on a machine that has them, the last bits of
// steps 3, 5 and 7 differ. Run by hand, set the variable too.
// The BLAS under libtorch (MKL) still picks its GEMM kernels by processor, and no MKL setting
// reproduces one machine's bits on another, so there is one pinned run per kind of machine this
// project's sessions and CI have run on; a run must equal one of them bit for bit, or, on a kind
// of machine not pinned yet, the first within kTolerance (saying so).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "ember/train/trainer.h"
#include "test_util.h"

namespace ember::train {
namespace {

const std::string kFixture = std::string(EMBER_TEST_DATA) + "/lerobot_v3_0";

// Printed as C99 hex floats by the test when they differ: paste them here to re-pin.
struct Pinned {
  const char* machine;
  std::vector<double> losses;
};
const std::vector<Pinned> kGolden = {
    // 2026-12-04: re-pinned for video frames decoded at their stored size and resized with
    // io::resize_bilinear (the dataset's change: the processor's filter, not libswscale's). The
    // Intel AMX machine's pin of the old inputs (steps 4 and 7 differed in their last bit) is
    // not reproducible here; such a machine passes by kTolerance until it is pinned again.
    {"AMD EPYC (the development VM of 2026-12-04; earlier sessions' VMs were of this kind too)",
     {0x1.fe8cap+0, 0x1.0e3dbcp+1, 0x1.d7fb9p+0, 0x1.1132cp+1, 0x1.e68c9cp+0, 0x1.01ce56p+1, 0x1.ec775cp+0, 0x1.fa05dp+0,
      0x1.f62d14p+0, 0x1.e5148ep+0, 0x1.0701c2p+1, 0x1.01f3ep+1}},
};
// A machine of another kind (its GEMM kernels round differently) must still equal the first
// pin this closely: machines differ in the last bits (~1e-7 relative), a change of the math by
// far more (the resize change moved step 1 by 4e-4).
constexpr double kTolerance = 1e-5;

TEST(TrainGolden, TinyRunReproducesPinnedLossesBitForBit) {
  test::TempDir dir;
  auto config = parse_train_flags({"--dataset.root=" + kFixture, "--output_dir=" + dir.path() + "/run", "--device=cpu",
                                   "--steps=12", "--batch_size=16", "--optimizer.lr=3e-3", "--scheduler.warmup_steps=4",
                                   "--policy.horizon=10", "--dataset.image_size=32", "--num_workers=1", "--log_freq=50",
                                   "--save_freq=100000", "--seed=7"});
  TrainerHooks hooks;
  hooks.quiet = true;
  auto result = train(config, hooks);
  std::vector<double> losses;
  for (const auto& [step, loss] : result.losses) losses.push_back(loss);
  std::string printed;
  for (double l : losses) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a, ", l);
    printed += buf;
  }
  std::printf("losses: %s\n", printed.c_str());
  ASSERT_EQ(losses.size(), 12u);
  std::string report;
  for (const auto& pin : kGolden) {
    ASSERT_EQ(pin.losses.size(), losses.size()) << pin.machine;
    if (pin.losses == losses) return;  // bit for bit
    report += std::string("\n  ") + pin.machine + ": differs at step";
    for (size_t i = 0; i < losses.size(); ++i)
      if (losses[i] != pin.losses[i]) report += " " + std::to_string(i + 1);
  }
  bool close = true;
  for (size_t i = 0; i < losses.size(); ++i) close &= std::abs(losses[i] - kGolden[0].losses[i]) <= kTolerance * std::abs(kGolden[0].losses[i]);
  if (close) {
    std::printf("equal to no pinned run bit for bit, but within %g of the first: another kind of machine (pin it)%s\n", kTolerance,
                report.c_str());
    return;
  }
  ADD_FAILURE() << "the losses equal no pinned run:" << report << "\nnow: {" << printed << "}";
}

// The mean loss of the first and of the last ten steps of a CPU run on the whole v3.0 fixture
// (seed 7, lr 3e-3, one loader thread) with `flags` added, printed.
std::pair<double, double> first_and_last_losses(std::vector<std::string> flags, int64_t steps) {
  test::TempDir dir;
  flags.insert(flags.end(), {"--dataset.root=" + kFixture, "--output_dir=" + dir.path() + "/run", "--device=cpu",
                             "--policy.preset=tiny", "--seed=7", "--log_freq=100", "--optimizer.lr=3e-3",
                             "--steps=" + std::to_string(steps), "--save_checkpoint=false", "--num_workers=1"});
  TrainerHooks hooks;
  hooks.quiet = true;
  auto result = train(parse_train_flags(flags), hooks);
  EXPECT_EQ(result.losses.size(), size_t(steps));
  if (result.losses.size() < 20) return {0, 0};
  auto mean = [&](size_t from) {
    double s = 0;
    for (size_t i = from; i < from + 10; ++i) s += result.losses[i].second;
    return s / 10;
  };
  const double first = mean(0), last = mean(result.losses.size() - 10);
  std::printf("mean loss: steps 1-10 %.5f, the last ten %.5f\n", first, last);
  return {first, last};
}

// Learning itself, over 300 steps: issue 38's command (the tiny policy on the whole v3.0 fixture,
// lr 3e-3, seed 7). Measured 2026-12-03 at c3a3c3a (before the restructure) and at e84bbaa, bit
// for bit the same on one machine: the mean loss of steps 1-10 is 1.96852, of steps 291-300
// 1.24380 (1.6x lower; this command learns no faster: 5 episodes, 50-step chunks, weight decay
// 0.01). Not bit for bit across machines (MKL's kernels): the first ten steps within 0.1 %, the
// last ten within 5 %, far tighter than a policy that stopped learning (it stays near 1.97).
TEST(TrainGolden, ThreeHundredStepsLearnAsPinned) {
  const auto [first, last] = first_and_last_losses({"--policy.type=pi05"}, 300);
  EXPECT_NEAR(first, 1.96852, 1.96852 * 1e-3);
  EXPECT_NEAR(last, 1.24380, 1.24380 * 0.05);
}

// groot tiny with the from-scratch flags (docs/groot.md), 1000 steps: 1.9384 -> 1.2557, measured
// on the development VM, 2026-12-03 (N1.5's defaults: 1.36 -> 1.23 in 300 steps, near the loss of
// predicting the mean velocity). The same tolerances.
TEST(TrainGolden, GrootFromScratchLearnsAsPinned) {
  const auto [first, last] = first_and_last_losses({"--policy.type=groot", "--policy.head_init=torch", "--policy.normalization=auto",
                                                    "--policy.state_in_prompt=true", "--policy.loss_on_padded_steps=false",
                                                    "--policy.dropout=0"},
                                                   1000);
  EXPECT_NEAR(first, 1.93836, 1.93836 * 1e-3);
  EXPECT_NEAR(last, 1.25572, 1.25572 * 0.05);
  EXPECT_LT(last, 0.75 * first);
}

}  // namespace
}  // namespace ember::train
