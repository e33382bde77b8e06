// The scripted experts succeed on a sample of every task's evaluation init states, and the
// evaluation engine is deterministic for a seed whatever the number of environments.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <array>

#include "ember/sim/env.h"
#include "ember/eval/evaluate.h"
#include "ember/sim/expert.h"
#include "ember/sim/rollout.h"
#include "ember/sim/scene.h"
#include "ember/sim/vector_env.h"

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

// The average's standard error: the tasks' binomial variances, p (1 - p) / n, summed, square
// rooted, over the task count; a task at 0 or 100 % adds nothing. evaluate() fills it and the
// table prints it.
TEST(SimEvaluate, TheAverageCarriesItsStandardError) {
  auto task = [](int successes, int trials) {
    TaskResult t;
    t.name = "t", t.family = "f", t.successes = successes, t.trials = trials;
    return t;
  };
  EXPECT_NEAR(eval::average_success_stderr({task(44, 50), task(23, 50)}), std::sqrt(0.88 * 0.12 / 50 + 0.46 * 0.54 / 50) / 2, 1e-12);
  EXPECT_NEAR(eval::average_success_stderr({task(50, 50), task(10, 20)}), std::sqrt(0.25 / 20) / 2, 1e-12);
  EXPECT_EQ(eval::average_success_stderr({task(50, 50), task(0, 50)}), 0.0);
  EXPECT_EQ(eval::average_success_stderr({}), 0.0);

  ExpertPolicy expert;
  EvalOptions o = options(4, 2);
  o.tasks = {"push_red_to_pad", "stack_red_on_blue"};
  EvalResult r = evaluate(o, expert);
  EXPECT_DOUBLE_EQ(r.average_stderr, eval::average_success_stderr(r.tasks));
  r.average_success = 0.74, r.average_stderr = 0.0193;
  EXPECT_NE(format_table(r).find("74.0%   +- 1.9 (standard error)"), std::string::npos) << format_table(r);
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

// A policy that answers env 0 only after `delay` polls (the others at once), as a server under
// load may: through submit() and poll().
class SlowEnvZero : public Policy {
 public:
  SlowEnvZero(Policy& inner, int delay) : inner_(inner), delay_(delay) {}
  void reset(int env, const EpisodeStart& e) override { inner_.reset(env, e); }
  std::vector<ActionChunk> act(const std::vector<PolicyInput>& inputs) override { return inner_.act(inputs); }
  bool needs_images() const override { return false; }
  void submit(const std::vector<PolicyInput>& inputs) override {
    auto chunks = inner_.act(inputs);
    for (size_t k = 0; k < inputs.size(); ++k) waiting_.push_back({inputs[k].env, inputs[k].env == 0 ? delay_ : 0, chunks[k]});
  }
  std::vector<std::pair<int, ActionChunk>> poll(bool wait) override {
    bool any = false;
    for (auto& w : waiting_) any = any || --w.polls_left <= 0;
    if (wait && !any && !waiting_.empty()) waiting_.front().polls_left = 0;
    std::vector<std::pair<int, ActionChunk>> out;
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->polls_left > 0) {
        ++it;
        continue;
      }
      out.emplace_back(it->env, it->chunk);
      it = waiting_.erase(it);
    }
    return out;
  }

 private:
  struct Waiting {
    int env, polls_left;
    ActionChunk chunk;
  };
  Policy& inner_;
  int delay_;
  std::vector<Waiting> waiting_;
};

// While an env waits for its chunk, the others step on; the waiting env is held, not stepped,
// so every episode takes the same actions and ends the same as with a policy that answers at once.
TEST(SimRollout, AnEnvWaitingForItsChunkHoldsNoOtherBack) {
  const TaskSpec& t = find_task("pick_red_into_tray");
  struct Record {
    std::vector<std::array<double, 7>> actions;
    bool success = false;
    int steps = 0;
  };
  auto run = [&](bool slow, int* held_steps) {
    VectorEnvConfig c;
    c.n_envs = 2;
    c.threads = 1;
    c.renderer = RendererKind::kNone;
    VectorEnv venv(Scene::load(), {&t}, c);
    int next = 0;
    std::map<int, Record> out;
    RolloutHooks hooks;
    hooks.next_episode = [&]() -> std::optional<Episode> {
      if (next == 4) return std::nullopt;
      Episode e;
      e.task = &t;
      e.init = eval_init_states(t)[size_t(next)];
      e.init_index = next;
      e.seed = uint64_t(next) + 1;
      e.id = next++;
      return e;
    };
    std::vector<int> env_steps(2, 0);
    hooks.on_step = [&](int env, const Episode& e, int step, const Observation&, const Action& a) {
      auto& r = out[e.id];
      EXPECT_EQ(step, int(r.actions.size())) << "episode " << e.id;
      std::array<double, 7> v{};
      for (int j = 0; j < 7; ++j) v[size_t(j)] = a[size_t(j)];
      r.actions.push_back(v);
      ++env_steps[size_t(env)];
      // env 1 ahead of env 0 by more than a chunk's steps: it stepped while env 0 was held
      if (held_steps && env == 1 && env_steps[1] > env_steps[0] + 1) ++*held_steps;
    };
    hooks.on_end = [&](int, const Episode& e, bool success, int steps, const Observation&) {
      out[e.id].success = success;
      out[e.id].steps = steps;
    };
    ExpertPolicy expert;
    SlowEnvZero slow_policy(expert, 3);
    Policy& p = slow ? static_cast<Policy&>(slow_policy) : static_cast<Policy&>(expert);
    run_rollouts(venv, p, 1, hooks);
    return out;
  };
  int held = 0;
  auto plain = run(false, nullptr), slowed = run(true, &held);
  ASSERT_EQ(plain.size(), 4u);
  ASSERT_EQ(slowed.size(), 4u);
  for (const auto& [id, r] : plain) {
    const Record& s = slowed.at(id);
    EXPECT_EQ(s.success, r.success) << "episode " << id;
    EXPECT_EQ(s.steps, r.steps) << "episode " << id;
    EXPECT_EQ(s.actions, r.actions) << "episode " << id;
  }
  EXPECT_GT(held, 10) << "env 1 never ran ahead of the slow env 0";
}

}  // namespace
}  // namespace ember::sim
