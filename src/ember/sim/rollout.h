// The loop shared by evaluation and demonstration collection: runs episodes from a source on
// a VectorEnv with a policy, executing each action chunk open loop for up to replan_steps
// steps (a new episode always asks the policy first), and reports every step and every
// finished episode to callbacks on the calling thread. A policy that answers asynchronously
// (Policy::submit / poll) does not hold the other envs back: they step while an env waits for
// its chunk.
#pragma once

#include <functional>
#include <optional>

#include "ember/sim/policy.h"
#include "ember/sim/vector_env.h"

namespace ember::sim {

struct RolloutHooks {
  // The next episode to run, or nothing when there are no more (called on the main thread).
  std::function<std::optional<Episode>()> next_episode;
  // Env `env` is about to take `action` in the state `obs` (step `step` of its episode).
  std::function<void(int env, const Episode& episode, int step, const Observation& obs, const Action& action)> on_step;
  // Env `env` finished `episode` (success or step limit) after `steps` steps.
  std::function<void(int env, const Episode& episode, bool success, int steps, const Observation& final_obs)> on_end;
  // Whether env `env`'s next observation should carry camera images although the policy is
  // not asked for actions on it (recording a video). Unset: only the observations the policy
  // acts on are rendered (those that end an action chunk, and every episode's first), and
  // none mid-episode for a policy that does not need images.
  std::function<bool(int env)> wants_images;
};

// Where the time went: the policy (act(), on the calling thread) and the environments
// (VectorEnv::step: physics, control and rendering on the worker threads).
struct RolloutStats {
  int64_t env_steps = 0;
  int64_t policy_calls = 0;  // act() calls
  double policy_s = 0;
  double env_s = 0;
};

// Runs until the source is exhausted and every started episode has finished.
// replan_steps >= 1.
RolloutStats run_rollouts(VectorEnv& venv, Policy& policy, int replan_steps, const RolloutHooks& hooks);

}  // namespace ember::sim
