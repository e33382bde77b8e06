// `ember rl`'s default recipe (rl_config.h: Flow-SDE exploration, 4 denoising steps, GRPO,
// executed-row log-probabilities) raises a supervised policy's closed-loop success, seed after
// seed: the tiny policy trained by `ember demo`'s recipe stopped at 600 of its 2500 steps, then
// 60 RL steps from it under three seeds, each evaluated on 200 trials. The RL runs are
// bit-exact on one machine (one request per rollout batch, one intra-op thread: rl_loop.h), so
// the outcome no longer follows the threads' timing (with dynamic batches, seed 2 reached 92.5,
// 91.5 and 84.0 % in three runs of one tree, and a clean-clone run failed the mean gain at 5.2).
// Across kinds of machine the CPU kernels round differently (README), hence several seeds and
// margins (a 200-trial figure has a standard error of about 3 points near 85 %): no seed loses
// more than that noise, and the mean gain is at least 6 points. On the development VM (AMD EPYC,
// 2026-12-05, two runs with equal figures): start 81.5 %, seeds 93.5 / 82.0 / 96.5 %, mean gain
// 9.2 points, 6 min 19 s on 2 cores. From the CLI's 71.5 % start (another collection, dynamic
// batches): 87.5, 81.5 and 93.5 % (bench/results/rl_sde_cpu_2026-12-03.md).
#include <gtest/gtest.h>

#include <cstdio>

#include "ember/eval/checkpoint_policy.h"
#include "ember/eval/evaluate.h"
#include "ember/rl/rl_loop.h"
#include "ember/sim/collect.h"
#include "ember/train/train_config.h"
#include "ember/train/trainer.h"
#include "rl_loop_util.h"
#include "test_util.h"

namespace ember::rl {
namespace {

double closed_loop_success(const std::string& checkpoint) {
  eval::CheckpointSimPolicy policy(checkpoint, "cpu", 0);
  eval::EvalOptions e;
  e.suite = "easy";
  e.trials = 200;
  e.n_envs = 20;
  e.seed = 1;
  e.replan_steps = 5;
  e.image_size = 64;
  e.renderer = sim::default_renderer();
  e.videos = false;
  e.print_table = false;
  e.progress = false;
  return eval::evaluate(e, policy).average_success;
}

TEST(RlRecipe, RaisesASupervisedTinyPolicyOnEasyUnderEverySeed) {
  if (!have_renderer()) GTEST_SKIP() << "no offscreen renderer (OSMesa/EGL) on this machine";
  test::TempDir dir("rl_recipe");
  sim::CollectOptions col;
  col.suite = "easy";
  col.episodes_per_task = 60;
  col.output_dir = dir.path() + "/data";
  col.image_size = 64;
  col.n_envs = 2;
  col.renderer = sim::default_renderer();
  col.progress = false;
  sim::collect(col);
  auto trained = train::train(train::parse_train_flags(
      {"--dataset.root=" + col.output_dir, "--output_dir=" + dir.path() + "/sft", "--device=cpu", "--policy.preset=tiny",
       "--policy.horizon=10", "--dataset.image_size=32", "--steps=600", "--batch_size=32", "--optimizer.lr=3e-3",
       "--optimizer.weight_decay=0", "--scheduler.warmup_steps=50", "--log_freq=600", "--save_freq=600", "--num_workers=2",
       "--seed=0"}));
  const double start = closed_loop_success(trained.last_checkpoint);
  std::printf("supervised start: %.1f %% over 200 trials\n", 100 * start);
  double gain = 0;
  for (int seed = 1; seed <= 3; ++seed) {
    RlConfig c;  // the recipe's defaults, sized for 2 cores
    c.checkpoint = trained.last_checkpoint;
    c.output_dir = dir.path() + "/rl_" + std::to_string(seed);
    c.suite = "easy";
    c.device = "cpu";
    c.seed = seed;
    c.mode = "sync";
    c.iterations = 60;
    c.groups_per_step = 4;
    c.group_size = 8;
    c.env_workers = 2;
    c.envs_per_worker = 4;
    c.max_batch = 1;    // one request per rollout batch and one intra-op thread: bit-exact on one
    c.cpu_threads = 1;  // machine (rl_loop.h), so the outcome does not follow the threads' timing
    c.micro_batch = 64;
    c.replan_steps = 5;
    c.camera_size = 64;
    auto r = run_rl(c);
    ASSERT_EQ(r.iterations.size(), 60u);
    const double after = closed_loop_success(r.last_checkpoint);
    int64_t env_steps = 0;
    for (const auto& it : r.iterations) env_steps += it.env_steps;
    std::printf("seed %d: %.1f %% -> %.1f %% after 60 steps (%lld env steps)\n", seed, 100 * start, 100 * after, (long long)env_steps);
    std::fflush(stdout);
    EXPECT_GE(after, start - 0.03) << "seed " << seed << " made the policy worse";
    gain += (after - start) / 3;
  }
  EXPECT_GT(gain, 0.06);
}

}  // namespace
}  // namespace ember::rl
