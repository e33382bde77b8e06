// Rendering in a process of its own: one GL context per process instead of one per thread.
// Several threads of one process rendering through the NVIDIA driver's EGL contend (the H200
// host, 2026-12-01: 407 env-steps/s with one env, 159 with 16 threads); separate processes
// do not share the driver's state.
//
// A RenderProcess starts this program again (/proc/self/exe) with kRenderWorkerFlag; main()
// hands such a run to run_render_worker_if_asked() before anything else. The child loads the
// same scene, owns a batched CameraRenderer (render.h) and renders both cameras of the states
// it is sent. States and pixels travel through shared memory (memfd); a socket carries one
// byte per request and answer, and its end of file tells either side that the other is gone.
// The child recomputes the bodies' poses from qpos and the mocap poses and takes the cameras'
// and lights' poses as sent: that is all the scene's images depend on (no tendons, skins or
// contact markers are drawn), so its images equal the in-process renderer's byte for byte
// (tests/sim/sim_render_batch_test.cc).
#pragma once

#include <mujoco/mujoco.h>
#include <sys/types.h>

#include <cstdint>
#include <string>

#include "ember/sim/gl_context.h"
#include "ember/sim/scene.h"

namespace ember::sim {

inline constexpr const char* kRenderWorkerFlag = "--ember-render-worker";

class RenderProcess {
 public:
  // Starts the child and waits until its renderer exists. Throws kUnsupported with the child's
  // own message when it cannot render (no EGL, no OSMesa), kInternal when it cannot start.
  RenderProcess(const Scene& scene, RendererKind kind, int image_size, int max_envs);
  ~RenderProcess();  // ends the child
  RenderProcess(const RenderProcess&) = delete;
  RenderProcess& operator=(const RenderProcess&) = delete;

  // Renders the agentview and wrist cameras of states[i] (kinematics need not be current) into
  // agentview[i] and wrist[i] ([S, S, 3] each, first row at the top), n <= max_envs, in one
  // request. Throws with the child's message if it failed or died.
  void render(const mjData* const* states, int n, uint8_t* const* agentview, uint8_t* const* wrist);

  int max_envs() const { return max_envs_; }
  pid_t pid() const { return pid_; }

 private:
  [[noreturn]] void child_gone();

  const Scene& scene_;
  int image_size_, max_envs_;
  size_t bytes_ = 0;
  uint8_t* shm_ = nullptr;
  int shm_fd_ = -1, sock_ = -1;
  pid_t pid_ = -1;
};

// Serves render requests when argv[1] is kRenderWorkerFlag and returns the exit status; -1
// (doing nothing) otherwise.
int run_render_worker_if_asked(int argc, char** argv);

}  // namespace ember::sim
