#include "ember/sim/env.h"

#include <cmath>

#include "ember/core/error.h"

namespace ember::sim {

Env::Env(std::shared_ptr<const Scene> scene, ControllerConfig controller)
    : scene_(std::move(scene)), data_(mj_makeData(scene_->model())), controller_(*scene_, controller) {
  if (!data_) fail(ErrorKind::kInternal, "mj_makeData failed (out of memory?)");
}

Env::~Env() {
  if (data_) mj_deleteData(data_);
}

void Env::reset(const TaskSpec& task, const InitState& init) {
  const mjModel* m = scene_->model();
  mj_resetDataKeyframe(m, data_, scene_->home_key);
  for (const Placement& p : init.items) {
    int b = scene_->body(p.body);
    // a button is placed by its housing, the mocap body it hangs from
    if (m->body_mocapid[b] < 0 && m->body_jntnum[b] > 0 && m->jnt_type[m->body_jntadr[b]] != mjJNT_FREE)
      b = m->body_parentid[b];
    double quat[4] = {std::cos(p.yaw / 2), 0, 0, std::sin(p.yaw / 2)};
    if (m->body_mocapid[b] >= 0) {
      double* pos = data_->mocap_pos + 3 * m->body_mocapid[b];
      pos[0] = p.x, pos[1] = p.y, pos[2] = 0;
      mju_copy4(data_->mocap_quat + 4 * m->body_mocapid[b], quat);
    } else {
      int adr = m->jnt_qposadr[m->body_jntadr[b]];
      double* q = data_->qpos + adr;
      q[0] = p.x, q[1] = p.y, q[2] = 0.02;
      mju_copy4(q + 3, quat);
    }
  }
  task_ = &task;
  object_body_ = scene_->body(task.object);
  target_body_ = task.target.empty() ? -1 : scene_->body(task.target);
  button_qpos_ = task.family == Family::kPress ? m->jnt_qposadr[scene_->joint(task.object)] : -1;
  steps_ = 0;
  mj_forward(m, data_);
  controller_.hold(data_);
}

void Env::step(const Action& action) {
  const mjModel* m = scene_->model();
  controller_.set_action(data_, action);
  for (int k = 0; k < kSubsteps; ++k) {
    mj_step1(m, data_);
    controller_.apply(data_);
    mj_step2(m, data_);
  }
  // kinematics of the final state, for observations and predicates
  mj_kinematics(m, data_);
  mj_comPos(m, data_);
  mj_collision(m, data_);
  ++steps_;
}

bool Env::touching_fingers(int body) const {
  const mjModel* m = scene_->model();
  for (int i = 0; i < data_->ncon; ++i) {
    int b1 = m->geom_bodyid[data_->contact[i].geom1], b2 = m->geom_bodyid[data_->contact[i].geom2];
    int other = b1 == body ? b2 : b2 == body ? b1 : -1;
    if (other >= 0 && (other == scene_->finger_body[0] || other == scene_->finger_body[1] ||
                       other == scene_->hand_body))
      return true;
  }
  return false;
}

bool Env::success() const {
  const double* obj = data_->xpos + 3 * object_body_;
  switch (task_->family) {
    case Family::kPickPlace: {
      const double* tray = data_->xpos + 3 * target_body_;
      return std::abs(obj[0] - tray[0]) < 0.065 && std::abs(obj[1] - tray[1]) < 0.065 && obj[2] < 0.06 &&
             !touching_fingers(object_body_);
    }
    case Family::kPush: {
      const double* pad = data_->xpos + 3 * target_body_;
      return std::abs(obj[0] - pad[0]) < 0.05 && std::abs(obj[1] - pad[1]) < 0.05 && obj[2] < 0.03;
    }
    case Family::kStack: {
      const double* low = data_->xpos + 3 * target_body_;
      double dz = obj[2] - low[2];
      return std::hypot(obj[0] - low[0], obj[1] - low[1]) < 0.025 && dz > 0.03 && dz < 0.05 && low[2] < 0.03 &&
             !touching_fingers(object_body_);
    }
    case Family::kPress:
      return data_->qpos[button_qpos_] < -0.008;
  }
  return false;
}

void Env::observe(Observation* obs) const {
  const mjModel* m = scene_->model();
  const Scene& s = *scene_;
  const double* ee = data_->site_xpos + 3 * s.ee_site;
  double aa[3];
  mat_to_axis_angle(data_->site_xmat + 9 * s.ee_site, aa);
  for (int i = 0; i < 3; ++i) obs->state[i] = float(ee[i]), obs->state[3 + i] = float(aa[i]);
  obs->state[6] = float(data_->qpos[s.finger_qpos[0]]);
  obs->state[7] = float(-data_->qpos[s.finger_qpos[1]]);
  for (int i = 0; i < kArmDof; ++i) obs->joints[i] = float(data_->qpos[s.arm_qpos[i]]);

  Privileged& p = obs->privileged;
  for (int i = 0; i < 3; ++i) p.ee[i] = ee[i];
  mju_mat2Quat(p.ee_quat.data(), data_->site_xmat + 9 * s.ee_site);
  const double* obj = data_->xpos + 3 * object_body_;
  const double* R = data_->xmat + 9 * object_body_;
  for (int i = 0; i < 3; ++i) p.object[i] = obj[i];
  if (task_->family == Family::kPress) p.object[2] += 0.016;  // the cap's top face
  p.object_yaw = std::atan2(R[3], R[0]);
  if (target_body_ >= 0)
    for (int i = 0; i < 3; ++i) p.target[i] = data_->xpos[3 * target_body_ + i];
  p.gripper = data_->qpos[s.finger_qpos[0]] + data_->qpos[s.finger_qpos[1]];
  (void)m;
}

}  // namespace ember::sim
