// The tabletop scene: one MuJoCo model (assets/sim/tabletop.xml) shared, read-only, by every
// environment of a process, and the indices ember needs into it (joints, bodies, cameras).
//
// mjModel is constant after loading, so one Scene serves any number of environments on any
// number of threads; each environment owns its mjData.
#pragma once

#include <mujoco/mujoco.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace ember::sim {

inline constexpr int kArmDof = 7;
inline constexpr int kActionDim = 7;   // dx dy dz, droll dpitch dyaw (axis-angle), gripper
inline constexpr int kStateDim = 8;    // ee x y z, ee axis-angle (3), finger positions (2)
inline constexpr double kPhysicsDt = 0.002;  // 500 Hz
inline constexpr int kSubsteps = 25;         // control at 20 Hz
inline constexpr double kControlHz = 20.0;

// The folder holding tabletop.xml: $EMBER_SIM_ASSETS if set, else the source tree's assets/sim.
std::string default_asset_dir();

class Scene {
 public:
  // Loads and compiles the scene. Throws Error kNotFound (no file) or kCorruption (MuJoCo's
  // message) naming the path.
  static std::shared_ptr<const Scene> load(const std::string& xml_path = default_asset_dir() + "/tabletop.xml");
  ~Scene();
  Scene(const Scene&) = delete;
  Scene& operator=(const Scene&) = delete;

  const mjModel* model() const { return model_; }
  // the file it was loaded from (render processes load the same one)
  const std::string& xml_path() const { return xml_path_; }
  // Index lookups; each throws kInternal if the name is missing from the model.
  int body(const std::string& name) const;
  int joint(const std::string& name) const;
  int camera(const std::string& name) const;

  int ee_site = -1;
  std::array<int, kArmDof> arm_qpos{}, arm_dof{};  // qpos and dof addresses of j1..j7
  std::array<int, 2> finger_qpos{}, finger_dof{};  // left, right
  std::array<int, 2> finger_body{};
  int hand_body = -1;
  int agentview_camera = -1, wrist_camera = -1;
  int home_key = -1;
  std::array<double, kArmDof> home_qpos{};

 private:
  Scene() = default;
  mjModel* model_ = nullptr;
  std::string xml_path_;
};

}  // namespace ember::sim
