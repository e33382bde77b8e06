// What the RL loop's tests share: the tiny run on the `easy` suite and the bit-exact resume check.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ember/model/weights.h"
#include "ember/rl/rl_loop.h"
#include "ember/sim/gl_context.h"

namespace ember::rl {

inline bool have_renderer() {
  if (sim::default_renderer() != sim::RendererKind::kNone) return true;
  return false;
}

// A fresh tiny policy on short episodes: the return is shaped (progress of the end effector
// towards the button), so a policy that starts at chance has a signal from the first group.
inline RlConfig tiny_run(const std::string& out) {
  RlConfig c;
  c.policy.preset = "tiny";
  c.policy.horizon = 8;
  c.policy.num_steps = 3;
  c.image_size = 16;
  c.output_dir = out;
  c.suite = "easy";
  c.device = "cpu";
  c.seed = 1;
  c.groups_per_step = 4;
  c.group_size = 4;
  c.env_workers = 2;
  c.envs_per_worker = 4;
  c.max_batch = 8;
  c.replan_steps = 8;
  c.max_episode_steps = 24;
  c.noise_method = "every_step";  // the loop's mechanics, calibrated on a fixed std (the recipe: rl_recipe_test)
  c.noise_std = 0.3;
  c.denoise_steps = 0;  // the fresh policy's 3
  c.shaping = 10;
  c.optimizer.lr = 3e-3;
  return c;
}

// The tiny run under the conditions of a bit-exact run (rl_loop.h): sync, one request per
// rollout batch, one intra-op thread.
inline RlConfig exact_tiny_run(const std::string& out) {
  auto c = tiny_run(out);
  c.mode = "sync";
  c.max_batch = 1;
  c.cpu_threads = 1;
  return c;
}

inline std::vector<nlohmann::json> metrics(const std::string& out) {
  std::vector<nlohmann::json> lines;
  std::ifstream f(out + "/metrics.jsonl");
  for (std::string line; std::getline(f, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// c run to step 3 in dir/whole, and in dir/parts to step 1, then resumed to step 3 (by `run`: one
// process, or the ranks of a job): the uninterrupted run's result and the resumed one's.
inline std::pair<RlResult, RlResult> run_with_resume(RlConfig c, const std::string& dir,
                                                     const std::function<RlResult(const RlConfig&)>& run) {
  c.output_dir = dir + "/whole";
  c.iterations = 3;
  auto whole = run(c);
  c.output_dir = dir + "/parts";
  c.iterations = 1;
  run(c);
  c.resume = true;
  c.iterations = 3;
  return {whole, run(c)};
}

// The largest absolute difference between two checkpoints' tensors of one file.
inline double largest_difference(const std::string& a_dir, const std::string& b_dir, const std::string& file = "model.safetensors") {
  auto a = model::load_tensors(a_dir + "/" + file), b = model::load_tensors(b_dir + "/" + file);
  EXPECT_EQ(a.size(), b.size()) << file;
  double worst = 0;
  for (const auto& [name, t] : a) {
    if (!b.count(name)) {
      ADD_FAILURE() << file << ": " << name;
      continue;
    }
    worst = std::max(worst, (t.to(at::kDouble) - b.at(name).to(at::kDouble)).abs().max().item<double>());
  }
  return worst;
}

// A run stopped after step 1 and resumed continues as the uninterrupted one bit for bit: the
// same steps, terms and env steps, the same figures of steps 2 and 3 (==, not near) and the
// same final weights and optimizer state (PPO: the value head's too; flow_noise: its std head's).
inline void expect_resume_matches(const RlResult& whole, const RlResult& rest, bool ppo, bool flow_noise = false) {
  ASSERT_EQ(whole.iterations.size(), 3u);
  ASSERT_EQ(rest.iterations.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto &a = whole.iterations[i + 1], &b = rest.iterations[i];
    EXPECT_EQ(a.step, b.step);
    EXPECT_EQ(a.env_steps, b.env_steps) << "step " << a.step;
    const auto &x = a.learner, &y = b.learner;
    EXPECT_EQ(x.terms, y.terms) << "step " << a.step;
    EXPECT_EQ(x.success, y.success) << "step " << a.step;
    EXPECT_EQ(x.ret, y.ret) << "return, step " << a.step;
    EXPECT_EQ(x.loss, y.loss) << "loss, step " << a.step;
    EXPECT_EQ(x.grad_norm, y.grad_norm) << "grad_norm, step " << a.step;
    EXPECT_EQ(x.kl, y.kl) << "kl, step " << a.step;
    EXPECT_EQ(x.clip_frac, y.clip_frac) << "clip_frac, step " << a.step;
    EXPECT_EQ(x.value_loss, y.value_loss) << "value_loss, step " << a.step;
    EXPECT_EQ(x.entropy, y.entropy) << "entropy, step " << a.step;
  }
  // a learning run: the figures compared are of updates that moved the policy
  EXPECT_GT(whole.iterations[2].learner.kl, 0);
  std::vector<std::string> files{"model.safetensors", "optimizer.safetensors"};
  if (ppo) files.push_back("value_head.safetensors");
  if (flow_noise) files.push_back("noise_head.safetensors");
  for (const auto& f : files) EXPECT_EQ(largest_difference(whole.last_checkpoint, rest.last_checkpoint, f), 0) << f;
}

// Sync mode with one request per batch and one intra-op thread resumes as the uninterrupted run
// bit for bit (rl_loop.h). Until 2026-12-02 about one run in twenty did not: OSMesa drew a
// batch of views as tiles of one buffer, a view's pixels differed in their last bits with its
// tile, and which tile an episode's env got followed the workers' timing (sim/render.cc; 6 of
// 100 runs before, 0 of 80 after, both algorithms).
inline void expect_resume_continues(const std::string& algo, const std::string& dir, const std::string& noise_method = "") {
  auto c = exact_tiny_run(dir + "/whole");
  c.algo = algo;
  if (!noise_method.empty()) c.noise_method = noise_method;
  c.groups_per_step = 2;
  c.max_episode_steps = 16;
  auto [whole, rest] = run_with_resume(c, dir, [](const RlConfig& r) { return run_rl(r); });
  expect_resume_matches(whole, rest, algo == "ppo", noise_method == "flow_noise");
}

}  // namespace ember::rl
