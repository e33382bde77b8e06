// The whole RL loop on the `easy` suite (press the red button), on the CPU with OSMesa.
#include <gtest/gtest.h>

#include <functional>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>

#include "ember/core/json_file.h"
#include "ember/core/stop_signal.h"
#include "ember/eval/checkpoint_policy.h"
#include "ember/eval/evaluate.h"
#include "ember/model/pi05.h"
#include "ember/model/weights.h"
#include "ember/rl/rl_loop.h"
#include "ember/train/checkpoint_dir.h"
#include "rl_loop_util.h"
#include "test_util.h"

namespace ember::rl {
namespace {

// The mean of f over optimizer steps [from, to).
template <class F>
double mean_of(const std::vector<IterationStats>& its, size_t from, size_t to, F f) {
  double s = 0;
  for (size_t i = from; i < to; ++i) s += f(its[i].learner);
  return s / double(to - from);
}

// 10 sync steps of `algo`; the mean return and success of the last 3 steps must beat the
// first 3's.
RlResult expect_improvement(const std::string& algo, const std::string& dir) {
  auto c = tiny_run(dir);
  c.mode = "sync";
  c.algo = algo;
  c.iterations = 10;
  auto r = run_rl(c);
  EXPECT_EQ(r.iterations.size(), 10u);
  if (r.iterations.size() != 10u) return r;
  auto ret = [](const StepStats& s) { return s.ret; };
  auto success = [](const StepStats& s) { return s.success; };
  auto vloss = [](const StepStats& s) { return s.value_loss; };
  const double first = mean_of(r.iterations, 0, 3, ret), last = mean_of(r.iterations, 7, 10, ret);
  const double first_ok = mean_of(r.iterations, 0, 3, success), last_ok = mean_of(r.iterations, 7, 10, success);
  std::printf("%s return: first 3 steps %.3f, last 3 steps %.3f; success %.3f -> %.3f; value loss %.4f -> %.4f\n", algo.c_str(),
              first, last, first_ok, last_ok, mean_of(r.iterations, 0, 3, vloss), mean_of(r.iterations, 7, 10, vloss));
  EXPECT_GT(last, first + 0.5);
  EXPECT_GT(last_ok, first_ok + 0.05);
  for (const auto& it : r.iterations) EXPECT_EQ(it.staleness, 0);  // sync: always on-policy
  EXPECT_GT(r.iterations.back().learner.kl, 0);
  return r;
}

TEST(RlLoop, TinyPolicyImprovesOnEasy) {
  if (!have_renderer()) GTEST_SKIP() << "no offscreen renderer (OSMesa/EGL) on this machine";
  test::TempDir dir("rl_improve");
  // seed 1, measured 2026-12-01: return -0.70, 0.26, 1.00 in the first three steps (no success
  // in 48 episodes), about 2.0 and success 0.12-0.25 from step 6 on
  expect_improvement("grpo", dir.path());
}

// PPO (GAE, the value head on the prefix's pooled features) on the same short episodes: the
// per-chunk advantages come from the shaped rewards and the critic, not from a group.
TEST(RlLoop, TinyPolicyImprovesOnEasyUnderPpo) {
  if (!have_renderer()) GTEST_SKIP() << "no offscreen renderer (OSMesa/EGL) on this machine";
  test::TempDir dir("rl_ppo");
  auto r = expect_improvement("ppo", dir.path());
  for (const auto& it : r.iterations) EXPECT_GT(it.learner.value_loss, 0);
  EXPECT_TRUE(std::filesystem::exists(r.last_checkpoint + "/value_head.safetensors"));
}

TEST(RlLoop, AsyncRunsResumesAndLogs) {
  if (!have_renderer()) GTEST_SKIP() << "no offscreen renderer (OSMesa/EGL) on this machine";
  test::TempDir dir("rl_async");
  auto c = tiny_run(dir.path());
  c.mode = "async";
  c.iterations = 2;
  c.save_freq = 1;
  auto r = run_rl(c);
  ASSERT_EQ(r.iterations.size(), 2u);
  for (const auto& it : r.iterations) {
    EXPECT_LE(it.staleness, double(c.max_staleness));
    EXPECT_GT(it.env_steps_per_s, 0);
    EXPECT_GT(it.rollout_busy, 0);
    EXPECT_GT(it.learner_busy, 0);
    EXPECT_GE(it.rollout_batch, 1.0);
    EXPECT_LE(it.rollout_batch, double(c.max_batch));
  }
  // a second run over the checkpoints must say --resume
  auto again = test::error_of([&] { run_rl(c); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(again.find("--resume"), std::string::npos) << again;
  c.resume = true;
  c.iterations = 3;
  auto resumed = run_rl(c);
  ASSERT_EQ(resumed.iterations.size(), 1u);
  EXPECT_EQ(resumed.iterations[0].step, 3);
  auto lines = metrics(dir.path());
  ASSERT_EQ(lines.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(lines[size_t(i)]["step"], i + 1);
    for (const char* k : {"success_rate", "return", "kl", "clip_frac", "staleness", "env_busy", "rollout_busy", "learner_busy",
                          "env_steps_per_s", "rollout_batch"})
      EXPECT_TRUE(lines[size_t(i)].contains(k)) << k;
  }
  EXPECT_GT(lines[2]["env_steps"].get<double>(), lines[1]["env_steps"].get<double>());
  auto latest = train::find_latest_checkpoint(dir.path());
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->step, 3);
  EXPECT_EQ(read_json_file((latest->dir / "rl_state.json").string())["step"], 3);
}

// PPO's value head and its optimizer travel with the checkpoint; a GRPO run's checkpoint cannot
// be resumed as PPO (it has no value head) and says which file is missing.
TEST(RlLoop, PpoResumesWithItsValueHead) {
  if (!have_renderer()) GTEST_SKIP() << "no offscreen renderer (OSMesa/EGL) on this machine";
  test::TempDir dir("rl_ppo_resume");
  // one short sync step of `algo`, then the config to resume it to step 2 as `resume_as`
  auto one_step = [&](const std::string& algo, const std::string& resume_as) {
    auto c = tiny_run(dir.path() + "/" + algo);
    c.algo = algo;
    c.mode = "sync";
    c.groups_per_step = 2;
    c.max_episode_steps = 8;
    c.iterations = 1;
    run_rl(c);
    c.resume = true;
    c.algo = resume_as;
    c.iterations = 2;
    return c;
  };
  auto r = run_rl(one_step("ppo", "ppo"));
  ASSERT_EQ(r.iterations.size(), 1u);
  EXPECT_EQ(r.iterations[0].step, 2);
  for (const char* f : {"value_head.safetensors", "value_optimizer.safetensors"})
    EXPECT_TRUE(std::filesystem::exists(r.last_checkpoint + "/" + f)) << f;
  auto g = one_step("grpo", "ppo");
  auto msg = test::error_of([&] { run_rl(g); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("value_head.safetensors"), std::string::npos) << msg;
}

// --rl.critic_warmup: over its steps PPO's value head learns and the policy stays as it started
// (its learning rate is 0); without it the policy moves from the first step.
TEST(RlLoop, CriticWarmupHoldsThePolicyWhileTheValueHeadLearns) {
  if (!have_renderer()) GTEST_SKIP() << "no offscreen renderer (OSMesa/EGL) on this machine";
  test::TempDir dir("rl_critic_warmup");
  // the policy's and the value head's tensors at steps 1 and 2 of a PPO run
  auto run = [&](const std::string& name, int64_t warmup) {
    auto c = exact_tiny_run(dir.path() + "/" + name);
    c.algo = "ppo";
    c.groups_per_step = 2;
    c.max_episode_steps = 8;
    c.iterations = 2;
    c.save_freq = 1;
    c.critic_warmup = warmup;
    run_rl(c);
    auto ckpts = train::list_checkpoints(c.output_dir);
    EXPECT_EQ(ckpts.size(), 2u);
    using Tensors = std::map<std::string, at::Tensor>;
    std::vector<std::pair<Tensors, Tensors>> out;
    for (const auto& ck : ckpts)
      out.emplace_back(model::load_tensors((ck.dir / "model.safetensors").string()), model::load_tensors((ck.dir / "value_head.safetensors").string()));
    return out;
  };
  auto same = [](const std::map<std::string, at::Tensor>& a, const std::map<std::string, at::Tensor>& b) {
    if (a.size() != b.size()) return false;
    for (const auto& [k, t] : a)
      if (!b.count(k) || !at::equal(t, b.at(k))) return false;
    return true;
  };
  auto held = run("held", 2);
  ASSERT_EQ(held.size(), 2u);
  EXPECT_TRUE(same(held[0].first, held[1].first));     // the policy did not move
  EXPECT_FALSE(same(held[0].second, held[1].second));  // the critic did
  auto moving = run("moving", 0);
  ASSERT_EQ(moving.size(), 2u);
  EXPECT_FALSE(same(moving[0].first, moving[1].first));
  EXPECT_FALSE(same(held[0].first, moving[0].first));  // the held policy is the start, which step 1 moves
}

// --rl.placement=split gives the rollout a GPU of its own: on the CPU it is refused by name.
TEST(RlLoop, SplitPlacementNeedsCuda) {
  test::TempDir dir("rl_split_cpu");
  auto c = tiny_run(dir.path());
  c.placement = "split";
  auto msg = test::error_of([&] { run_rl(c); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("--rl.placement=split: needs CUDA devices"), std::string::npos) << msg;
}

// --rl.camera_size renders the cameras at another size than the policy's vision tower (as
// `ember eval --image_size` does) and the policy resizes them: the run goes through, on other
// pixels than at the policy's own size, and the size is recorded with the run.
TEST(RlLoop, CamerasRenderedAtAnotherSizeAreResized) {
  if (!have_renderer()) GTEST_SKIP() << "no offscreen renderer (OSMesa/EGL) on this machine";
  test::TempDir dir("rl_camera_size");
  auto run = [&](int64_t size, const std::string& name) {
    auto c = exact_tiny_run(dir.path() + "/" + name);
    c.iterations = 1;
    c.groups_per_step = 2;
    c.camera_size = size;
    return run_rl(c).iterations.at(0).learner;
  };
  const auto own = run(0, "own"), again = run(0, "again"), wide = run(40, "wide");
  EXPECT_EQ(own.ret, again.ret);  // the comparison below is not noise
  EXPECT_NE(own.ret, wide.ret);
  auto saved = nlohmann::json::parse(std::ifstream(dir.path() + "/wide/rl_config.json"));
  EXPECT_EQ(saved.at("rl").at("camera_size"), 40);
  // the size-dependent defaults as the run resolved them (tiny: below 10 M parameters)
  EXPECT_EQ(saved.at("rl").at("train"), "all");
  EXPECT_EQ(saved.at("rl").at("lr_warmup"), 0);
}

std::vector<nlohmann::json> eval_lines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  std::ifstream f(out + "/eval.jsonl");
  for (std::string l; std::getline(f, l);) lines.push_back(nlohmann::json::parse(l));
  return lines;
}

// --eval_freq: the learner's policy in closed loop on the suite's evaluation states at the start,
// every N steps and at the end, each as `ember eval --checkpoint` would score the checkpoint of
// that step; a resumed run goes on from its checkpoint's lines.
TEST(RlLoop, EvaluatesTheLearnerInClosedLoop) {
  if (!have_renderer()) GTEST_SKIP() << "no offscreen renderer (OSMesa/EGL) on this machine";
  test::TempDir dir("rl_eval");
  auto c = exact_tiny_run(dir.path() + "/run");
  c.groups_per_step = 2;
  c.iterations = 3;
  c.save_freq = 3;
  c.eval_freq = 2;
  c.eval.trials = 2;
  c.eval.n_envs = 3;
  const auto r = run_rl(c);
  auto lines = eval_lines(c.output_dir);
  ASSERT_EQ(lines.size(), 3u);
  const std::vector<int64_t> steps{0, 2, 3};
  const auto& suite = sim::find_suite("easy");
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].at("step"), steps[i]);
    EXPECT_EQ(lines[i].at("trials_per_task"), 2);
    ASSERT_EQ(lines[i].at("tasks").size(), suite.tasks.size());
    double sum = 0, var = 0;
    for (const auto& t : suite.tasks) {
      const double p = lines[i].at("tasks").at(t.name).get<double>();
      sum += p, var += p * (1 - p) / 2;
    }
    EXPECT_NEAR(lines[i].at("average_success").get<double>(), sum / double(suite.tasks.size()), 1e-12);
    EXPECT_NEAR(lines[i].at("average_success_stderr").get<double>(), std::sqrt(var) / double(suite.tasks.size()), 1e-12);
  }
  EXPECT_EQ(lines[0].at("env_steps"), 0);
  EXPECT_EQ(lines[2].at("env_steps").get<int64_t>(), r.iterations.back().env_steps + r.iterations[0].env_steps + r.iterations[1].env_steps);

