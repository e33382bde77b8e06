#include "ember/sim/render.h"

#include <cstring>
#include <string>

#include "ember/core/error.h"

namespace ember::sim {

CameraRenderer::CameraRenderer(const Scene& scene, RendererKind kind, int width, int height)
    : scene_(scene), width_(width), height_(height) {
  if (width < 1 || height < 1 || width > 4096 || height > 4096)
    fail(ErrorKind::kInvalidArgument, "--image_size: " + std::to_string(width) + "x" + std::to_string(height) +
                                          " is out of range (1..4096)");
  gl_ = GLContext::create(kind, width, height);
  mjv_defaultScene(&scn_);
  mjr_defaultContext(&con_);
  mjv_defaultOption(&opt_);
  mjv_defaultCamera(&cam_);
  mjv_makeScene(scene.model(), &scn_, 300);
  // MuJoCo sizes its offscreen framebuffer from the model's visual/global; a shallow copy of
  // the model with this renderer's size makes a buffer of exactly that size
  mjModel sized = *scene.model();
  sized.vis.global.offwidth = width;
  sized.vis.global.offheight = height;
  mjr_makeContext(&sized, &con_, mjFONTSCALE_50);
  mjr_setBuffer(mjFB_OFFSCREEN, &con_);
  if (con_.currentBuffer != mjFB_OFFSCREEN) {
    mjr_freeContext(&con_);
    mjv_freeScene(&scn_);
    fail_unsupported(std::string("--renderer ") + renderer_name(kind) + ": no offscreen framebuffer");
  }
  cam_.type = mjCAMERA_FIXED;
  flip_.reset(new uint8_t[size_t(width) * 3]);
}

CameraRenderer::~CameraRenderer() {
  gl_->make_current();
  mjr_freeContext(&con_);
  mjv_freeScene(&scn_);
}

void CameraRenderer::render(const mjData* d, int camera, uint8_t* rgb) {
  cam_.fixedcamid = camera;
  // mjv_updateScene reads d (its pointer is not const in MuJoCo's API)
  mjv_updateScene(scene_.model(), const_cast<mjData*>(d), &opt_, nullptr, &cam_, mjCAT_ALL, &scn_);
  mjrRect viewport = {0, 0, width_, height_};
  mjr_render(viewport, &scn_, &con_);
  mjr_readPixels(rgb, nullptr, viewport, &con_);
  // GL's rows run bottom-up
  const size_t row = size_t(width_) * 3;
  for (int y = 0; y < height_ / 2; ++y) {
    uint8_t* a = rgb + size_t(y) * row;
    uint8_t* b = rgb + size_t(height_ - 1 - y) * row;
    std::memcpy(flip_.get(), a, row);
    std::memcpy(a, b, row);
    std::memcpy(b, flip_.get(), row);
  }
}

}  // namespace ember::sim
