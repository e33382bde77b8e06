#include "ember/sim/vector_env.h"

#include <algorithm>
#include <string>

#include "ember/core/error.h"
#include "ember/core/thread_pool.h"

namespace ember::sim {

RenderLayout parse_render_layout(const std::string& name, const std::string& flag) {
  if (name == "auto") return RenderLayout::kAuto;
  if (name == "thread") return RenderLayout::kThread;
  if (name == "process") return RenderLayout::kProcess;
  fail(ErrorKind::kInvalidArgument, flag + ": expected auto, thread or process, got '" + name + "'");
}

bool renders_in_process(RenderLayout layout, RendererKind renderer) {
  if (layout == RenderLayout::kAuto) return renderer == RendererKind::kEGL;
  return layout == RenderLayout::kProcess;
}

VectorEnv::VectorEnv(std::shared_ptr<const Scene> scene, std::vector<const TaskSpec*> tasks, VectorEnvConfig config)
    : scene_(std::move(scene)), tasks_(std::move(tasks)), config_(config) {
  if (config_.n_envs < 1 || config_.n_envs > 4096)
    fail(ErrorKind::kInvalidArgument, "--n_envs: " + std::to_string(config_.n_envs) + " is out of range (1..4096)");
  if (config_.image_size < 8 || config_.image_size > 2048)
    fail(ErrorKind::kInvalidArgument,
         "--image_size: " + std::to_string(config_.image_size) + " is out of range (8..2048)");
  if (config_.threads < 0) fail(ErrorKind::kInvalidArgument, "--threads: must be >= 0");
  if (tasks_.empty()) fail(ErrorKind::kInvalidArgument, "VectorEnv: no tasks");
  int hw = usable_cores();
  int threads = config_.threads > 0 ? config_.threads : std::min(config_.n_envs, hw);
  threads = std::min(threads, config_.n_envs);
  config_.threads = threads;
  for (int i = 0; i < config_.n_envs; ++i) envs_.push_back(std::make_unique<Env>(scene_, config_.controller));
  slots_.resize(config_.n_envs);
  obs_.resize(config_.n_envs);
  renderers_.resize(threads);
  for (int w = 0; w < threads; ++w) threads_.emplace_back([this, w] { worker_loop(w); });
}

VectorEnv::~VectorEnv() {
  // renderers (GL contexts) are destroyed on the threads that made them
  try {
    std::vector<int> all;
    parallel(all, {});
  } catch (...) {
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void VectorEnv::worker_loop(int w) {
  uint64_t seen = 0;
  for (;;) {
    std::function<void(int)> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) break;
      seen = generation_;
      job = job_;
    }
    std::exception_ptr err;
    try {
      job(w);
    } catch (...) {
      err = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (err && !error_) error_ = err;
    if (--pending_ == 0) done_cv_.notify_all();
  }
  renderers_[w] = {};
}

void VectorEnv::parallel(const std::vector<int>& which, const std::function<bool(int)>& fn) {
  const int T = int(threads_.size());
  std::function<void(int)> job = [&](int w) {
    if (!fn) {  // teardown: free this worker's renderer
      renderers_[w] = {};
      return;
    }
    std::vector<int> to_render;
    for (int env : which) {
      if (env % T != w) continue;
      if (fn(env)) to_render.push_back(env);
    }
    if (!to_render.empty()) render_batch(w, to_render);
  };
  std::unique_lock<std::mutex> lock(mu_);
  job_ = job;
  error_ = nullptr;
  pending_ = T;
  ++generation_;
  cv_.notify_all();
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

void VectorEnv::observe(int env, bool render) {
  Observation* obs = &obs_[env];
  envs_[env]->observe(obs);
  const int n = render && config_.renderer != RendererKind::kNone ? config_.image_size : 0;
  obs->width = obs->height = n;
  obs->agentview.resize(size_t(n) * n * 3);
  obs->wrist.resize(size_t(n) * n * 3);
}

void VectorEnv::render_batch(int w, const std::vector<int>& envs) {
  if (config_.renderer == RendererKind::kNone) return;
  const int T = int(threads_.size());
  const int per_worker = (size() + T - 1) / T;  // at most this many envs in one batch
  WorkerRenderer& r = renderers_[w];
  const int n = config_.image_size;
  if (!r.local && !r.remote) {
    const int batch = config_.batch_rendering ? per_worker : 1;
    if (renders_in_process(config_.render_layout, config_.renderer)) r.remote = std::make_unique<RenderProcess>(*scene_, config_.renderer, n, batch);
    else r.local = std::make_unique<CameraRenderer>(*scene_, config_.renderer, n, n, config_.batch_rendering ? 2 * batch : 1);
  }
  std::unique_lock<std::mutex> serial(render_mu_, std::defer_lock);
  if (config_.serialize_rendering) serial.lock();
  if (r.remote) {
    const int batch = r.remote->max_envs();
    for (size_t at = 0; at < envs.size(); at += size_t(batch)) {
      std::vector<const mjData*> ds;
      std::vector<uint8_t*> av, wr;
      for (size_t k = at; k < std::min(envs.size(), at + size_t(batch)); ++k) {
        ds.push_back(envs_[envs[k]]->data());
        av.push_back(obs_[envs[k]].agentview.data());
        wr.push_back(obs_[envs[k]].wrist.data());
      }
      r.remote->render(ds.data(), int(ds.size()), av.data(), wr.data());
    }
    return;
  }
  std::vector<View> views;
  for (int env : envs) {
    views.push_back({envs_[env]->data(), scene_->agentview_camera, obs_[env].agentview.data()});
    views.push_back({envs_[env]->data(), scene_->wrist_camera, obs_[env].wrist.data()});
  }
  r.local->render_views(views.data(), int(views.size()));
}

// Asks the source for env's next episode (main thread); false leaves the env idle.
bool VectorEnv::start_episode(int env) {
  Slot& s = slots_[env];
  std::optional<Episode> next;
  if (source_) {
    next = source_(env);
  } else {
    const TaskSpec* task = tasks_[env % tasks_.size()];
    Rng rng(mix_seed(mix_seed(seed_, uint64_t(env)), uint64_t(s.episodes_started)));
    Episode e;
    e.task = task;
    e.init_index = int(rng.next() % kEvalInitStates);
    e.init = eval_init_states(*task)[e.init_index];
    e.seed = rng.next();
    next = std::move(e);
  }
  s.active = next.has_value();
  if (!s.active) {
    s.info.active = false;
    return false;
  }
  s.episode = std::move(*next);
  ++s.episodes_started;
  s.info = EnvInfo{};
  s.info.task = s.episode.task;
  s.info.init_index = s.episode.init_index;
  s.info.episode_seed = s.episode.seed;
  return true;
}

std::vector<Observation> VectorEnv::reset(uint64_t seed) {
  seed_ = seed;
  std::vector<int> starting;
  for (int i = 0; i < size(); ++i) {
    slots_[i].episodes_started = 0;
    if (start_episode(i)) starting.push_back(i);
  }
  parallel(starting, [this](int env) {
    envs_[env]->reset(*slots_[env].episode.task, slots_[env].episode.init);
    observe(env, true);
    return true;
  });
  return obs_;
}

StepResult VectorEnv::step(const std::vector<Action>& actions, const std::vector<uint8_t>* render,
                           const std::vector<uint8_t>* hold) {
  if (int(actions.size()) != size())
    fail(ErrorKind::kInvalidArgument, "VectorEnv::step: " + std::to_string(actions.size()) + " actions for " +
                                          std::to_string(size()) + " envs");
  if (render && int(render->size()) != size())
    fail(ErrorKind::kInvalidArgument, "VectorEnv::step: " + std::to_string(render->size()) + " render flags for " +
                                          std::to_string(size()) + " envs");
  if (hold && int(hold->size()) != size())
    fail(ErrorKind::kInvalidArgument, "VectorEnv::step: " + std::to_string(hold->size()) + " hold flags for " +
                                          std::to_string(size()) + " envs");
  StepResult r;
  const int n = size();
  r.infos.resize(n);
  r.rewards.assign(n, 0.f);
  r.terminated.assign(n, 0);
  r.truncated.assign(n, 0);
  std::vector<int> stepping;
  for (int i = 0; i < n; ++i)
    if (slots_[i].active && !(hold && (*hold)[i])) stepping.push_back(i);
  std::vector<uint8_t> success(n, 0);
  parallel(stepping, [&](int env) {
    Env& e = *envs_[env];
    e.step(actions[env]);
    success[env] = e.success();
    const bool draw = !render || (*render)[env];
    observe(env, draw);
    return draw;
  });
  // finished episodes: keep their final observation, start the next ones
  std::vector<int> restarting;
  for (int env : stepping) {
    Slot& s = slots_[env];
    s.info.success = success[env];
    s.info.episode_step = envs_[env]->steps();
    r.rewards[env] = success[env] ? 1.f : 0.f;
    r.terminated[env] = success[env];
    r.truncated[env] = !success[env] && envs_[env]->truncated();
    if (r.terminated[env] || r.truncated[env]) {
      EnvInfo finished = s.info;
      finished.final_observation = obs_[env];
      if (start_episode(env)) restarting.push_back(env);
      r.infos[env] = std::move(finished);
      r.infos[env].active = s.active;  // whether a next episode started
    }
  }
  parallel(restarting, [this](int env) {
    envs_[env]->reset(*slots_[env].episode.task, slots_[env].episode.init);
    observe(env, true);
    return true;
  });
  for (int i = 0; i < n; ++i)
    if (!r.infos[i].final_observation) r.infos[i] = slots_[i].info;
  r.observations = obs_;
  return r;
}

}  // namespace ember::sim
