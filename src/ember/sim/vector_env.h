// N environments stepped together on worker threads, with a gymnasium-style interface:
//
//   VectorEnv venv(scene, tasks, {.n_envs = 8, .renderer = RendererKind::kOSMesa});
//   auto obs = venv.reset(seed);                 // obs[i]: env i's first observation
//   auto r = venv.step(actions);                 // observations, rewards, terminated, truncated, infos
//
// Auto-reset (gymnasium 0.29's same-step mode): when env i's episode ends at a step
// (terminated: the task succeeded; truncated: the step limit), r.observations[i] is already
// the first observation of its next episode and r.infos[i].final_observation holds the last
// one of the finished episode.
//
// Env i lives on worker thread i % threads. Each worker renders its envs' cameras after their
// physics, all in one batch (render.h: one read-back per batch), through a GL context of its
// own: on its thread, or in a render process of its own (render_process.h), created on first
// use. Which episode an env runs next comes from the episode
// source (by default: env i runs tasks[i % tasks.size()] from one of its 50 evaluation states,
// drawn from a stream seeded by (seed, i)); a source that returns nothing leaves the env idle. While the source runs for env i, info(i) and
// observation(i) still describe the episode that just ended (none at reset()); a source that returns nothing leaves the env idle
// (its action is ignored, its observation repeats, infos[i].active is false).
// Not thread-safe: one caller thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ember/sim/env.h"
#include "ember/sim/gl_context.h"
#include "ember/sim/render.h"
#include "ember/sim/render_process.h"

namespace ember::sim {

struct Episode {
  const TaskSpec* task = nullptr;  // must outlive the episode
  int init_index = 0;              // which of the task's init states (for reports)
  InitState init;
  uint64_t seed = 0;               // for the policy's own randomness (expert noise)
  int id = 0;                      // the caller's number for it (evaluation: the trial)
};

enum class RenderLayout { kAuto, kThread, kProcess };
// "auto", "thread" or "process"; throws kInvalidArgument naming `flag` otherwise.
RenderLayout parse_render_layout(const std::string& name, const std::string& flag);
// Whether a worker renders through a process: kAuto resolved for the renderer.
bool renders_in_process(RenderLayout layout, RendererKind renderer);

struct VectorEnvConfig {
  int n_envs = 1;
  int threads = 0;                 // worker threads; 0: min(n_envs, hardware threads)
  RendererKind renderer = RendererKind::kNone;
  int image_size = 128;            // square camera images
  // Render on one worker at a time (each still in its own GL context). An experiment for
  // EGL, whose throughput fell with more threads on the H200 host (bench/results); physics
  // stays parallel.
  bool serialize_rendering = false;
  // Where each worker's GL context lives: on its thread, or in a child process of its own
  // (render_process.h; threads of one process contend in the NVIDIA driver). kAuto: a process
  // with EGL, the thread with OSMesa (bench/results/sim_h200_2026-12-01b.md).
  RenderLayout render_layout = RenderLayout::kAuto;
  // One read-back per worker batch (all its envs' cameras); false: one per camera image, the
  // renderer before 2026-12-01 (kept to measure against; in a render process, one per env).
  bool batch_rendering = true;
  ControllerConfig controller;
};

struct EnvInfo {
  bool active = true;              // false: idle, no episode (after an ending: no next episode)
  bool success = false;            // the episode's success predicate at this step
  int episode_step = 0;            // steps taken in the current (or just finished) episode
  const TaskSpec* task = nullptr;  // the current (or just finished) episode's task
  int init_index = 0;
  uint64_t episode_seed = 0;
  std::optional<Observation> final_observation;  // set when the episode ended at this step
};

struct StepResult {
  std::vector<Observation> observations;
  std::vector<float> rewards;      // 1 at the step the task succeeds, else 0
  std::vector<uint8_t> terminated, truncated;
  std::vector<EnvInfo> infos;
};

class VectorEnv {
 public:
  using EpisodeSource = std::function<std::optional<Episode>(int env)>;

  // tasks: the default source's task per env (at least one). Throws kInvalidArgument for a bad
  // configuration (naming --n_envs, --image_size); renderer failures surface at reset().
  VectorEnv(std::shared_ptr<const Scene> scene, std::vector<const TaskSpec*> tasks, VectorEnvConfig config);
  ~VectorEnv();
  VectorEnv(const VectorEnv&) = delete;
  VectorEnv& operator=(const VectorEnv&) = delete;

  // Replaces the episode source (before reset()).
  void set_episode_source(EpisodeSource source) { source_ = std::move(source); }
  // Starts an episode in every env; `seed` seeds the default source.
  std::vector<Observation> reset(uint64_t seed);
  // One control step of every active env (actions[i] for env i; size() actions). With `render`
  // (size() flags), env i's cameras are rendered after the step only where render[i] is set;
  // the others' observations carry no images (width 0). The first observation of an episode
  // that starts by auto-reset is always rendered. With `hold` (size() flags), env i is not
  // stepped where hold[i] is set: its state, observation and info stay as they were (its
  // action is ignored).
  StepResult step(const std::vector<Action>& actions, const std::vector<uint8_t>* render = nullptr,
                  const std::vector<uint8_t>* hold = nullptr);

  int size() const { return int(envs_.size()); }
  bool active(int env) const { return slots_[env].active; }
  const EnvInfo& info(int env) const { return slots_[env].info; }
  // env's latest observation; inside the episode source, the finished episode's last one
  const Observation& observation(int env) const { return obs_[env]; }
  const Env& env(int i) const { return *envs_[i]; }
  const VectorEnvConfig& config() const { return config_; }

 private:
  struct Slot {
    bool active = false;
    Episode episode;
    EnvInfo info;
    int episodes_started = 0;
  };
  // Runs fn(env) for every env in `which` on its worker, then renders the cameras of those for
  // which fn returned true, in one batch per worker; rethrows the first error. No fn: frees
  // the workers' renderers.
  void parallel(const std::vector<int>& which, const std::function<bool(int env)>& fn);
  void worker_loop(int w);
  // env's state into obs_[env]; its images are sized for rendering (render) or cleared
  void observe(int env, bool render);
  void render_batch(int worker, const std::vector<int>& envs);
  bool start_episode(int env);

  std::shared_ptr<const Scene> scene_;
  std::vector<const TaskSpec*> tasks_;
  VectorEnvConfig config_;
  std::vector<std::unique_ptr<Env>> envs_;
  std::vector<Slot> slots_;
  std::vector<Observation> obs_;
  EpisodeSource source_;
  uint64_t seed_ = 0;

  // workers
  std::vector<std::thread> threads_;
  struct WorkerRenderer {
    std::unique_ptr<CameraRenderer> local;   // made on the worker's thread
    std::unique_ptr<RenderProcess> remote;
  };
  std::vector<WorkerRenderer> renderers_;  // one per worker
  std::mutex mu_;
  std::mutex render_mu_;  // serialize_rendering
  std::condition_variable cv_, done_cv_;
  std::function<void(int worker)> job_;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
};

}  // namespace ember::sim
