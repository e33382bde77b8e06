#include "ember/sim/render.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "ember/core/error.h"

namespace ember::sim {

namespace {
// The renderer whose context is current on this thread: several may share a thread (tests
// do), and each draws into its own context.
thread_local const GLContext* t_current = nullptr;
}  // namespace

CameraRenderer::CameraRenderer(const Scene& scene, RendererKind kind, int width, int height, int max_views)
    : scene_(scene), width_(width), height_(height) {
  if (width < 1 || height < 1 || width > 4096 || height > 4096)
    fail(ErrorKind::kInvalidArgument, "--image_size: " + std::to_string(width) + "x" + std::to_string(height) +
                                          " is out of range (1..4096)");
  // OSMesa (llvmpipe) draws a view with last-bit differences in its pixels depending on where
  // in the buffer it lies, so a tiled batch would make an episode's images depend on which
  // tile it got, and so on the timing of the envs around it (the flake of the CPU bit-exact RL
  // resume, tests/rl/rl_loop_util.h): there every view is drawn at the same place, one per read.
  if (kind == RendererKind::kOSMesa) max_views = std::min(max_views, 1);
  cols_ = std::max(1, std::min(max_views, 4096 / width));
  rows_ = (max_views + cols_ - 1) / cols_;
  if (max_views < 1 || rows_ * height > 4096)
    fail(ErrorKind::kInvalidArgument, "render batch: " + std::to_string(max_views) + " views of " + std::to_string(width) + "x" +
                                          std::to_string(height) + " do not fit a 4096x4096 buffer");
  gl_ = GLContext::create(kind, cols_ * width, rows_ * height);
  t_current = gl_.get();  // creating a context makes it current
  mjv_defaultScene(&scn_);
  mjr_defaultContext(&con_);
  mjv_defaultOption(&opt_);
  mjv_defaultCamera(&cam_);
  mjv_makeScene(scene.model(), &scn_, 300);
  // MuJoCo sizes its offscreen framebuffer from the model's visual/global; a shallow copy of
  // the model with the grid's size makes a buffer of exactly that size
  mjModel sized = *scene.model();
  sized.vis.global.offwidth = cols_ * width;
  sized.vis.global.offheight = rows_ * height;
  mjr_makeContext(&sized, &con_, mjFONTSCALE_50);
  mjr_setBuffer(mjFB_OFFSCREEN, &con_);
  if (con_.currentBuffer != mjFB_OFFSCREEN) {
    mjr_freeContext(&con_);
    mjv_freeScene(&scn_);
    fail_unsupported(std::string("--renderer ") + renderer_name(kind) + ": no offscreen framebuffer");
  }
  cam_.type = mjCAMERA_FIXED;
}

CameraRenderer::~CameraRenderer() {
  gl_->make_current();
  t_current = nullptr;
  mjr_freeContext(&con_);
  mjv_freeScene(&scn_);
}

void CameraRenderer::render(const mjData* d, int camera, uint8_t* rgb) {
  View v{d, camera, rgb};
  render_tiles(&v, 1);
}

void CameraRenderer::render_views(const View* views, int n) {
  for (int at = 0; at < n; at += max_views()) render_tiles(views + at, std::min(max_views(), n - at));
}

void CameraRenderer::render_tiles(const View* views, int n) {
  if (t_current != gl_.get()) gl_->make_current(), t_current = gl_.get();
  const int w = width_, h = height_;
  for (int i = 0; i < n; ++i) {
    cam_.fixedcamid = views[i].camera;
    // mjv_updateScene reads d (its pointer is not const in MuJoCo's API)
    mjv_updateScene(scene_.model(), const_cast<mjData*>(views[i].d), &opt_, nullptr, &cam_, mjCAT_ALL, &scn_);
    mjrRect tile = {(i % cols_) * w, (i / cols_) * h, w, h};  // mjr_render clears only its viewport
    mjr_render(tile, &scn_, &con_);
  }
  // one read of the rows holding these tiles
  const int cols = std::min(n, cols_), rows = (n + cols_ - 1) / cols_;
  mjrRect all = {0, 0, cols * w, rows * h};
  staging_.resize(size_t(all.width) * all.height * 3);
  mjr_readPixels(staging_.data(), nullptr, all, &con_);
  // GL's rows run bottom-up: tile row y (from the bottom) is the image's row h - 1 - y
  const size_t grid_row = size_t(all.width) * 3, row = size_t(w) * 3;
  for (int i = 0; i < n; ++i) {
    const uint8_t* tile = staging_.data() + size_t(i / cols_) * h * grid_row + size_t(i % cols_) * row;
    for (int y = 0; y < h; ++y) std::memcpy(views[i].rgb + size_t(h - 1 - y) * row, tile + size_t(y) * grid_row, row);
  }
}

}  // namespace ember::sim
