// One simulated episode at a time: the scene's shared model, this environment's mjData, the
// task being run and the controller. Physics only; cameras are rendered by a CameraRenderer
// (render.h) that the caller owns on its thread.
#pragma once

#include <mujoco/mujoco.h>

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "ember/sim/controller.h"
#include "ember/sim/scene.h"
#include "ember/sim/tasks.h"

namespace ember::sim {

// What the scripted experts may see and a learned policy must not: simulator ground truth.
struct Privileged {
  std::array<double, 3> ee{};          // end-effector position (world)
  std::array<double, 4> ee_quat{};     // end-effector orientation (w x y z)
  std::array<double, 3> object{};      // manipulated object: cube centre, or the button cap's top
  double object_yaw = 0;               // cube yaw about z (radians)
  std::array<double, 3> target{};      // tray floor centre, pad centre, or the lower cube's centre
  double gripper = 0;                  // finger opening, left + right (metres)
};

struct Observation {
  int width = 0, height = 0;            // camera size; 0 when rendering is off
  std::vector<uint8_t> agentview;       // [height, width, 3] RGB, first row at the top
  std::vector<uint8_t> wrist;           // [height, width, 3] RGB
  // LIBERO's 8-D state: ee position (3), ee orientation as axis-angle (3; zero at the home
  // posture, gripper down), finger positions (left, -right: LIBERO's sign convention)
  std::array<float, kStateDim> state{};
  std::array<float, kArmDof> joints{};  // arm joint positions j1..j7 (radians)
  Privileged privileged;
};

class Env {
 public:
  explicit Env(std::shared_ptr<const Scene> scene, ControllerConfig controller = {});
  ~Env();
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

  // Puts the robot at home, the task's objects at init's placements and every other object
  // in its parking spot off the table. The task must outlive the episode.
  void reset(const TaskSpec& task, const InitState& init);
  // One control step: the action sets the controller's goal, then 25 physics substeps.
  void step(const Action& action);
  // The task's success predicate on the current state.
  bool success() const;
  int steps() const { return steps_; }
  bool truncated() const { return steps_ >= task_->max_steps; }
  const TaskSpec& task() const { return *task_; }

  // Fills everything but the images.
  void observe(Observation* obs) const;
  const mjData* data() const { return data_; }
  const Scene& scene() const { return *scene_; }

 private:
  bool touching_fingers(int body) const;

  std::shared_ptr<const Scene> scene_;
  mjData* data_ = nullptr;
  Controller controller_;
  const TaskSpec* task_ = nullptr;
  int object_body_ = -1, target_body_ = -1, button_qpos_ = -1;
  int steps_ = 0;
};

}  // namespace ember::sim