  // resumed to 4 steps: the lines up to step 3 stay, the end adds step 4, step 0 is not repeated
  auto more = c;
  more.resume = true;
  more.iterations = 4;
  const auto last = run_rl(more).last_checkpoint;
  lines = eval_lines(c.output_dir);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].at("step"), 0);
  EXPECT_EQ(lines[3].at("step"), 4);

  // the last line is what `ember eval --checkpoint` gives for the step-4 checkpoint (this seed's
  // run succeeds in 1 of the 2 trials there, so the comparison is not between two zeros)
  eval::CheckpointSimPolicy saved(last, "cpu", uint64_t(c.seed));
  eval::EvalOptions eo;
  eo.suite = c.suite;
  eo.trials = 2;
  eo.n_envs = 3;
  eo.seed = uint64_t(c.seed);
  eo.replan_steps = int(c.replan_steps);
  eo.image_size = int(c.image_size);
  eo.renderer = sim::parse_renderer(c.renderer);
  eo.videos = eo.print_table = eo.progress = false;
  const auto scored = eval::evaluate(eo, saved);
  for (const auto& t : scored.tasks)
    EXPECT_EQ(lines[3].at("tasks").at(t.name).get<double>(), double(t.successes) / t.trials) << t.name;
  EXPECT_GT(scored.average_success, 0.0);
}

