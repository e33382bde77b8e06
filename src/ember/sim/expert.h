// Scripted experts, one per task family: waypoints over privileged state (object and target
// positions from the simulator), each reached through the same 7-D LIBERO action a learned
// policy emits, with Gaussian noise injected into the actions (seeded per episode) so that
// demonstrations show recoveries. Closed loop: chunks of one action.
// The noise perturbs what is executed; label() is the action the expert meant, without it
// (DART: the recorded demonstrations teach the correction, not the noise).
#pragma once

#include <map>

#include "ember/sim/controller.h"
#include "ember/sim/policy.h"

namespace ember::sim {

struct ExpertConfig {
  double noise = 0.08;        // std of the noise added to position actions (action units)
  ControllerConfig controller;  // the env's action scales (max_pos, max_rot)
};

class ExpertPolicy : public Policy {
 public:
  explicit ExpertPolicy(ExpertConfig config = {}) : cfg_(config) {}
  void reset(int env, const EpisodeStart& episode) override;
  std::vector<ActionChunk> act(const std::vector<PolicyInput>& inputs) override;
  bool needs_images() const override { return false; }
  std::string name() const override { return "expert"; }
  // The noise-free action behind env's last act() (what a demonstration records).
  const Action& label(int env) const { return states_.at(env).label; }

 private:
  struct State {
    int phase = 0;
    int counter = 0;
    Rng rng{0};
    Action label{};
  };
  Action act_one(State& s, const PolicyInput& in);
  Action pick(State& s, const Privileged& p, bool stack);
  Action push(State& s, const Privileged& p);
  Action press(State& s, const Privileged& p);
  // An action moving the end effector towards pos with gripper yaw `yaw`, at most `speed`
  // (fraction of the full step) per step, plus noise of std `noise`.
  Action move(State& s, const Privileged& p, const double* pos, double yaw, double gripper, double speed,
              double noise);

  ExpertConfig cfg_;
  std::map<int, State> states_;
};

}  // namespace ember::sim
