// Offscreen rendering through OSMesa (skips with the reason where it is unavailable), and
// `collect` writing a dataset that ember's reader and checker accept.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "sim/require_osmesa.h"
#include "test_util.h"
#include "ember/core/error.h"
#include "ember/data/check.h"
#include "ember/data/dataset.h"
#include "ember/sim/collect.h"
#include "ember/eval/evaluate.h"
#include "ember/sim/expert.h"
#include "ember/sim/render.h"
#include "ember/sim/rollout.h"
#include "ember/sim/vector_env.h"

namespace ember::sim {
namespace {

using eval::EvalOptions;
using eval::EvalResult;
using eval::evaluate;
using eval::format_table;
using eval::TaskResult;

double stddev(const std::vector<uint8_t>& v) {
  double s = 0, s2 = 0;
  for (uint8_t x : v) s += x, s2 += double(x) * x;
  double m = s / v.size();
  return std::sqrt(std::max(0.0, s2 / v.size() - m * m));
}

TEST(SimRender, BothCamerasAreNotBlank) {
  REQUIRE_OSMESA();
  const TaskSpec& t = find_task("pick_red_into_tray");
  VectorEnvConfig c;
  c.n_envs = 2;
  c.threads = 2;
  c.renderer = RendererKind::kOSMesa;
  c.image_size = 64;
  VectorEnv venv(Scene::load(), {&t}, c);
  auto obs = venv.reset(0);
  for (const Observation& o : obs) {
    ASSERT_EQ(o.width, 64);
    ASSERT_EQ(o.agentview.size(), 64u * 64 * 3);
    EXPECT_GT(stddev(o.agentview), 10);
    EXPECT_GT(stddev(o.wrist), 5);
    EXPECT_NE(o.agentview, o.wrist);
  }
  // the scene changes when the arm moves
  std::vector<Action> a(2);
  for (auto& x : a) x[0] = 1, x[2] = -1;
  auto r = venv.step(a);
  EXPECT_NE(r.observations[0].agentview, obs[0].agentview);
}

TEST(SimRender, AnySize) {
  REQUIRE_OSMESA();
  auto scene = Scene::load();
  const TaskSpec& t = find_task("press_blue_button");
  Env env(scene);
  env.reset(t, eval_init_states(t)[1]);
  CameraRenderer r(*scene, RendererKind::kOSMesa, 48, 48);
  std::vector<uint8_t> rgb(48 * 48 * 3);
  r.render(env.data(), scene->agentview_camera, rgb.data());
  EXPECT_GT(stddev(rgb), 10);
  EXPECT_THROW(CameraRenderer(*scene, RendererKind::kOSMesa, 0, 10), Error);
}

TEST(SimCollect, WritesDatasetThatReaderLoads) {
  REQUIRE_OSMESA();
  test::TempDir tmp("sim_collect");
  CollectOptions o;
  o.suite = "easy";
  o.episodes_per_task = 2;
  o.output_dir = tmp.path() + "/ds";
  o.image_size = 32;
  o.renderer = RendererKind::kOSMesa;
  o.camera_dtype = "image";
  o.n_envs = 2;
  o.progress = false;
  CollectResult r = collect(o);
  EXPECT_EQ(r.episodes, 2);
  EXPECT_TRUE(r.short_tasks.empty());
  data::CheckReport report = data::check_dataset(o.output_dir);
  EXPECT_TRUE(report.problems.empty());
  data::Dataset ds(o.output_dir);
  EXPECT_EQ(ds.size(), r.frames);
  data::Item it = ds.get(3);
  EXPECT_EQ(it.task, "press the red button");
  EXPECT_EQ(it.values.at("observation.state").data.size(), 8u);
  EXPECT_EQ(it.values.at("action").data.size(), 7u);
  ASSERT_EQ(it.images.at("observation.images.agentview").size(), 1u);
  EXPECT_EQ(it.images.at("observation.images.wrist")[0].width, 32);
  // an existing non-empty output directory is refused, naming the flag
  try {
    collect(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--output_dir"), std::string::npos);
  }
}

// A policy that never moves: every episode fails (a failure video).
class IdlePolicy : public Policy {
 public:
  std::vector<ActionChunk> act(const std::vector<PolicyInput>& inputs) override {
    for (const auto& in : inputs) EXPECT_EQ(in.obs->width, 32);  // it gets camera images
    return std::vector<ActionChunk>(inputs.size(), ActionChunk(4, Action{}));
  }
};

TEST(SimEvaluate, WritesEvalJsonAndVideos) {
  REQUIRE_OSMESA();
  test::TempDir tmp("sim_eval");
  EvalOptions o;
  o.suite = "easy";
  o.trials = 2;
  o.n_envs = 2;
  o.image_size = 32;
  o.renderer = RendererKind::kOSMesa;
  o.output_dir = tmp.path() + "/eval";
  o.print_table = o.progress = false;
  ExpertPolicy expert;
  EvalResult r = evaluate(o, expert);
  EXPECT_EQ(r.tasks[0].successes, 2);
  namespace fs = std::filesystem;
  EXPECT_TRUE(fs::exists(o.output_dir + "/eval.json"));
  ASSERT_FALSE(r.tasks[0].success_video.empty());
  EXPECT_TRUE(fs::exists(o.output_dir + "/" + r.tasks[0].success_video));
  EXPECT_TRUE(r.tasks[0].failure_video.empty());
  // the same states and outcome again; and a failing policy's failure video
  o.output_dir = tmp.path() + "/idle";
  o.replan_steps = 4;
  IdlePolicy idle;
  EvalResult f = evaluate(o, idle);
  EXPECT_EQ(f.tasks[0].successes, 0);
  EXPECT_TRUE(fs::exists(o.output_dir + "/" + f.tasks[0].failure_video));
  EXPECT_THROW(evaluate(o, idle), Error);  // the output directory is not empty any more
}

// The cameras are rendered only for the observations a policy acts on (every replan_steps-th
// step, and each episode's first) and for the envs a hook asks for.
TEST(SimRollout, RendersOnlyWhatIsUsed) {
  REQUIRE_OSMESA();
  VectorEnvConfig c;
  c.n_envs = 2;
  c.threads = 2;
  c.image_size = 32;
  c.renderer = RendererKind::kOSMesa;
  const TaskSpec& t = find_task("pick_red_into_tray");
  VectorEnv venv(Scene::load(), {&t}, c);
  int episodes = 0;
  RolloutHooks hooks;
  hooks.next_episode = [&]() -> std::optional<Episode> {
    if (episodes == 2) return std::nullopt;
    Episode e;
    e.task = &t;
    e.init = eval_init_states(t)[episodes];
    e.id = episodes++;
    return e;
  };
  std::vector<std::vector<int>> widths(2);  // per env: the observation's width at each step
  hooks.on_step = [&](int env, const Episode&, int, const Observation& obs, const Action&) {
    widths[env].push_back(obs.width);
  };
  hooks.wants_images = [](int env) { return env == 1; };  // env 1 "records"
  IdlePolicy idle;
  RolloutStats stats = run_rollouts(venv, idle, 3, hooks);
  EXPECT_EQ(stats.env_steps, int64_t(widths[0].size() + widths[1].size()));
  EXPECT_GT(stats.policy_calls, 0);
  ASSERT_GT(widths[0].size(), 6u);
  for (size_t k = 0; k < widths[0].size(); ++k) EXPECT_EQ(widths[0][k], k % 3 == 0 ? 32 : 0) << "step " << k;
  for (size_t k = 0; k < widths[1].size(); ++k) EXPECT_EQ(widths[1][k], 32) << "step " << k;
}

}  // namespace
}  // namespace ember::sim