// SIGINT / SIGTERM (core/stop_signal.h, here requested directly after step 1): the run ends after
// step 2, the step under way, which is evaluated and saved as a last step is; a resume goes on.
TEST(RlLoop, StopSignalEndsTheRunAfterItsStepEvaluatedAndSaved) {
  if (!have_renderer()) GTEST_SKIP() << "no offscreen renderer (OSMesa/EGL) on this machine";
  test::TempDir dir("rl_stop");
  struct Clear {
    ~Clear() { clear_stop_request(); }
  } clear;
  auto c = exact_tiny_run(dir.path() + "/run");
  c.groups_per_step = 2;
  c.iterations = 10;
  c.eval_freq = 100;
  c.eval.trials = 1;
  c.eval.n_envs = 2;
  const auto r = run_rl(c, [](const IterationStats& it) {
    if (it.step == 1) request_stop(SIGINT);
  });
  clear_stop_request();
  EXPECT_EQ(r.stopped_by, SIGINT);
  ASSERT_EQ(r.iterations.size(), 2u);
  EXPECT_EQ(r.last_checkpoint, c.output_dir + "/checkpoints/000002");
  EXPECT_TRUE(std::filesystem::exists(r.last_checkpoint + "/COMPLETE"));
  const auto lines = eval_lines(c.output_dir);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].at("step"), 0);
  EXPECT_EQ(lines[1].at("step"), 2);
  EXPECT_EQ(metrics(c.output_dir).size(), 2u);

  auto more = c;
  more.resume = true;
  more.iterations = 3;
  const auto after = run_rl(more);
  EXPECT_EQ(after.stopped_by, 0);
  ASSERT_EQ(after.iterations.size(), 1u);
  EXPECT_EQ(after.iterations[0].step, 3);
}

