#include "ember/rl/env_worker.h"

#include <ATen/Parallel.h>

#include <chrono>
#include <cmath>
#include <future>
#include <list>
#include <map>

#include "ember/core/error.h"
#include "ember/eval/checkpoint_policy.h"
#include "ember/sim/rollout.h"

namespace ember::rl {

namespace {

using Clock = std::chrono::steady_clock;
int64_t ns_since(Clock::time_point t) { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count(); }

struct Cancelled {};

double distance(const std::array<double, 3>& a, const std::array<double, 3>& b) {
  return std::sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
}

// The sim::Policy the worker's rollout loop drives: each submit() becomes requests to the server
// (one per env that needs a chunk), answered by dynamic batches; poll() records the answers in
// the envs' trajectories, and the rollout loop steps the envs that have actions meanwhile.
class ServerPolicy final : public sim::Policy {
 public:
  ServerPolicy(RolloutServer& server, const model::SampleBuilder& builder, EpisodeFeed& feed, WorkerClock& clock,
               const std::atomic<bool>& cancelled, int n_envs)
      : server_(server), builder_(builder), feed_(feed), clock_(clock), cancelled_(cancelled), trajectories_(size_t(n_envs)),
        seeds_(size_t(n_envs)) {}

  // the episode the feed just handed out (the rollout loop resets an env with it right after)
  void starting(const sim::Episode& e) { starting_[e.seed] = e.id; }

  void reset(int env, const sim::EpisodeStart& start) override {
    const int id = starting_.at(start.seed);
    starting_.erase(start.seed);
    Trajectory& t = trajectories_[size_t(env)];
    t = Trajectory{};
    t.group = feed_.group_of(id);
    t.member = feed_.member_of(id);
    seeds_[size_t(env)] = start.seed;
  }

  // one request per input; the answers come through poll()
  void submit(const std::vector<sim::PolicyInput>& inputs) override {
    if (cancelled_) throw Cancelled{};
    for (const auto& in : inputs) {
      auto sample = builder_.build(eval::observation_item(*in.obs, in.task->instruction, builder_.spec().state_key), false);
      const Trajectory& t = trajectories_[size_t(in.env)];
      const uint64_t seed = sim::mix_seed(seeds_[size_t(in.env)], uint64_t(t.chunks.size()));
      auto reply = server_.submit(sample, seed);
      pending_.push_back({in.env, std::move(reply), std::move(sample), EnvWorker::potential(*in.obs, *in.task)});
    }
  }

  // the answered requests, recorded in their envs' trajectories; with `wait`, at least one
  std::vector<std::pair<int, sim::ActionChunk>> poll(bool wait) override {
    if (cancelled_) throw Cancelled{};
    std::vector<std::pair<int, sim::ActionChunk>> out;
    if (wait && !pending_.empty()) {
      const auto t = Clock::now();
      pending_.front().reply.wait();
      clock_.policy_wait_ns += ns_since(t);
    }
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->reply.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
        ++it;
        continue;
      }
      PolicyResponse r = it->reply.get();
      ChunkRecord c{std::move(it->sample), r.chain, r.log_prob, r.noisy_step, r.version};
      c.value = r.value;
      c.phi = it->phi;
      trajectories_[size_t(it->env)].chunks.push_back(std::move(c));
      out.emplace_back(it->env, std::move(r.chunk));
      it = pending_.erase(it);
    }
    return out;
  }

  // the blocking form: every input's chunk, in order
  std::vector<sim::ActionChunk> act(const std::vector<sim::PolicyInput>& inputs) override {
    submit(inputs);
    std::map<int, sim::ActionChunk> got;
    while (got.size() < inputs.size())
      for (auto& [env, chunk] : poll(true)) got[env] = std::move(chunk);
    std::vector<sim::ActionChunk> chunks;
    for (const auto& in : inputs) chunks.push_back(std::move(got.at(in.env)));
    return chunks;
  }

  Trajectory& trajectory(int env) { return trajectories_[size_t(env)]; }

