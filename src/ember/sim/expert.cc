#include "ember/sim/expert.h"

#include <algorithm>
#include <cmath>

namespace ember::sim {

namespace {

double dist3(const double* a, const double* b) {
  return std::sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
}
double dist2(const double* a, const double* b) { return std::hypot(a[0] - b[0], a[1] - b[1]); }

// A cube looks the same every quarter turn: the gripper yaw closest to zero that matches it.
double grasp_yaw(double cube_yaw) {
  double y = std::remainder(cube_yaw, M_PI / 2);
  return y;
}

double yaw_of(const std::array<double, 4>& q) {
  return std::atan2(2 * (q[0] * q[3] + q[1] * q[2]), 1 - 2 * (q[2] * q[2] + q[3] * q[3]));
}

constexpr double kOpen = -1, kClosed = 1;

}  // namespace

void ExpertPolicy::reset(int env, const EpisodeStart& episode) {
  State s;
  s.rng = Rng(mix_seed(episode.seed, 0xE7E7));
  states_[env] = s;
}

std::vector<ActionChunk> ExpertPolicy::act(const std::vector<PolicyInput>& inputs) {
  std::vector<ActionChunk> out;
  out.reserve(inputs.size());
  for (const PolicyInput& in : inputs) out.push_back({act_one(states_[in.env], in)});
  return out;
}

Action ExpertPolicy::act_one(State& s, const PolicyInput& in) {
  const Privileged& p = in.obs->privileged;
  switch (in.task->family) {
    case Family::kPickPlace: return pick(s, p, false);
    case Family::kStack: return pick(s, p, true);
    case Family::kPush: return push(s, p);
    case Family::kPress: return press(s, p);
  }
  return Action{};
}

Action ExpertPolicy::move(State& s, const Privileged& p, const double* pos, double yaw, double gripper, double speed,
                          double noise) {
  Action a{};
  double d[3];
  double m = 0;
  for (int i = 0; i < 3; ++i) {
    d[i] = (pos[i] - p.ee[i]) / cfg_.controller.max_pos;
    m = std::max(m, std::abs(d[i]));
  }
  double scale = m > speed ? speed / m : 1.0;
  for (int i = 0; i < 3; ++i) a[i] = float(d[i] * scale);
  // orientation: gripper down, turned by yaw about z
  double goal[4] = {std::cos(yaw / 2), 0, 0, std::sin(yaw / 2)}, err[3];
  rotation_error(goal, p.ee_quat.data(), err);
  for (int i = 0; i < 3; ++i) a[3 + i] = float(std::clamp(err[i] / cfg_.controller.max_rot, -1.0, 1.0));
  a[6] = float(gripper);
  for (float& v : a) v = std::clamp(v, -1.f, 1.f);
  s.label = a;
  for (int i = 0; i < 3; ++i) a[i] = std::clamp(a[i] + float(noise * s.rng.normal()), -1.f, 1.f);
  return a;
}

// Pick the object up and put it in the tray (stack: on the target cube).
Action ExpertPolicy::pick(State& s, const Privileged& p, bool stack) {
  const double* obj = p.object.data();
  const double* tgt = p.target.data();
  const double yaw = grasp_yaw(p.object_yaw);
  const double yaw_err = std::abs(std::remainder(yaw_of(p.ee_quat) - yaw, 2 * M_PI));
  const double n = cfg_.noise;
  for (;;) {
    switch (s.phase) {
      case 0: {  // above the object, open, turned to its faces
        double w[3] = {obj[0], obj[1], obj[2] + 0.1};
        if (dist3(p.ee.data(), w) < 0.015 && yaw_err < 0.08) {
          s.phase = 1;
          continue;
        }
        return move(s, p, w, yaw, kOpen, 1.0, n);
      }
      case 1: {  // down around it
        double w[3] = {obj[0], obj[1], obj[2] + 0.012};
        if (dist2(p.ee.data(), w) > 0.02) {
          s.phase = 0;
          continue;
        }
        if (dist3(p.ee.data(), w) < 0.008) {
          s.phase = 2, s.counter = 0;
          continue;
        }
        return move(s, p, w, yaw, kOpen, 0.6, n * 0.3);
      }
      case 2: {  // close
        double w[3] = {obj[0], obj[1], obj[2] + 0.012};
        if (++s.counter > 6) {
          s.phase = 3;
          continue;
        }
        return move(s, p, w, yaw, kClosed, 0.3, 0);
      }
      case 3: {  // lift
        double w[3] = {p.ee[0], p.ee[1], 0.14};
        if (p.ee[2] > 0.08 && obj[2] < p.ee[2] - 0.04) {  // it slipped out: start over
          s.phase = 0;
          return move(s, p, w, yaw, kOpen, 0.5, 0);
        }
        if (p.ee[2] > 0.12) {
          s.phase = 4;
          continue;
        }
        return move(s, p, w, yaw, kClosed, 0.8, n * 0.5);
      }
      case 4: {  // carry: the held object over the target
        double w[3] = {p.ee[0] + tgt[0] - obj[0], p.ee[1] + tgt[1] - obj[1], 0.14};
        if (obj[2] < p.ee[2] - 0.04) {
          s.phase = 0;
          return move(s, p, w, yaw, kOpen, 0.5, 0);
        }
        if (dist2(obj, tgt) < 0.01) {
          s.phase = 5;
          continue;
        }
        return move(s, p, w, yaw, kClosed, 0.8, n);
      }
      case 5: {  // lower
        double release = stack ? tgt[2] + 0.045 : tgt[2] + 0.035;  // object centre height
        double w[3] = {p.ee[0] + tgt[0] - obj[0], p.ee[1] + tgt[1] - obj[1], p.ee[2] + release - obj[2]};
        if (obj[2] < release + 0.006) {
          s.phase = 6, s.counter = 0;
          continue;
        }
        return move(s, p, w, yaw, kClosed, 0.5, n * 0.2);
      }
      case 6: {  // let go
        double w[3] = {p.ee[0], p.ee[1], p.ee[2]};
        if (++s.counter > 4) {
          s.phase = 7;
          continue;
        }
        return move(s, p, w, yaw, kOpen, 0.3, 0);
      }
      default: {  // back up and wait
        double w[3] = {p.ee[0], p.ee[1], 0.18};
        return move(s, p, w, yaw, kOpen, 0.6, 0);
      }
    }
  }
}

// Push the cube onto the pad: from behind it, along the line to the pad's centre.
Action ExpertPolicy::push(State& s, const Privileged& p) {
  const double* obj = p.object.data();
  const double* pad = p.target.data();
  double dx = pad[0] - obj[0], dy = pad[1] - obj[1], L = std::max(1e-6, std::hypot(dx, dy));
  dx /= L, dy /= L;
  const double n = cfg_.noise;
  double behind[3] = {obj[0] - dx * 0.06, obj[1] - dy * 0.06, 0.03};
  // where the end effector is relative to the cube: along the push line and across it
  double rx = p.ee[0] - obj[0], ry = p.ee[1] - obj[1];
  double along = rx * dx + ry * dy, across = -rx * dy + ry * dx;
  for (;;) {
    switch (s.phase) {
      case 0: {  // above the spot behind the cube
        double w[3] = {behind[0], behind[1], 0.1};
        if (dist3(p.ee.data(), w) < 0.015) {
          s.phase = 1;
          continue;
        }
        return move(s, p, w, 0, kClosed, 1.0, n);
      }
      case 1: {  // down behind it
        if (dist2(p.ee.data(), behind) > 0.02) {
          s.phase = 0;
          continue;
        }
        if (std::abs(p.ee[2] - behind[2]) < 0.01) {
          s.phase = 2;
          continue;
        }
        return move(s, p, behind, 0, kClosed, 0.6, n * 0.3);
      }
      default: {  // push through the cube towards the pad, staying on the line
        if (std::abs(across) > 0.02 || along > -0.02) {
          s.phase = 0;
          double up[3] = {p.ee[0], p.ee[1], 0.1};
          return move(s, p, up, 0, kClosed, 1.0, 0);
        }
        double advance = std::min(L, 0.03);
        double w[3] = {obj[0] - dx * 0.035 + dx * advance, obj[1] - dy * 0.035 + dy * advance, 0.03};
        return move(s, p, w, 0, kClosed, 0.5, n * 0.3);
      }
    }
  }
}

// Press the button: over its cap, then down.
Action ExpertPolicy::press(State& s, const Privileged& p) {
  const double* cap = p.object.data();
  const double n = cfg_.noise;
  double above[3] = {cap[0], cap[1], 0.1};
  if (s.phase == 0) {
    if (dist3(p.ee.data(), above) < 0.012) s.phase = 1;
    else return move(s, p, above, 0, kClosed, 1.0, n);
  }
  if (dist2(p.ee.data(), cap) > 0.02) {
    s.phase = 0;
    return move(s, p, above, 0, kClosed, 1.0, 0);
  }
  double down[3] = {cap[0], cap[1], 0.036};
  return move(s, p, down, 0, kClosed, 0.5, n * 0.3);
}

}  // namespace ember::sim