// one exact step of two groups: the runs that compare how a step's passes learn
RlConfig one_step_run(const std::string& out) {
  auto c = exact_tiny_run(out);
  c.groups_per_step = 2;
  c.iterations = 1;
  return c;
}

// One step of one_step_run (in dir/one), and the same step with `change` made (in dir/two).
std::pair<RlResult, RlResult> one_step_and_changed(const std::string& dir, const std::function<void(RlConfig&)>& change) {
  auto c = one_step_run(dir + "/one");
  auto one = run_rl(c);
  c.output_dir = dir + "/two";
  change(c);
  auto two = run_rl(c);
  EXPECT_EQ(one.iterations.size(), 1u);
  EXPECT_EQ(two.iterations.size(), 1u);
  EXPECT_GT(one.iterations.at(0).learner.micro_batches, 0) << "the step had no group to learn from";
  return {std::move(one), std::move(two)};
}

// --rl.epochs 2: the same step's groups learned from twice, an optimizer step each; the second
// pass starts from the first's weights, so its KL to the start policy is no longer 0.
TEST(RlLoop, EpochsPassOverTheStepsGroupsAgain) {
  if (!have_renderer()) GTEST_SKIP() << "no offscreen renderer (OSMesa/EGL) on this machine";
  test::TempDir dir("rl_epochs");
  const auto [one, two] = one_step_and_changed(dir.path(), [](RlConfig& x) { x.epochs = 2; });
  const auto &a = one.iterations.at(0).learner, &b = two.iterations.at(0).learner;
  EXPECT_EQ(b.micro_batches, 2 * a.micro_batches);
  EXPECT_EQ(b.success, a.success);  // the same episodes
  EXPECT_EQ(b.chunks, a.chunks);
  EXPECT_EQ(a.kl, 0.0);  // the start policy's own chunks
  EXPECT_GT(b.kl, 0.0);
  EXPECT_NE(b.loss, a.loss);
  // the prefix frozen: the prefixes the first pass kept for the second change nothing
  auto c = one_step_run(dir.path() + "/kept");
  c.epochs = 2;
  c.train = "expert";
  const auto kept = run_rl(c);
  c.prefix_cache_gb = 0;
  c.output_dir = dir.path() + "/encoded";
  const auto encoded = run_rl(c);
  const auto &k = kept.iterations.at(0).learner, &e = encoded.iterations.at(0).learner;
  EXPECT_EQ(k.micro_batches, b.micro_batches);
  EXPECT_NEAR(k.loss, e.loss, 1e-6 * (1 + std::abs(e.loss)));
  EXPECT_NEAR(k.kl, e.kl, 1e-7);
  EXPECT_NEAR(k.grad_norm, e.grad_norm, 1e-5 * e.grad_norm);
  EXPECT_LT(largest_difference(kept.last_checkpoint, encoded.last_checkpoint), 1e-5);
}

