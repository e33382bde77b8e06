// LIBERO-style end-effector control: a 7-D action in [-1, 1] (delta position, delta rotation as
// an axis-angle vector in the world frame, gripper: -1 open, +1 closed) becomes a goal pose
// relative to the current one (at most max_pos metres and max_rot radians per control step),
// tracked for the control step's 25 physics substeps by damped-least-squares differential IK
// (mj_jacSite) with a null-space pull to the home posture, and a joint-space PD law with
// gravity and Coriolis compensation (qfrc_bias) on torque-controlled joints.
#pragma once

#include <mujoco/mujoco.h>

#include <array>

#include "ember/sim/scene.h"

namespace ember::sim {

using Action = std::array<float, kActionDim>;

struct ControllerConfig {
  double max_pos = 0.03;   // metres per control step at |action| = 1
  double max_rot = 0.3;    // radians per control step at |action| = 1
  double omega = 60;       // joint servo bandwidth (rad/s): kp = omega^2 M_ii, kd = 2 zeta omega M_ii
  double zeta = 1.0;
  double damping = 0.05;   // DLS damping lambda
  double null_gain = 0.3;  // pull towards the home posture in the Jacobian's null space
};

class Controller {
 public:
  explicit Controller(const Scene& scene, ControllerConfig config = {});

  // Starts a control step: sets the goal pose from the action (clipped to [-1, 1]) and the
  // current end-effector pose in d (kinematics must be current), and the finger targets.
  void set_action(const mjData* d, const Action& action);
  // Holds the current pose (the goal after a reset).
  void hold(const mjData* d);
  // One physics substep: call between mj_step1 and mj_step2; writes d->ctrl.
  void apply(mjData* d) const;

  const double* goal_pos() const { return goal_pos_; }

 private:
  const Scene& scene_;
  ControllerConfig cfg_;
  double goal_pos_[3] = {0, 0, 0};
  double goal_quat_[4] = {1, 0, 0, 0};
  double finger_target_ = 0.045;
};

// Orientation helpers (world frame). axis-angle of a rotation matrix (9, row-major) -> out (3).
void mat_to_axis_angle(const double* mat, double* out);
// The rotation vector taking orientation `from` to `to` (both quaternions): to = exp(v) * from.
void rotation_error(const double* to_quat, const double* from_quat, double* v);

}  // namespace ember::sim
