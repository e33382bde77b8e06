#include "bench/sim_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "bench/host.h"
#include "ember/core/error.h"
#include "ember/core/thread_pool.h"
#include "ember/sim/render.h"
#include "ember/sim/vector_env.h"

namespace ember::bench {

namespace {

// How a measurement renders: none, or a layout of the workers' GL contexts (vector_env.h).
struct Layout {
  std::string name;  // none | thread_per_view | thread | thread_serial | process
  bool render = true, batch = true, serial = false, process = false;
};

Layout parse_layout(const std::string& name) {
  if (name == "none") return {name, false, false, false, false};
  if (name == "thread_per_view") return {name, true, false, false, false};
  if (name == "thread") return {name, true, true, false, false};
  if (name == "thread_serial") return {name, true, true, true, false};
  if (name == "process") return {name, true, true, false, true};
  throw Error(ErrorKind::kInvalidArgument, "--layout: unknown layout '" + name + "' (thread_per_view, thread, thread_serial, process)");
}

// env steps/s of n envs on `threads` workers with random actions (episodes auto-reset).
double measure(const std::shared_ptr<const sim::Scene>& scene, const std::vector<const sim::TaskSpec*>& tasks, int n, int threads,
               sim::RendererKind kind, const Layout& layout, int image_size, double seconds) {
  sim::VectorEnvConfig vc;
  vc.n_envs = n;
  vc.threads = threads;
  vc.renderer = layout.render ? kind : sim::RendererKind::kNone;
  vc.serialize_rendering = layout.serial;
  vc.batch_rendering = layout.batch;
  vc.render_layout = layout.process ? sim::RenderLayout::kProcess : sim::RenderLayout::kThread;
  vc.image_size = image_size;
  sim::VectorEnv venv(scene, tasks, vc);
  venv.reset(1);
  sim::Rng rng(7);
  std::vector<sim::Action> actions(n);
  auto fill = [&] {
    for (auto& a : actions)
      for (float& v : a) v = float(rng.uniform(-1, 1));
  };
  for (int k = 0; k < 5; ++k) fill(), venv.step(actions);  // warm up (contexts, caches)
  int64_t steps = 0;
  auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    fill();
    venv.step(actions);
    steps += n;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return steps / elapsed;
}

}  // namespace

std::vector<std::string> run_sim_bench(const SimBenchOptions& o, const std::string& commit) {
  const std::string& renderer = o.renderer;
  const int image_size = o.image_size, threads = o.threads;
  const double seconds = o.seconds;
  std::vector<int> n_envs = o.n_envs;
  std::vector<std::string> layout_names = o.layouts;
  std::vector<std::string> lines;
  auto scene = sim::Scene::load();
  const sim::Suite& suite = sim::find_suite("ember10");
  std::vector<const sim::TaskSpec*> tasks;
  for (const auto& t : suite.tasks) tasks.push_back(&t);
  sim::RendererKind kind = sim::parse_renderer(renderer);
  int cores = usable_cores();
  if (n_envs.empty()) n_envs = {1, cores};
  if (threads < 0) throw Error(ErrorKind::kInvalidArgument, "--threads: must be >= 0");
  if (layout_names.empty()) layout_names = {"thread_per_view", "thread", "process"};
  std::vector<Layout> layouts = {parse_layout("none")};
  for (const auto& l : layout_names) {
    Layout layout = parse_layout(l);  // every name checked, also with --renderer none
    if (kind != sim::RendererKind::kNone) layouts.push_back(layout);
  }
  const std::string device = cpu_model();
  for (int n : n_envs) {
    if (n < 1) throw Error(ErrorKind::kInvalidArgument, "--n_envs: must be >= 1");
    const int t = threads > 0 ? std::min(threads, n) : n;
    for (const Layout& l : layouts) {
      double sps = measure(scene, tasks, n, t, kind, l, image_size, seconds);
      char line[1024];
      std::snprintf(line, sizeof line,
          "{\"bench\": \"sim\", \"commit\": \"%s\", \"cpu\": \"%s\", \"cores\": %d, \"renderer\": \"%s\", "
          "\"layout\": \"%s\", \"serialized_rendering\": %s, \"cameras\": %d, \"image_size\": %d, \"n_envs\": %d, "
          "\"threads\": %d, \"substeps\": %d, \"env_steps_per_s\": %.1f, \"env_steps_per_s_per_thread\": %.1f, "
          "\"physics_steps_per_s\": %.0f}",
          commit.c_str(), device.c_str(), cores, sim::renderer_name(l.render ? kind : sim::RendererKind::kNone), l.name.c_str(),
          l.serial ? "true" : "false", l.render ? 2 : 0, image_size, n, t, sim::kSubsteps, sps, sps / t, sps * sim::kSubsteps);
      std::printf("%s\n", line);
      std::fflush(stdout);
      lines.push_back(line);
    }
  }
  return lines;
}


}  // namespace ember::bench
