#include "ember/sim/collect.h"

#include <chrono>
#include <cstdio>
#include <map>

#include "ember/core/error.h"
#include "ember/data/dataset_writer.h"
#include "ember/io/video/video_decoder.h"
#include "ember/core/output_dir.h"
#include "ember/sim/expert.h"
#include "ember/sim/features.h"
#include "ember/sim/rollout.h"

namespace ember::sim {

namespace {

struct Recorded {
  std::vector<Observation> obs;
  std::vector<Action> actions;
};

}  // namespace

CollectResult collect(const CollectOptions& opt) {
  const Suite& suite = find_suite(opt.suite);
  std::vector<const TaskSpec*> tasks = select_tasks(suite, opt.tasks);
  if (opt.episodes_per_task < 1 || opt.episodes_per_task > 100000)
    fail(ErrorKind::kInvalidArgument, "--episodes_per_task: must be in 1..100000");
  if (opt.renderer == RendererKind::kNone)
    fail(ErrorKind::kInvalidArgument, "--renderer: none cannot record camera images; use osmesa or egl");
  check_output_dir(opt.output_dir, "--output_dir");
  std::string dtype = opt.camera_dtype.empty() ? (io::video_support_available() ? "video" : "image") : opt.camera_dtype;
  if (dtype != "video" && dtype != "image")
    fail(ErrorKind::kInvalidArgument, "--camera_dtype: '" + dtype + "' (video or image)");
  if (dtype == "video" && !io::video_support_available())
    fail_unsupported("--camera_dtype video: ember was built without FFmpeg; use --camera_dtype image");
  const int n = opt.image_size;
  if (n < 8 || n > 2048) fail(ErrorKind::kInvalidArgument, "--image_size: " + std::to_string(n) + " is out of range (8..2048)");
  if (dtype == "video" && n % 2) fail(ErrorKind::kInvalidArgument, "--image_size: must be even for video cameras (yuv420p)");

  auto t0 = std::chrono::steady_clock::now();
  std::vector<data::Feature> features = dataset_features(n, dtype);
  data::WriterOptions wo;
  wo.video.fps_num = int(kControlHz);
  data::DatasetWriter writer = data::DatasetWriter::create(opt.output_dir, kControlHz, features, kRobotType, wo);

  auto scene = Scene::load();
  VectorEnvConfig vc;
  vc.n_envs = opt.n_envs;
  vc.threads = opt.threads;
  vc.renderer = opt.renderer;
  vc.image_size = n;
  VectorEnv venv(scene, tasks, vc);
  ExpertConfig ec;
  ec.noise = opt.noise;
  ExpertPolicy expert(ec);

  // per task: fresh init states (stream seed 1 + seed: never the evaluation stream 0)
  const int K = opt.episodes_per_task, max_attempts = 4 * K;
  std::vector<std::vector<InitState>> inits;
  for (const TaskSpec* t : tasks) inits.push_back(make_init_states(*t, max_attempts, mix_seed(opt.seed, 0xC0113C7) | 1));
  std::vector<int> saved(tasks.size(), 0), in_flight(tasks.size(), 0), attempts(tasks.size(), 0);
  std::map<const TaskSpec*, size_t> index;
  for (size_t i = 0; i < tasks.size(); ++i) index[tasks[i]] = i;
  std::vector<Recorded> rec(opt.n_envs);
  CollectResult result;
  result.root = opt.output_dir;
  result.camera_dtype = dtype;

  RolloutHooks hooks;
  // task by task; a task takes more attempts while successes + running episodes fall short
  hooks.next_episode = [&]() -> std::optional<Episode> {
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (saved[i] + in_flight[i] >= K || attempts[i] >= max_attempts) continue;
      Episode e;
      e.task = tasks[i];
      e.id = attempts[i];
      e.init_index = attempts[i];
      e.init = inits[i][attempts[i]];
      e.seed = mix_seed(mix_seed(opt.seed, hash_string(tasks[i]->name)), uint64_t(attempts[i]) + 1000003);
      ++attempts[i];
      ++in_flight[i];
      ++result.attempts;
      return e;
    }
    return std::nullopt;
  };
  hooks.wants_images = [](int) { return true; };  // every frame is recorded
  hooks.on_step = [&](int env, const Episode&, int step, const Observation& obs, const Action&) {
    if (step == 0) rec[env] = Recorded{};
    rec[env].obs.push_back(obs);
    rec[env].actions.push_back(expert.label(env));  // what the expert meant; the noise only moved the arm
  };
  hooks.on_end = [&](int env, const Episode& e, bool success, int, const Observation&) {
    size_t i = index[e.task];
    --in_flight[i];
    if (success && saved[i] < K) {
      for (size_t k = 0; k < rec[env].obs.size(); ++k) {
        writer.add_frame(observation_frame(rec[env].obs[k], rec[env].actions[k]));
      }
      writer.save_episode(e.task->instruction);
      ++saved[i];
      result.frames += int64_t(rec[env].obs.size());
      if (opt.progress && saved[i] == K)
        std::fprintf(stderr, "[collect] %-26s %d episodes (%d attempts)\n", e.task->name.c_str(), K, attempts[i]);
    }
    rec[env] = Recorded{};
  };
  run_rollouts(venv, expert, 1, hooks);
  for (size_t i = 0; i < tasks.size(); ++i)
    if (saved[i] < K) {
      result.short_tasks.push_back(tasks[i]->name);
      std::fprintf(stderr, "[collect] %s: only %d of %d episodes succeeded in %d attempts\n", tasks[i]->name.c_str(),
                   saved[i], K, attempts[i]);
    }
  result.episodes = writer.num_episodes();
  if (result.episodes == 0)
    fail(ErrorKind::kInternal, "ember sim collect: no expert episode succeeded (" + std::to_string(result.attempts) +
                                   " attempts); nothing written");
  writer.finalize();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace ember::sim
