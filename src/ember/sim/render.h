// Offscreen camera images of the scene through MuJoCo's renderer (mjv_updateScene,
// mjr_render, mjr_readPixels) into its offscreen framebuffer, on a GL context that this object
// owns. Create, use and destroy it on one thread.
//
// Batched: the offscreen buffer holds a grid of `max_views` tiles of width x height; one
// render_views() call draws up to that many views (any env, any camera), each into its own
// tile, and reads them all back with one glReadPixels (each read waits for the GPU: one stall
// per batch instead of one per image). On the H200 host this alone gained little (+19 % with
// 32 envs on 16 threads of one process, none with 16); a GL context per process is what
// scales (render_process.h; bench/results/sim_h200_2026-12-01b.md). OSMesa does not tile: the
// last bits of its pixels depend on where in the buffer a view is drawn (render.cc), so there
// max_views() is 1 and an image never depends on the batch it was drawn in.
#pragma once

#include <mujoco/mujoco.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "ember/sim/gl_context.h"
#include "ember/sim/scene.h"

namespace ember::sim {

// One camera image to draw: the scene in state d (kinematics current) from camera `camera`
// into rgb, [height, width, 3], first row at the top.
struct View {
  const mjData* d = nullptr;
  int camera = 0;
  uint8_t* rgb = nullptr;
};

class CameraRenderer {
 public:
  // width, height in [1, 4096]; max_views >= 1 tiles, fitting a 4096 x 4096 buffer. Throws
  // kUnsupported (as GLContext::create) when the renderer cannot be created, kInvalidArgument
  // for sizes out of range.
  CameraRenderer(const Scene& scene, RendererKind kind, int width, int height, int max_views = 1);
  ~CameraRenderer();
  CameraRenderer(const CameraRenderer&) = delete;
  CameraRenderer& operator=(const CameraRenderer&) = delete;

  // One view (render_views of one).
  void render(const mjData* d, int camera, uint8_t* rgb);
  // Every view, max_views() per read-back.
  void render_views(const View* views, int n);

  int width() const { return width_; }
  int height() const { return height_; }
  int max_views() const { return cols_ * rows_; }
  RendererKind kind() const { return gl_->kind(); }

 private:
  void render_tiles(const View* views, int n);  // n <= max_views()

  const Scene& scene_;
  int width_, height_, cols_ = 1, rows_ = 1;
  std::unique_ptr<GLContext> gl_;
  mjvScene scn_;
  mjrContext con_;
  mjvOption opt_;
  mjvCamera cam_;
  std::vector<uint8_t> staging_;  // the read-back rows of the grid, bottom-up
};

}  // namespace ember::sim