// --rl.minibatches 2: each pass takes an optimizer step per half of the step's groups; the
// second half's ratios are then off the start policy (KL > 0), the same episodes and chunks.
TEST(RlLoop, MinibatchesStepOncePerPartOfTheGroups) {
  if (!have_renderer()) GTEST_SKIP() << "no offscreen renderer (OSMesa/EGL) on this machine";
  test::TempDir dir("rl_minibatches");
  const auto [one, two] = one_step_and_changed(dir.path(), [](RlConfig& x) { x.minibatches = 2; });
  const auto &a = one.iterations.at(0).learner, &b = two.iterations.at(0).learner;
  EXPECT_EQ(b.success, a.success);  // the same episodes, all of them in the figures
  EXPECT_EQ(b.chunks, a.chunks);
  EXPECT_EQ(b.groups, a.groups);
  EXPECT_EQ(a.kl, 0.0);  // one step from the start policy's own chunks
  EXPECT_GT(b.kl, 0.0);  // the second part learned after the first's step
  EXPECT_GT(largest_difference(one.last_checkpoint, two.last_checkpoint), 0.0);
  auto c = one_step_run(dir.path() + "/three");
  c.minibatches = 3;  // more parts than the step's two groups
  EXPECT_NE(test::error_of([&] { run_rl(c); }, ErrorKind::kInvalidArgument).find("--rl.minibatches"), std::string::npos);
}

