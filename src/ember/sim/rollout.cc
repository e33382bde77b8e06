#include "ember/sim/rollout.h"

#include <chrono>
#include <deque>
#include <string>

#include "ember/core/error.h"

namespace ember::sim {

RolloutStats run_rollouts(VectorEnv& venv, Policy& policy, int replan_steps, const RolloutHooks& hooks) {
  if (replan_steps < 1) fail(ErrorKind::kInvalidArgument, "--replan_steps: must be >= 1");
  const int n = venv.size();
  std::vector<Episode> episodes(n);
  std::vector<std::deque<Action>> queued(n);
  std::vector<int> steps(n, 0);
  std::vector<uint8_t> running(n, 0);
  std::vector<uint64_t> started(n, 0);
  // the env's episode ended (or it is the first reset): report it, then hand out the next one
  venv.set_episode_source([&](int env) -> std::optional<Episode> {
    if (running[env] && hooks.on_end) {
      const EnvInfo& info = venv.info(env);
      hooks.on_end(env, episodes[env], info.success, info.episode_step, venv.observation(env));
    }
    running[env] = 0;
    std::optional<Episode> e = hooks.next_episode();
    if (e) {
      episodes[env] = *e;
      queued[env].clear();
      steps[env] = 0;
      running[env] = 1;
      ++started[env];
      policy.reset(env, EpisodeStart{e->task, e->init_index, e->seed});
    }
    return e;
  });
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  RolloutStats stats;
  auto t_env = Clock::now();
  std::vector<Observation> obs = venv.reset(0);
  stats.env_s += since(t_env);
  std::vector<Action> actions(n);
  // pending: the env asked for a chunk that has not come yet; it is held (not stepped) meanwhile
  std::vector<uint8_t> render(n, 0), pending(n, 0);
  const bool needs_images = policy.needs_images();
  for (;;) {
    // ask the policy for the envs whose chunk ran out (and are not waiting for one already)
    std::vector<PolicyInput> inputs;
    bool any = false, can_step = false;
    for (int i = 0; i < n; ++i) {
      if (!venv.active(i)) continue;
      any = true;
      if (queued[i].empty() && !pending[i]) inputs.push_back(PolicyInput{i, &obs[i], episodes[i].task, steps[i]});
      can_step = can_step || !queued[i].empty();
    }
    if (!any) break;
    auto t_policy = Clock::now();
    if (!inputs.empty()) {
      policy.submit(inputs);
      ++stats.policy_calls;
      for (const auto& in : inputs) pending[in.env] = 1;
    }
    // the chunks answered so far; wait for one only when no env has an action to take
    for (auto& [env, chunk] : policy.poll(!can_step)) {
      if (env < 0 || env >= n || !pending[env]) fail(ErrorKind::kInternal, policy.name() + ": a chunk for env " + std::to_string(env) + ", which asked for none");
      if (chunk.empty()) fail(ErrorKind::kInternal, policy.name() + ": an empty chunk");
      pending[env] = 0;
      for (size_t j = 0; j < chunk.size() && int(j) < replan_steps; ++j) queued[env].push_back(chunk[j]);
    }
    stats.policy_s += since(t_policy);
    std::vector<uint64_t> before = started;
    std::fill(render.begin(), render.end(), 0);
    bool stepping = false;
    for (int i = 0; i < n; ++i) {
      if (!venv.active(i) || pending[i]) continue;
      stepping = true;
      actions[i] = queued[i].front();
      queued[i].pop_front();
      if (hooks.on_step) hooks.on_step(i, episodes[i], steps[i], obs[i], actions[i]);
      ++stats.env_steps;
      // cameras only where the policy acts next (its chunk ran out) or a recording wants them
      render[i] = (queued[i].empty() && needs_images) || (hooks.wants_images && hooks.wants_images(i));
    }
    if (!stepping) continue;  // every active env waits for its chunk
    t_env = Clock::now();
    StepResult r = venv.step(actions, &render, &pending);
    stats.env_s += since(t_env);
    for (int i = 0; i < n; ++i)
      if (running[i] && !pending[i] && started[i] == before[i]) ++steps[i];
    obs = std::move(r.observations);
  }
  return stats;
}

}  // namespace ember::sim
