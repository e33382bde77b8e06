// The scripted experts succeed on a sample of every task's evaluation init states, and the
// evaluation engine is deterministic for a seed whatever the number of environments.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/sim/env.h"
#include "ember/eval/evaluate.h"
#include "ember/sim/expert.h"
#include "ember/sim/scene.h"

namespace ember::sim {
namespace {

using eval::EvalOptions;
using eval::EvalResult;
using eval::evaluate;
using eval::format_table;
using eval::TaskResult;

EvalOptions options(int trials, int n_envs) {
  EvalOptions o;
  o.suite = "ember10";
  o.trials = trials;
  o.n_envs = n_envs;
  o.threads = 2;
  o.renderer = RendererKind::kNone;
  o.print_table = false;
  o.progress = false;
  return o;
}

TEST(SimExpert, SucceedsOnSampleOfEveryTask) {
  ExpertPolicy expert;
  EvalResult r = evaluate(options(4, 4), expert);
  ASSERT_EQ(r.tasks.size(), 10u);
  for (const TaskResult& t : r.tasks) EXPECT_GE(t.successes, 3) << t.name << ": " << t.successes << "/4";
  EvalOptions easy = options(4, 2);
  easy.suite = "easy";
  EvalResult e = evaluate(easy, expert);
  EXPECT_EQ(e.tasks[0].successes, 4);
}

// DART: the noise moves the arm, the label is what the expert meant (the clean action).
TEST(SimExpert, LabelIsTheActionWithoutNoise) {
  const TaskSpec& task = find_task("pick_red_into_tray");
  auto scene = Scene::load();
  Env env(scene);
  env.reset(task, eval_init_states(task)[0]);
  Observation obs;
  env.observe(&obs);
  ExpertConfig noisy;
  noisy.noise = 0.3;
  ExpertPolicy a(noisy), b(ExpertConfig{0.0, {}});
  EpisodeStart start{&task, 0, 7};
  a.reset(0, start), b.reset(0, start);
  PolicyInput in{0, &obs, &task, 0};
  Action executed = a.act({in})[0][0], clean = b.act({in})[0][0];
  for (int d = 0; d < 7; ++d) EXPECT_FLOAT_EQ(a.label(0)[d], clean[d]) << d;
  double moved = 0;
  for (int d = 0; d < 3; ++d) moved += std::abs(executed[d] - clean[d]);
  EXPECT_GT(moved, 1e-3);  // the executed action carries the noise
  for (int d = 3; d < 7; ++d) EXPECT_FLOAT_EQ(executed[d], clean[d]) << d;
}

TEST(SimExpert, EvaluationIsDeterministicAcrossEnvCounts) {
  ExpertPolicy a, b;
  EvalOptions o1 = options(2, 1), o3 = options(2, 3);
  o1.tasks = o3.tasks = {"push_red_to_pad", "stack_red_on_blue"};
  EvalResult r1 = evaluate(o1, a), r3 = evaluate(o3, b);
  ASSERT_EQ(r1.tasks.size(), r3.tasks.size());
  for (size_t i = 0; i < r1.tasks.size(); ++i) {
    EXPECT_EQ(r1.tasks[i].outcomes, r3.tasks[i].outcomes);
    EXPECT_DOUBLE_EQ(r1.tasks[i].mean_steps_success, r3.tasks[i].mean_steps_success);
  }
}

// A policy returning chunks: executed open loop for replan_steps, then asked again.
class CountingPolicy : public Policy {
 public:
  std::vector<ActionChunk> act(const std::vector<PolicyInput>& inputs) override {
    calls += int(inputs.size());
    for (const auto& in : inputs) steps_seen.push_back(in.step);
    return std::vector<ActionChunk>(inputs.size(), ActionChunk(8, Action{}));
  }
  bool needs_images() const override { return false; }
  int calls = 0;
  std::vector<int> steps_seen;
};

TEST(SimEvaluate, ChunksAreReplannedEveryReplanSteps) {
  CountingPolicy p;
  EvalOptions o = options(1, 1);
  o.suite = "easy";
  o.replan_steps = 5;
  EvalResult r = evaluate(o, p);
  EXPECT_EQ(r.tasks[0].successes, 0);
  EXPECT_EQ(p.calls, 80 / 5);
  EXPECT_EQ(p.steps_seen[1], 5);
}

}  // namespace
}  // namespace ember::sim