// --rl.target_kl: with a bound no update can stay under, every pass after the first is dropped
// without an optimizer step, so the step equals a one-pass step; with a bound no pass reaches,
// all passes step.
TEST(RlLoop, TargetKlDropsThePassesThatMovedTooFar) {
  if (!have_renderer()) GTEST_SKIP() << "no offscreen renderer (OSMesa/EGL) on this machine";
  test::TempDir dir("rl_target_kl");
  auto c = one_step_run(dir.path() + "/one");
  const auto one = run_rl(c);
  c.epochs = 3;
  c.target_kl = 1e-30;
  c.output_dir = dir.path() + "/tight";
  const auto tight = run_rl(c);
  c.target_kl = 1e30;
  c.output_dir = dir.path() + "/loose";
  const auto loose = run_rl(c);
  ASSERT_EQ(one.iterations.size(), 1u);
  ASSERT_EQ(tight.iterations.size(), 1u);
  ASSERT_EQ(loose.iterations.size(), 1u);
  const auto &a = one.iterations[0], &t = tight.iterations[0], &l = loose.iterations[0];
  ASSERT_GT(a.learner.micro_batches, 0) << "the step had no group to learn from";
  EXPECT_EQ(a.epochs, 1);
  EXPECT_EQ(t.epochs, 1);
  EXPECT_EQ(l.epochs, 3);
  EXPECT_EQ(t.learner.loss, a.learner.loss);  // the first pass's step, nothing after it
  EXPECT_EQ(t.learner.micro_batches, a.learner.micro_batches);
  EXPECT_EQ(l.learner.micro_batches, 3 * a.learner.micro_batches);
  // the weights saved are the one-pass step's
  auto w1 = model::load_tensors(one.last_checkpoint + "/model.safetensors");
  auto wt = model::load_tensors(tight.last_checkpoint + "/model.safetensors");
  ASSERT_EQ(w1.size(), wt.size());
  for (const auto& [name, w] : w1) {
    ASSERT_TRUE(wt.count(name)) << name;
    EXPECT_TRUE(at::equal(w, wt.at(name))) << name;
  }
}

// --rl.train expert: a step moves the action expert's weights and leaves the prefix's (vision
// tower, embedding, language model) as they were; the checkpoint holds every weight, and a
// resumed run goes on from it.
TEST(RlLoop, OutputDirThatIsAFileIsAUserError) {
  test::TempDir dir("rl_out_file");
  const std::string file = dir.path() + "/taken";
  std::ofstream(file) << "x";
  auto c = tiny_run(file);
  EXPECT_NE(test::error_of([&] { run_rl(c); }, ErrorKind::kInvalidArgument).find("not a directory"), std::string::npos);
}

