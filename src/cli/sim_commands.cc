// `ember sim collect|view`, `ember eval` and `ember bench sim`: flag parsing only; the work is
// in src/ember/sim/. Built as stubs that fail with a clear error when MuJoCo is missing.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/sim_bench.h"
#include "cli/commands.h"
#include "cli/flag_ranges.h"
#include "ember/core/error.h"
#include "ember/core/thread_pool.h"

#ifdef EMBER_HAVE_SIM
#include <chrono>
#include <fstream>
#include <thread>

#include "ember_version.h"
#include "ember/io/png.h"
#include "ember/core/file.h"
#include "ember/sim/collect.h"
#include "ember/eval/evaluate.h"
#include "ember/sim/expert.h"
#include "ember/sim/render.h"
#include "ember/sim/vector_env.h"
#endif

namespace ember::cli {

namespace {

#ifdef EMBER_HAVE_SIM

int run_view(const std::string& task_name, const std::string& output, int image_size, int init, const std::string& renderer) {
  const sim::TaskSpec& task = sim::find_task(task_name);
  if (init < 0 || init >= sim::kEvalInitStates)
    fail(ErrorKind::kInvalidArgument, "--init: must be in 0.." + std::to_string(sim::kEvalInitStates - 1));
  if (image_size < 8 || image_size > 2048) fail(ErrorKind::kInvalidArgument, "--image_size: must be in 8..2048");
  if (output.empty()) fail(ErrorKind::kInvalidArgument, "--output: missing");
  sim::RendererKind kind = sim::parse_renderer(renderer);
  if (kind == sim::RendererKind::kNone) fail(ErrorKind::kInvalidArgument, "--renderer: none cannot draw a picture");
  auto scene = sim::Scene::load();
  sim::Env env(scene);
  env.reset(task, sim::eval_init_states(task)[init]);
  sim::CameraRenderer r(*scene, kind, image_size, image_size);
  io::Image im;
  im.width = 2 * image_size, im.height = image_size;
  im.rgb.resize(size_t(im.width) * im.height * 3);
  std::vector<uint8_t> a(size_t(image_size) * image_size * 3), w(a.size());
  r.render(env.data(), scene->agentview_camera, a.data());
  r.render(env.data(), scene->wrist_camera, w.data());
  for (int y = 0; y < image_size; ++y) {
    std::copy_n(a.data() + size_t(y) * image_size * 3, image_size * 3, im.rgb.data() + size_t(y) * im.width * 3);
    std::copy_n(w.data() + size_t(y) * image_size * 3, image_size * 3,
                im.rgb.data() + size_t(y) * im.width * 3 + image_size * 3);
  }
  std::vector<uint8_t> png = io::encode_png(im);
  AtomicFile f(output);
  f.write(png.data(), png.size());
  f.commit();
  std::printf("%s: %s (\"%s\", init state %d), agentview | wrist, %dx%d each, renderer %s\n", output.c_str(),
              task.name.c_str(), task.instruction.c_str(), init, image_size, image_size, sim::renderer_name(kind));
  return 0;
}

struct EvalArgs {
  eval::EvalOptions options;
  std::string policy, checkpoint, device, renderer = "auto", tokenizer_path, rename_map;
  bool no_videos = false;
  bool cuda_graphs = true;
};

int run_eval(EvalArgs& a) {
  if (a.policy.empty()) a.policy = a.checkpoint.empty() ? "" : "checkpoint";
  if (a.policy.empty()) fail(ErrorKind::kInvalidArgument, "--policy: missing (--policy expert, or --checkpoint DIR)");
  if (a.policy == "checkpoint" && a.checkpoint.empty())
    fail(ErrorKind::kInvalidArgument, "--checkpoint: missing for --policy checkpoint");
  if (a.options.flow_steps > 0 && a.policy != "checkpoint")
    fail(ErrorKind::kInvalidArgument, "--policy.num_steps: only with --checkpoint (the " + a.policy + " policy has no denoising steps)");
  sim::find_suite(a.options.suite);  // flag errors before anything starts
  if (a.options.output_dir.empty()) fail(ErrorKind::kInvalidArgument, "--output_dir: missing");
  check_output_dir(a.options.output_dir, "--output_dir");
  a.options.renderer = sim::parse_renderer(a.renderer);
  a.options.videos = !a.no_videos;
  sim::PolicyArgs pa;
  pa.checkpoint = a.checkpoint;
  pa.tokenizer_path = a.tokenizer_path;
  pa.rename_map = a.rename_map;
  pa.device = a.device;
  pa.image_size = a.options.image_size;
  pa.seed = a.options.seed;
  pa.cuda_graphs = a.cuda_graphs;
  pa.flow_steps = a.options.flow_steps;
  std::unique_ptr<sim::Policy> policy = sim::make_policy(a.policy, pa);
  eval::EvalResult r = eval::evaluate(a.options, *policy);
  std::printf("%lld env steps in %.1f s (policy %.1f s in %lld calls, environments %.1f s); results in %s/eval.json\n",
              (long long)r.env_steps, r.seconds, r.policy_seconds, (long long)r.policy_calls, r.env_seconds,
              a.options.output_dir.c_str());
  return 0;
}

int run_collect(sim::CollectOptions& o, const std::string& renderer) {
  sim::find_suite(o.suite);
  o.renderer = sim::parse_renderer(renderer);
  sim::CollectResult r = sim::collect(o);
  std::printf("%s: %lld episodes, %lld frames (%s cameras) from %lld expert attempts in %.1f s\n", r.root.c_str(),
              (long long)r.episodes, (long long)r.frames, r.camera_dtype.c_str(), (long long)r.attempts, r.seconds);
  return r.short_tasks.empty() ? 0 : 1;
}

#else

[[noreturn]] void no_sim() {
  fail_unsupported("this ember was built without MuJoCo (apt-get install libmujoco-dev, configure with -DEMBER_SIM=ON)");
}

#endif

}  // namespace

void add_sim_commands(CLI::App& app, Action& action) {
  CLI::App* simc = app.add_subcommand("sim", "simulated tasks: scripted demonstrations, scene pictures");
  simc->require_subcommand(1);

  // ember sim collect: the flags set sim::CollectOptions' fields (the renderer by its name)
  CLI::App* col = simc->add_subcommand("collect", "record successful expert episodes as a LeRobot v3.0 dataset");
#ifdef EMBER_HAVE_SIM
  auto c = std::make_shared<sim::CollectOptions>();
  auto renderer = std::make_shared<std::string>("auto");
  col->add_option("--suite", c->suite, "task suite (ember10, easy; default ember10)");
  col->add_option("--task", c->tasks, "only these tasks of the suite (repeatable)");
  col->add_option("--episodes_per_task", c->episodes_per_task, "successful episodes per task (default 10)");
  col->add_option("--output_dir", c->output_dir, "dataset root to create (absent or empty)")->required();
  col->add_option("--image_size", c->image_size, "camera width = height in pixels (default 128)");
  col->add_option("--seed", c->seed, "seed of the initial states and expert noise (default 0)");
  col->add_option("--n_envs", c->n_envs, "environments run in parallel (default 1)");
  col->add_option("--threads", c->threads, "worker threads (default: min(n_envs, cores))");
  col->add_option("--renderer", *renderer, "egl, osmesa or auto (default auto: EGL on a GPU, else OSMesa)");
  col->add_option("--camera_dtype", c->camera_dtype, "video or image (default: video when built with FFmpeg)");
  col->add_option("--noise", c->noise, "expert action noise std (default 0.08)");
  col->callback([c, renderer, &action] { action = [c, renderer] { return run_collect(*c, *renderer); }; });
#else
  col->allow_extras();
  col->callback([&action] { action = []() -> int { no_sim(); }; });
#endif

  // ember sim view
  struct ViewArgs {
    std::string task, output, renderer = "auto";
    int image_size = 256, init = 0;
  };
  auto v = std::make_shared<ViewArgs>();
  CLI::App* view = simc->add_subcommand("view", "render a task's scene from both cameras into a PNG");
  view->add_option("--task", v->task, "task name (e.g. pick_red_into_tray)")->required();
  view->add_option("--output", v->output, "PNG file to write")->required();
  view->add_option("--image_size", v->image_size, "camera width = height (default 256)");
  view->add_option("--init", v->init, "which evaluation init state (0..49, default 0)");
  view->add_option("--renderer", v->renderer, "egl, osmesa or auto");
  view->callback([v, &action] {
    action = [v]() -> int {
#ifdef EMBER_HAVE_SIM
      return run_view(v->task, v->output, v->image_size, v->init, v->renderer);
#else
      no_sim();
#endif
    };
  });

  // ember sim export_init_states: freezes the evaluation init states as JSON (assets/sim/init_states)
  auto xdir = std::make_shared<std::string>();
  CLI::App* xs = simc->add_subcommand("export_init_states", "write every task's 50 evaluation init states as JSON");
  xs->add_option("--output_dir", *xdir, "folder for <task>.json (e.g. assets/sim/init_states)")->required();
  xs->callback([xdir, &action] {
    action = [xdir]() -> int {
#ifdef EMBER_HAVE_SIM
      int n = 0;
      for (const std::string& suite : sim::suite_names())
        for (const sim::TaskSpec& t : sim::find_suite(suite).tasks) sim::export_init_states(t, *xdir), ++n;
      std::printf("%s: init states of %d tasks\n", xdir->c_str(), n);
      return 0;
#else
      no_sim();
#endif
    };
  });

  // ember eval
  auto e = std::make_shared<
#ifdef EMBER_HAVE_SIM
      EvalArgs
#else
      int
#endif
      >();
  CLI::App* ev = app.add_subcommand("eval", "closed-loop evaluation of a policy in simulation");
#ifdef EMBER_HAVE_SIM
  ev->add_option("--policy", e->policy, "expert, or a registered policy (default with --checkpoint: checkpoint)");
  ev->add_option("--checkpoint", e->checkpoint, "trained policy checkpoint directory, or a LeRobot / openpi policy directory");
  ev->add_option("--policy.tokenizer_path", e->tokenizer_path, "SentencePiece .model or HF BPE tokenizer.json / directory for a LeRobot directory's prompts");
  ev->add_option("--rename_map", e->rename_map,
                 "JSON: simulator camera -> the policy's camera, e.g. '{\"observation.images.agentview\": "
                 "\"observation.images.base_0_rgb\"}' (lerobot-train's flag)");
  ev->add_option("--device", e->device, "device for the policy (e.g. cuda, cpu)");
  ev->add_option("--cuda_graphs", e->cuda_graphs, "true | false: on CUDA, a checkpoint sampled by the engine (bf16 weights, one CUDA graph per batch shape; default true) or eagerly as loaded");
  ev->add_option("--suite", e->options.suite, "task suite (default ember10)");
  ev->add_option("--task", e->options.tasks, "only these tasks of the suite (repeatable)");
  ev->add_option("--trials", e->options.trials, "episodes per task (default 50)");
  ev->add_option("--n_envs", e->options.n_envs, "environments run in parallel (default 1)");
  ev->add_option("--threads", e->options.threads, "worker threads (default: min(n_envs, cores))");
  ev->add_option("--seed", e->options.seed, "seed (default 0)");
  ev->add_option("--replan_steps", e->options.replan_steps, "actions of each chunk executed before replanning (default 1)");
  ev->add_option("--policy.num_steps", e->options.flow_steps, "a checkpoint's denoising steps (default: the policy's own)")
      ->check(in_range(1, 1000));
  ev->add_option("--image_size", e->options.image_size, "camera width = height (default 128)");
  ev->add_option("--renderer", e->renderer, "egl, osmesa, none or auto");
  ev->add_option("--output_dir", e->options.output_dir, "where eval.json and videos go (absent or empty)");
  ev->add_flag("--no_videos", e->no_videos, "write no rollout videos");
#endif
  ev->callback([e, &action] {
    action = [e]() -> int {
#ifdef EMBER_HAVE_SIM
      return run_eval(*e);
#else
      no_sim();
#endif
    };
  });

  // ember bench sim (added to the `bench` group when it exists)
  auto b = std::make_shared<bench::SimBenchOptions>();
  CLI::App* bench = nullptr;
  try {
    bench = app.get_subcommand("bench");
  } catch (const CLI::OptionNotFound&) {
    bench = app.add_subcommand("bench", "benchmarks (one JSON line per result)");
  }
  CLI::App* bs = bench->add_subcommand("sim", "env steps/s without rendering and with each rendering layout, N envs on N threads");
  bs->add_option("--renderer", b->renderer, "egl, osmesa, none or auto");
  bs->add_option("--image_size", b->image_size, "camera width = height (default 128)")->check(in_range(8, 2048));
  bs->add_option("--n_envs", b->n_envs, "env counts to measure (default: 1 and the core count)")->check(in_range(1, 1024));
  bs->add_option("--threads", b->threads, "worker threads (default: one per env)")->check(in_range(0, kMaxThreads));
  bs->add_option("--layout", b->layouts,
                 "thread_per_view | thread | thread_serial | process (repeatable; default the first, second and last)");
  bs->add_option("--seconds", b->seconds, "seconds per measurement (default 3)")->check(in_range(0.01, kMaxSeconds));
  bs->callback([b, &action] {
    action = [b]() -> int {
#ifdef EMBER_HAVE_SIM
      bench::run_sim_bench(*b, EMBER_GIT_COMMIT);
      return 0;
#else
      no_sim();
#endif
    };
  });
}

}  // namespace ember::cli