 private:
  struct Pending {
    int env;
    std::future<PolicyResponse> reply;
    model::PolicySample sample;
    double phi;  // the potential at the request's observation (value_head.h's rewards)
  };
  std::list<Pending> pending_;  // oldest first
  RolloutServer& server_;
  const model::SampleBuilder& builder_;
  EpisodeFeed& feed_;
  WorkerClock& clock_;
  const std::atomic<bool>& cancelled_;
  std::vector<Trajectory> trajectories_;
  std::vector<uint64_t> seeds_;
  std::map<uint64_t, int> starting_;
};

}  // namespace

double EnvWorker::potential(const sim::Observation& obs, const sim::TaskSpec& task) {
  const auto& p = obs.privileged;
  double phi = -distance(p.ee, p.object);
  if (task.family != sim::Family::kPress) phi -= distance(p.object, p.target);
  return phi;
}

EnvWorker::EnvWorker(std::shared_ptr<const sim::Scene> scene, std::vector<const sim::TaskSpec*> tasks, EnvWorkerOptions options,
                     EpisodeFeed& feed, RolloutServer& server, const model::SampleBuilder& builder)
    : scene_(std::move(scene)), tasks_(std::move(tasks)), options_(options), feed_(feed), server_(server), builder_(builder) {
  thread_ = std::thread([this] { run(); });
}

EnvWorker::~EnvWorker() {
  if (thread_.joinable()) thread_.join();
}

void EnvWorker::run() {
  // one intra-op thread: the workers are many threads already, and each would otherwise start a
  // team the size of the machine for its small tensors (OpenMP's team size is per thread)
  at::set_num_threads(1);
  try {
    sim::VectorEnvConfig vc;
    vc.n_envs = options_.n_envs;
    vc.threads = 1;
    vc.renderer = options_.renderer;
    vc.image_size = options_.image_size;
    vc.render_layout = options_.render_layout;
    sim::VectorEnv venv(scene_, tasks_, vc);
    ServerPolicy policy(server_, builder_, feed_, clock_, cancelled_, options_.n_envs);
    std::vector<double> phi0(size_t(options_.n_envs), 0.0);
    sim::RolloutHooks hooks;
    hooks.next_episode = [&]() -> std::optional<sim::Episode> {
      auto e = feed_.next();
      if (e) policy.starting(*e);
      return e;
    };
    hooks.on_step = [&](int env, const sim::Episode& e, int step, const sim::Observation& obs, const sim::Action&) {
      if (step == 0) phi0[size_t(env)] = potential(obs, *e.task);
      clock_.env_steps += 1;
    };
    hooks.on_end = [&](int env, const sim::Episode& e, bool success, int steps, const sim::Observation& final_obs) {
      Trajectory t = std::move(policy.trajectory(env));
      t.success = success;
      t.env_steps = steps;
      const double phi_end = potential(final_obs, *e.task);
      t.ret = (success ? 1.0 : 0.0) + options_.shaping * (phi_end - phi0[size_t(env)]);
      // each chunk's reward (value_head.h): they sum to the return
      for (size_t k = 0; k < t.chunks.size(); ++k) {
        const double next = k + 1 < t.chunks.size() ? t.chunks[k + 1].phi : phi_end;
        t.chunks[k].reward = options_.shaping * (next - t.chunks[k].phi) + (k + 1 == t.chunks.size() && success ? 1.0 : 0.0);
      }
      feed_.finish(std::move(t));
    };
    // an env whose next episode is not allowed yet goes idle; once all are, wait for the budget
    for (;;) {
      const auto wait = Clock::now();
      const bool more = feed_.wait_for_episode();
      clock_.feed_wait_ns += ns_since(wait);
      if (!more) break;
      sim::run_rollouts(venv, policy, options_.replan_steps, hooks);
    }
  } catch (const Cancelled&) {
  } catch (...) {
    feed_.fail(std::current_exception());
  }
}

}  // namespace ember::rl
