#include "ember/sim/controller.h"

#include <algorithm>
#include <cmath>

namespace ember::sim {

void mat_to_axis_angle(const double* mat, double* out) {
  double q[4];
  mju_mat2Quat(q, mat);
  if (q[0] < 0) mju_scl(q, q, -1, 4);  // the short way round: angle in [0, pi]
  mju_quat2Vel(out, q, 1.0);
}

void rotation_error(const double* to_quat, const double* from_quat, double* v) {
  double inv[4], dq[4];
  mju_negQuat(inv, from_quat);
  mju_mulQuat(dq, to_quat, inv);
  if (dq[0] < 0) mju_scl(dq, dq, -1, 4);
  mju_quat2Vel(v, dq, 1.0);
}

Controller::Controller(const Scene& scene, ControllerConfig config) : scene_(scene), cfg_(config) {}

void Controller::hold(const mjData* d) {
  mju_copy3(goal_pos_, d->site_xpos + 3 * scene_.ee_site);
  mju_mat2Quat(goal_quat_, d->site_xmat + 9 * scene_.ee_site);
}

void Controller::set_action(const mjData* d, const Action& action) {
  double a[kActionDim];
  for (int i = 0; i < kActionDim; ++i) a[i] = std::clamp(double(action[i]), -1.0, 1.0);
  const double* ee = d->site_xpos + 3 * scene_.ee_site;
  for (int i = 0; i < 3; ++i) goal_pos_[i] = ee[i] + a[i] * cfg_.max_pos;
  // goal orientation = exp(delta) * current
  double cur[4], dq[4], rot[3] = {a[3] * cfg_.max_rot, a[4] * cfg_.max_rot, a[5] * cfg_.max_rot};
  mju_mat2Quat(cur, d->site_xmat + 9 * scene_.ee_site);
  dq[0] = 1, dq[1] = dq[2] = dq[3] = 0;
  mju_quatIntegrate(dq, rot, 1.0);
  mju_mulQuat(goal_quat_, dq, cur);
  mju_normalize4(goal_quat_);
  finger_target_ = 0.045 * (1.0 - a[6]) / 2.0;  // -1 open (0.045 per finger), +1 closed
}

void Controller::apply(mjData* d) const {
  const mjModel* m = scene_.model();
  const int nv = m->nv;
  // task-space error e (6): position, then rotation vector
  double e[6], cur[4];
  const double* ee = d->site_xpos + 3 * scene_.ee_site;
  mju_sub3(e, goal_pos_, ee);
  mju_mat2Quat(cur, d->site_xmat + 9 * scene_.ee_site);
  rotation_error(goal_quat_, cur, e + 3);
  // Jacobian restricted to the arm's dofs: J (6 x 7)
  mjMARKSTACK;
  mjtNum* jacp = mj_stackAlloc(d, 3 * nv);
  mjtNum* jacr = mj_stackAlloc(d, 3 * nv);
  mj_jacSite(m, d, jacp, jacr, scene_.ee_site);
  double J[6][kArmDof];
  for (int i = 0; i < kArmDof; ++i) {
    int c = scene_.arm_dof[i];
    for (int r = 0; r < 3; ++r) {
      J[r][i] = jacp[r * nv + c];
      J[r + 3][i] = jacr[r * nv + c];
    }
  }
  mjFREESTACK;
  // A = J J^T + lambda^2 I (6 x 6), Cholesky-factored
  double A[36];
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 6; ++c) {
      double s = 0;
      for (int k = 0; k < kArmDof; ++k) s += J[r][k] * J[c][k];
      A[r * 6 + c] = s + (r == c ? cfg_.damping * cfg_.damping : 0);
    }
  mju_cholFactor(A, 6, 0);
  // dq = J^T A^-1 e
  double y[6], dq[kArmDof];
  mju_cholSolve(y, A, e, 6);
  for (int k = 0; k < kArmDof; ++k) {
    dq[k] = 0;
    for (int r = 0; r < 6; ++r) dq[k] += J[r][k] * y[r];
  }
  // null space: z - J^T A^-1 J z, z pulls towards home
  double z[kArmDof], Jz[6], w[6];
  for (int k = 0; k < kArmDof; ++k) z[k] = cfg_.null_gain * (scene_.home_qpos[k] - d->qpos[scene_.arm_qpos[k]]);
  for (int r = 0; r < 6; ++r) {
    Jz[r] = 0;
    for (int k = 0; k < kArmDof; ++k) Jz[r] += J[r][k] * z[k];
  }
  mju_cholSolve(w, A, Jz, 6);
  for (int k = 0; k < kArmDof; ++k) {
    double p = 0;
    for (int r = 0; r < 6; ++r) p += J[r][k] * w[r];
    dq[k] += z[k] - p;
  }
  // joint PD towards q + dq, scaled by the joint-space inertia's diagonal, plus bias forces
  for (int k = 0; k < kArmDof; ++k) {
    int dof = scene_.arm_dof[k];
    double M = d->qM[m->dof_Madr[dof]];
    double kp = cfg_.omega * cfg_.omega * M, kd = 2 * cfg_.zeta * cfg_.omega * M;
    double tau = kp * dq[k] - kd * d->qvel[dof] + d->qfrc_bias[dof];
    const double* range = m->actuator_ctrlrange + 2 * k;
    d->ctrl[k] = std::clamp(tau, range[0], range[1]);
  }
  d->ctrl[kArmDof] = finger_target_;
  d->ctrl[kArmDof + 1] = finger_target_;
}

}  // namespace ember::sim