TEST(RlLoop, ExpertOnlyLeavesThePrefixAsItWas) {
  if (!have_renderer()) GTEST_SKIP() << "no offscreen renderer (OSMesa/EGL) on this machine";
  test::TempDir dir("rl_train_expert");
  auto c = one_step_run(dir.path() + "/start");
  const auto start = run_rl(c);  // a trained start, saved as a checkpoint
  ASSERT_FALSE(start.last_checkpoint.empty());
  c.policy.preset.clear();
  c.checkpoint = start.last_checkpoint;
  c.train = "expert";
  c.output_dir = dir.path() + "/expert";
  c.iterations = 2;
  const auto expert = run_rl(c);
  ASSERT_EQ(expert.iterations.size(), 2u);
  ASSERT_GT(expert.iterations[0].learner.micro_batches, 0) << "the step had no group to learn from";
  auto before = model::load_tensors(start.last_checkpoint + "/model.safetensors");
  auto after = model::load_tensors(expert.last_checkpoint + "/model.safetensors");
  ASSERT_EQ(before.size(), after.size());
  int prefix = 0, moved = 0;
  for (const auto& [name, w] : before) {
    ASSERT_TRUE(after.count(name)) << name;
    if (model::is_prefix_parameter(name)) {
      ++prefix;
      EXPECT_TRUE(at::equal(w, after.at(name))) << name << " is in the prefix but moved";
    } else {
      moved += !at::equal(w, after.at(name));
    }
  }
  EXPECT_GT(prefix, 0);
  EXPECT_GT(moved, 0) << "no weight of the action expert moved";
  // the optimizer holds the expert's parameters only; a resumed run loads the whole policy
  auto opt = model::load_tensors(expert.last_checkpoint + "/optimizer.safetensors");
  for (const auto& [name, t] : opt) EXPECT_EQ(name.find("vision."), std::string::npos) << name;
  c.resume = true;
  c.iterations = 3;
  c.train = "all";  // not what the run trained: its optimizer state is the expert's
  EXPECT_NE(test::error_of([&] { run_rl(c); }, ErrorKind::kInvalidArgument).find("--rl.train"), std::string::npos);
  c.train = "expert";
  // nor another sampler than the run optimised (one_step_run: every_step on the policy's steps)
  for (auto [flag, set] : std::vector<std::pair<std::string, std::function<void(RlConfig&)>>>{
           {"--rl.noise_method", [](RlConfig& x) { x.noise_method = x.noise_method == "sde" ? "every_step" : "sde"; }},
           {"--rl.denoise_steps", [](RlConfig& x) { x.denoise_steps = x.denoise_steps + 2; }}}) {
    RlConfig other = c;
    set(other);
    EXPECT_NE(test::error_of([&] { run_rl(other); }, ErrorKind::kInvalidArgument).find(flag), std::string::npos) << flag;
  }
  const auto resumed = run_rl(c);
  ASSERT_EQ(resumed.iterations.size(), 1u);
  EXPECT_EQ(resumed.iterations[0].step, 3);
  auto last = model::load_tensors(resumed.last_checkpoint + "/model.safetensors");
  for (const auto& [name, w] : before) {
    if (model::is_prefix_parameter(name)) {
      EXPECT_TRUE(at::equal(w, last.at(name))) << name;
    }
  }
}

TEST(RlLoop, SyncResumeContinuesTheRun) {
  if (!have_renderer()) GTEST_SKIP() << "no offscreen renderer (OSMesa/EGL) on this machine";
  test::TempDir dir("rl_resume_sync");
  expect_resume_continues("grpo", dir.path());
}

TEST(RlLoop, SyncResumeContinuesTheRunUnderPpo) {
  if (!have_renderer()) GTEST_SKIP() << "no offscreen renderer (OSMesa/EGL) on this machine";
  test::TempDir dir("rl_resume_sync_ppo");
  expect_resume_continues("ppo", dir.path());
  // a PPO checkpoint without its value head is refused by the file's name, not resumed without it
  auto latest = train::find_latest_checkpoint(dir.path() + "/parts");
  ASSERT_TRUE(latest);
  const auto head = latest->dir / "value_head.safetensors";
  ASSERT_TRUE(std::filesystem::remove(head));
  auto c = exact_tiny_run(dir.path() + "/parts");
  c.algo = "ppo", c.groups_per_step = 2, c.max_episode_steps = 16, c.resume = true, c.iterations = 4;
  try {
    run_rl(c);
    ADD_FAILURE() << "resumed without " << head;
  } catch (const Error& e) {  // the checkpoint's checksums.json lists it: found missing there first
    EXPECT_NE(std::string(e.what()).find(head.string() + ": missing"), std::string::npos) << e.what();
  }
}

// Flow-Noise: the std head is trained, checkpointed (noise_head.safetensors, its moments in
// optimizer.safetensors) and resumed with the policy; its entropy and std are logged.
TEST(RlLoop, SyncResumeContinuesTheRunUnderFlowNoise) {
  if (!have_renderer()) GTEST_SKIP() << "no offscreen renderer (OSMesa/EGL) on this machine";
  test::TempDir dir("rl_resume_sync_flow_noise");
  expect_resume_continues("grpo", dir.path(), "flow_noise");
  const auto lines = metrics(dir.path() + "/whole");
  ASSERT_FALSE(lines.empty());
  for (const char* key : {"entropy", "noise_std"}) EXPECT_TRUE(lines.back().contains(key)) << key;
  EXPECT_GE(lines.back()["noise_std"].get<double>(), 0.08);
  EXPECT_LE(lines.back()["noise_std"].get<double>(), 0.16);
}

}  // namespace
}  // namespace ember::rl
