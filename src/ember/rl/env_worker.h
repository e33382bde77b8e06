// One environment worker: a thread owning a vector env of its own (physics on its thread, cameras
// through a GL context on it or in a render process of its own: --rl.render_layout) that runs
// episodes from the feed with sim::run_rollouts, asking the rollout server for a chunk as soon
// as one of its envs needs one. Workers do not wait for each other, nor do a worker's envs: while
// an env waits for its chunk the others step on (sim::run_rollouts holds only that one: were
// they all to wait for each request, envs whose episodes started at staggered steps would make
// the worker wait for the policy at nearly every step). An env whose next episode the
// budget does not allow yet goes idle until the worker's others are done too. Each finished episode goes back to the feed as a trajectory with its return:
//   return = success (0/1) + shaping * (phi(last state) - phi(first state))
//   phi    = -(|end effector - object| + |object - target|)   (metres; press: no target term)
// a potential-based shaping (it does not change which policies are optimal).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include "ember/rl/episode_feed.h"
#include "ember/rl/rollout_server.h"
#include "ember/sim/scene.h"

namespace ember::rl {

struct EnvWorkerOptions {
  int n_envs = 4;
  sim::RendererKind renderer = sim::RendererKind::kOSMesa;
  int image_size = 32;
  sim::RenderLayout render_layout = sim::RenderLayout::kAuto;  // vector_env.h
  int replan_steps = 5;
  double shaping = 0;
};

// Seconds a worker spent waiting (for the policy, for an episode); the rest of its wall time
// is the environment's (physics, rendering, building the policy's inputs).
struct WorkerClock {
  std::atomic<int64_t> policy_wait_ns{0}, feed_wait_ns{0}, env_steps{0};
};

class EnvWorker {
 public:
  // Starts the thread. A failure stops the worker and is passed to feed.fail().
  EnvWorker(std::shared_ptr<const sim::Scene> scene, std::vector<const sim::TaskSpec*> tasks, EnvWorkerOptions options,
            EpisodeFeed& feed, RolloutServer& server, const model::SampleBuilder& builder);
  ~EnvWorker();  // joins (call feed.stop() and cancel() first)
  // Abandons the episodes in flight at the next policy request.
  void cancel() { cancelled_ = true; }
  const WorkerClock& clock() const { return clock_; }

  static double potential(const sim::Observation& obs, const sim::TaskSpec& task);

 private:
  void run();

  std::shared_ptr<const sim::Scene> scene_;
  std::vector<const sim::TaskSpec*> tasks_;
  EnvWorkerOptions options_;
  EpisodeFeed& feed_;
  RolloutServer& server_;
  const model::SampleBuilder& builder_;
  std::atomic<bool> cancelled_{false};
  WorkerClock clock_;
  std::thread thread_;
};

}  // namespace ember::rl
