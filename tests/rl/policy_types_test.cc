// Every registered policy type through the whole life of a policy on the CPU (tiny): collect a
// few demonstrations, train, checkpoint, resume, predict, evaluate closed loop, fine-tune by RL
// from the checkpoint and resume that. A type that lacks a command fails here, not in a user's hands.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "ember/core/json_file.h"
#include "ember/eval/checkpoint_policy.h"
#include "ember/eval/evaluate.h"
#include "ember/model/policy_type.h"
#include "ember/rl/rl_loop.h"
#include "ember/sim/collect.h"
#include "ember/train/checkpoint_dir.h"
#include "ember/train/policy_checkpoint.h"
#include "ember/train/predict.h"
#include "ember/train/trainer.h"
#include "rl_loop_util.h"
#include "test_util.h"

namespace ember::rl {
namespace {

namespace fs = std::filesystem;

class PolicyTypes : public ::testing::TestWithParam<std::string> {};

// one dataset for every type: 4 expert episodes of the easy task, 32 px images
const std::string& demonstrations() {
  static test::TempDir dir("policy_types_data");
  static const std::string root = [] {
    sim::CollectOptions c;
    c.suite = "easy";
    c.episodes_per_task = 4;
    c.output_dir = dir.path() + "/data";
    c.image_size = 32;
    c.renderer = sim::default_renderer();
    c.camera_dtype = "image";
    c.progress = false;
    sim::collect(c);
    return c.output_dir;
  }();
  return root;
}

TEST_P(PolicyTypes, TrainResumePredictEvalRl) {
  if (!have_renderer()) GTEST_SKIP() << "no offscreen renderer (OSMesa/EGL) on this machine";
  const std::string type = GetParam();
  test::TempDir dir("policy_types_" + type);
  const std::string run = dir.path() + "/train";

  // train 4 steps, then resume to 6
  auto flags = [&](int steps) {
    return train::parse_train_flags({"--dataset.root=" + demonstrations(), "--output_dir=" + run, "--device=cpu",
                                     "--policy.type=" + type, "--policy.preset=tiny", "--policy.horizon=8",
                                     "--policy.num_steps=3", "--dataset.image_size=32", "--batch_size=4",
                                     "--steps=" + std::to_string(steps), "--save_freq=2", "--num_workers=1", "--seed=3",
                                     "--log_freq=1"});
  };
  auto first = train::train(flags(4));
  ASSERT_EQ(first.steps_done, 4);
  auto config = flags(6);
  config.resume = true;
  auto resumed = train::train(config);
  EXPECT_EQ(resumed.first_step, 4);
  ASSERT_EQ(resumed.steps_done, 6);
  for (const auto& [step, loss] : resumed.losses) EXPECT_TRUE(std::isfinite(loss)) << "step " << step;
  auto policy_json = read_json_file(resumed.last_checkpoint + "/policy.json");
  EXPECT_EQ(model::policy_type_of(policy_json), type);

  // predict one chunk from the checkpoint
  auto bundle = train::load_policy(resumed.last_checkpoint, at::kCPU);
  EXPECT_EQ(bundle.module->type(), type);
  auto p = train::predict_chunk(bundle, demonstrations(), 3, at::kCPU);
  ASSERT_EQ(p.predicted.size(), 8u);
  for (const auto& row : p.predicted)
    for (float x : row) EXPECT_TRUE(std::isfinite(x));

  // evaluate closed loop (2 trials)
  eval::CheckpointSimPolicy sim_policy(resumed.last_checkpoint, "cpu", 0);
  eval::EvalOptions e;
  e.suite = "easy";
  e.trials = 2;
  e.image_size = 32;
  e.replan_steps = 4;
  e.renderer = sim::default_renderer();
  e.progress = false;
  auto result = eval::evaluate(e, sim_policy);
  ASSERT_EQ(result.tasks.size(), 1u);
  EXPECT_EQ(result.tasks[0].trials, 2);

  // RL from the checkpoint: one sync step, then resumed for a second
  auto c = exact_tiny_run(dir.path() + "/rl");
  c.policy.preset.clear();
  c.checkpoint = resumed.last_checkpoint;
  c.image_size = 32;
  c.groups_per_step = 2;
  c.group_size = 2;
  c.iterations = 1;
  auto r1 = run_rl(c);
  ASSERT_EQ(r1.iterations.size(), 1u);
  EXPECT_TRUE(std::isfinite(r1.iterations[0].learner.kl));
  c.resume = true;
  c.iterations = 2;
  auto r2 = run_rl(c);
  ASSERT_EQ(r2.iterations.size(), 1u);
  EXPECT_EQ(r2.iterations[0].step, 2);
  auto after = train::load_policy(r2.last_checkpoint, at::kCPU);
  EXPECT_EQ(after.module->type(), type);
}

// a fresh policy of each type trains under RL too (--policy.type with --policy.preset)
TEST_P(PolicyTypes, FreshPolicyRunsRl) {
  if (!have_renderer()) GTEST_SKIP() << "no offscreen renderer (OSMesa/EGL) on this machine";
  test::TempDir dir("policy_types_fresh_" + GetParam());
  auto c = exact_tiny_run(dir.path());
  c.policy.type = GetParam();
  c.groups_per_step = 2;
  c.group_size = 2;
  c.iterations = 1;
  auto r = run_rl(c);
  ASSERT_EQ(r.iterations.size(), 1u);
  EXPECT_EQ(train::load_policy(r.last_checkpoint, at::kCPU).module->type(), GetParam());
}

std::vector<std::string> registered() {
  std::vector<std::string> names;
  for (const auto& t : model::policy_types()) names.push_back(t.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Registered, PolicyTypes, ::testing::ValuesIn(registered()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ember::rl
