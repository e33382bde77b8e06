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
  std::vector<uint8_t> render(n, 0);
  const bool needs_images = policy.needs_images();
  for (;;) {
    // ask the policy for the envs whose chunk ran out
    std::vector<PolicyInput> inputs;
    bool any = false;
    for (int i = 0; i < n; ++i) {
      any = any || venv.active(i);
      if (venv.active(i) && queued[i].empty()) inputs.push_back(PolicyInput{i, &obs[i], episodes[i].task, steps[i]});
    }
    if (!any) break;
    if (!inputs.empty()) {
      auto t_policy = Clock::now();
      std::vector<ActionChunk> chunks = policy.act(inputs);
      stats.policy_s += since(t_policy);
      ++stats.policy_calls;
      if (chunks.size() != inputs.size())
        fail(ErrorKind::kInternal, policy.name() + ": act() returned " + std::to_string(chunks.size()) +
                                       " chunks for " + std::to_string(inputs.size()) + " inputs");
      for (size_t k = 0; k < inputs.size(); ++k) {
        if (chunks[k].empty()) fail(ErrorKind::kInternal, policy.name() + ": act() returned an empty chunk");
        const int env = inputs[k].env;
        for (size_t j = 0; j < chunks[k].size() && int(j) < replan_steps; ++j) queued[env].push_back(chunks[k][j]);
      }
    }
    std::vector<uint64_t> before = started;
    std::fill(render.begin(), render.end(), 0);
    for (int i = 0; i < n; ++i) {
      if (!venv.active(i)) continue;
      actions[i] = queued[i].front();
      queued[i].pop_front();
      if (hooks.on_step) hooks.on_step(i, episodes[i], steps[i], obs[i], actions[i]);
      ++stats.env_steps;
      // cameras only where the policy acts next (its chunk ran out) or a recording wants them
      render[i] = (queued[i].empty() && needs_images) || (hooks.wants_images && hooks.wants_images(i));
    }
    t_env = Clock::now();
    StepResult r = venv.step(actions, &render);
    stats.env_s += since(t_env);
    for (int i = 0; i < n; ++i)
      if (running[i] && started[i] == before[i]) ++steps[i];
    obs = std::move(r.observations);
  }
  return stats;
}

}  // namespace ember::sim
