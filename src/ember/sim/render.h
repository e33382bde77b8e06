// Offscreen camera images of the scene through MuJoCo's renderer (mjv_updateScene,
// mjr_render, mjr_readPixels) into its offscreen framebuffer, on a GL context that this object
// owns. Create, use and destroy it on one thread.
#pragma once

#include <mujoco/mujoco.h>

#include <cstdint>
#include <memory>

#include "ember/sim/gl_context.h"
#include "ember/sim/scene.h"

namespace ember::sim {

class CameraRenderer {
 public:
  // width, height in [1, 4096]. Throws kUnsupported (as GLContext::create) when the renderer
  // cannot be created, kInvalidArgument for sizes out of range.
  CameraRenderer(const Scene& scene, RendererKind kind, int width, int height);
  ~CameraRenderer();
  CameraRenderer(const CameraRenderer&) = delete;
  CameraRenderer& operator=(const CameraRenderer&) = delete;

  // Renders the scene in state d from the model's camera into rgb, [height, width, 3], first
  // row at the top. d's kinematics must be current.
  void render(const mjData* d, int camera, uint8_t* rgb);

  int width() const { return width_; }
  int height() const { return height_; }
  RendererKind kind() const { return gl_->kind(); }

 private:
  const Scene& scene_;
  int width_, height_;
  std::unique_ptr<GLContext> gl_;
  mjvScene scn_;
  mjrContext con_;
  mjvOption opt_;
  mjvCamera cam_;
  std::unique_ptr<uint8_t[]> flip_;
};

}  // namespace ember::sim
