#include "ember/sim/gl_context.h"

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "ember/core/error.h"

namespace ember::sim {

namespace {

// --- the few OSMesa and EGL declarations ember uses (no headers needed at build time) ---
using OSMesaContext = void*;
constexpr unsigned kGL_RGBA = 0x1908, kGL_UNSIGNED_BYTE = 0x1401;
using OSMesaCreateContextExtFn = OSMesaContext (*)(unsigned, int, int, int, OSMesaContext);
using OSMesaMakeCurrentFn = unsigned char (*)(OSMesaContext, void*, unsigned, int, int);
using OSMesaDestroyContextFn = void (*)(OSMesaContext);

using EGLDisplay = void*;
using EGLConfig = void*;
using EGLContext = void*;
using EGLSurface = void*;
using EGLDeviceEXT = void*;
using EGLint = int32_t;
using EGLBoolean = unsigned;
constexpr EGLint kEGL_NONE = 0x3038, kEGL_SURFACE_TYPE = 0x3033, kEGL_PBUFFER_BIT = 0x0001,
                 kEGL_RED_SIZE = 0x3024, kEGL_GREEN_SIZE = 0x3023, kEGL_BLUE_SIZE = 0x3022,
                 kEGL_ALPHA_SIZE = 0x3021, kEGL_DEPTH_SIZE = 0x3025, kEGL_STENCIL_SIZE = 0x3026,
                 kEGL_RENDERABLE_TYPE = 0x3040, kEGL_OPENGL_BIT = 0x0008, kEGL_WIDTH = 0x3057,
                 kEGL_HEIGHT = 0x3056, kEGL_EXTENSIONS = 0x3055;
constexpr unsigned kEGL_OPENGL_API = 0x30A2, kEGL_PLATFORM_DEVICE_EXT = 0x313F;
using eglGetProcAddressFn = void* (*)(const char*);
using eglQueryDevicesEXTFn = EGLBoolean (*)(EGLint, EGLDeviceEXT*, EGLint*);
using eglQueryDeviceStringEXTFn = const char* (*)(EGLDeviceEXT, EGLint);
using eglGetPlatformDisplayEXTFn = EGLDisplay (*)(unsigned, void*, const EGLint*);
using eglInitializeFn = EGLBoolean (*)(EGLDisplay, EGLint*, EGLint*);
using eglChooseConfigFn = EGLBoolean (*)(EGLDisplay, const EGLint*, EGLConfig*, EGLint, EGLint*);
using eglBindAPIFn = EGLBoolean (*)(unsigned);
using eglCreateContextFn = EGLContext (*)(EGLDisplay, EGLConfig, EGLContext, const EGLint*);
using eglCreatePbufferSurfaceFn = EGLSurface (*)(EGLDisplay, EGLConfig, const EGLint*);
using eglMakeCurrentFn = EGLBoolean (*)(EGLDisplay, EGLSurface, EGLSurface, EGLContext);
using eglDestroyContextFn = EGLBoolean (*)(EGLDisplay, EGLContext);
using eglDestroySurfaceFn = EGLBoolean (*)(EGLDisplay, EGLSurface);
using eglGetErrorFn = EGLint (*)();

std::mutex g_mu;
RendererKind g_process_kind = RendererKind::kNone;  // fixed by the first context

void* open_library(const char* const* names, bool global, std::string* why) {
  std::string errors;
  for (const char* const* n = names; *n; ++n) {
    if (void* h = dlopen(*n, RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL))) return h;
    errors += std::string(errors.empty() ? "" : "; ") + dlerror();
  }
  if (why) *why = errors;
  return nullptr;
}

const char* const kOSMesaNames[] = {"libOSMesa.so.8", "libOSMesa.so.6", "libOSMesa.so", nullptr};
const char* const kEGLNames[] = {"libEGL.so.1", "libEGL.so", nullptr};

template <class F>
F sym(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

// The EGL entry points ember uses, and the device display chosen.
struct Egl {
  void* lib = nullptr;
  eglGetProcAddressFn getProcAddress = nullptr;
  eglInitializeFn initialize = nullptr;
  eglChooseConfigFn chooseConfig = nullptr;
  eglBindAPIFn bindAPI = nullptr;
  eglCreateContextFn createContext = nullptr;
  eglCreatePbufferSurfaceFn createPbufferSurface = nullptr;
  eglMakeCurrentFn makeCurrent = nullptr;
  eglDestroyContextFn destroyContext = nullptr;
  eglDestroySurfaceFn destroySurface = nullptr;
  eglGetErrorFn getError = nullptr;
  EGLDisplay display = nullptr;
  EGLConfig config = nullptr;
};

// Finds a hardware EGL device ($EMBER_EGL_DEVICE picks one by index) and initialises its
// display. Returns false with *why on failure.
bool egl_open(Egl* e, bool global, std::string* why) {
  e->lib = open_library(kEGLNames, global, why);
  if (!e->lib) return false;
  e->getProcAddress = sym<eglGetProcAddressFn>(e->lib, "eglGetProcAddress");
  e->initialize = sym<eglInitializeFn>(e->lib, "eglInitialize");
  e->chooseConfig = sym<eglChooseConfigFn>(e->lib, "eglChooseConfig");
  e->bindAPI = sym<eglBindAPIFn>(e->lib, "eglBindAPI");
  e->createContext = sym<eglCreateContextFn>(e->lib, "eglCreateContext");
  e->createPbufferSurface = sym<eglCreatePbufferSurfaceFn>(e->lib, "eglCreatePbufferSurface");
  e->makeCurrent = sym<eglMakeCurrentFn>(e->lib, "eglMakeCurrent");
  e->destroyContext = sym<eglDestroyContextFn>(e->lib, "eglDestroyContext");
  e->destroySurface = sym<eglDestroySurfaceFn>(e->lib, "eglDestroySurface");
  e->getError = sym<eglGetErrorFn>(e->lib, "eglGetError");
  if (!e->getProcAddress || !e->initialize || !e->chooseConfig || !e->makeCurrent) {
    *why = "libEGL lacks core entry points";
    return false;
  }
  auto query_devices = reinterpret_cast<eglQueryDevicesEXTFn>(e->getProcAddress("eglQueryDevicesEXT"));
  auto device_string = reinterpret_cast<eglQueryDeviceStringEXTFn>(e->getProcAddress("eglQueryDeviceStringEXT"));
  auto platform_display =
      reinterpret_cast<eglGetPlatformDisplayEXTFn>(e->getProcAddress("eglGetPlatformDisplayEXT"));
  if (!query_devices || !platform_display) {
    *why = "EGL has no EGL_EXT_device_enumeration / EGL_EXT_platform_device";
    return false;
  }
  EGLDeviceEXT devices[32];
  EGLint n = 0;
  if (!query_devices(32, devices, &n) || n <= 0) {
    *why = "no EGL device";
    return false;
  }
  int chosen = -1;
  if (const char* env = std::getenv("EMBER_EGL_DEVICE"); env && *env) {
    chosen = std::atoi(env);
    if (chosen < 0 || chosen >= n) {
      *why = "EMBER_EGL_DEVICE=" + std::string(env) + " but there are " + std::to_string(n) + " EGL devices";
      return false;
    }
  } else {
    for (int i = 0; i < n && chosen < 0; ++i) {
      const char* ext = device_string ? device_string(devices[i], kEGL_EXTENSIONS) : nullptr;
      if (!ext || !std::strstr(ext, "EGL_MESA_device_software")) chosen = i;
    }
    if (chosen < 0) {
      *why = "only software EGL devices (Mesa llvmpipe); set EMBER_EGL_DEVICE=0 to use one anyway";
      return false;
    }
  }
  e->display = platform_display(kEGL_PLATFORM_DEVICE_EXT, devices[chosen], nullptr);
  EGLint major = 0, minor = 0;
  if (!e->display || !e->initialize(e->display, &major, &minor)) {
    *why = "eglInitialize failed on EGL device " + std::to_string(chosen);
    return false;
  }
  const EGLint attribs[] = {kEGL_SURFACE_TYPE, kEGL_PBUFFER_BIT, kEGL_RED_SIZE, 8, kEGL_GREEN_SIZE, 8,
                            kEGL_BLUE_SIZE, 8, kEGL_ALPHA_SIZE, 8, kEGL_DEPTH_SIZE, 24, kEGL_STENCIL_SIZE, 8,
                            kEGL_RENDERABLE_TYPE, kEGL_OPENGL_BIT, kEGL_NONE};
  EGLint count = 0;
  if (!e->chooseConfig(e->display, attribs, &e->config, 1, &count) || count < 1) {
    *why = "no EGL config with desktop OpenGL, RGBA8, depth 24, stencil 8";
    return false;
  }
  return true;
}

// The process's EGL state, opened once (globally, so that MuJoCo finds eglGetProcAddress).
Egl* egl_instance(std::string* why) {
  static Egl egl;
  static bool ok = false, tried = false;
  static std::string error;
  if (!tried) {
    tried = true;
    ok = egl_open(&egl, true, &error);
  }
  if (!ok) *why = error;
  return ok ? &egl : nullptr;
}

class OSMesaGLContext : public GLContext {
 public:
  OSMesaGLContext(void* lib, int width, int height) : buffer_(size_t(width) * height * 4), w_(width), h_(height) {
    auto create = sym<OSMesaCreateContextExtFn>(lib, "OSMesaCreateContextExt");
    make_current_ = sym<OSMesaMakeCurrentFn>(lib, "OSMesaMakeCurrent");
    destroy_ = sym<OSMesaDestroyContextFn>(lib, "OSMesaDestroyContext");
    if (!create || !make_current_ || !destroy_) fail_unsupported("--renderer osmesa: libOSMesa lacks its entry points");
    ctx_ = create(kGL_RGBA, 24, 8, 0, nullptr);
    if (!ctx_) fail_unsupported("--renderer osmesa: OSMesaCreateContextExt failed");
    make_current();
  }
  ~OSMesaGLContext() override {
    if (!ctx_) return;
    make_current_(nullptr, nullptr, 0, 0, 0);  // release it first, or Mesa keeps its framebuffer
    destroy_(ctx_);
  }
  void make_current() override {
    if (!make_current_(ctx_, buffer_.data(), kGL_UNSIGNED_BYTE, w_, h_))
      fail_unsupported("--renderer osmesa: OSMesaMakeCurrent failed");
  }
  RendererKind kind() const override { return RendererKind::kOSMesa; }

 private:
  std::vector<uint8_t> buffer_;
  int w_, h_;
  OSMesaContext ctx_ = nullptr;
  OSMesaMakeCurrentFn make_current_ = nullptr;
  OSMesaDestroyContextFn destroy_ = nullptr;
};

class EGLGLContext : public GLContext {
 public:
  EGLGLContext(Egl* egl, int width, int height) : egl_(egl) {
    if (!egl_->bindAPI(kEGL_OPENGL_API)) fail_unsupported("--renderer egl: eglBindAPI(EGL_OPENGL_API) failed");
    ctx_ = egl_->createContext(egl_->display, egl_->config, nullptr, nullptr);
    if (!ctx_) fail_unsupported("--renderer egl: eglCreateContext failed (error 0x" + hex(egl_->getError()) + ")");
    // surfaceless when the driver allows it (EGL_KHR_surfaceless_context), else a small pbuffer
    if (!egl_->makeCurrent(egl_->display, nullptr, nullptr, ctx_)) {
      const EGLint pb[] = {kEGL_WIDTH, width, kEGL_HEIGHT, height, kEGL_NONE};
      surface_ = egl_->createPbufferSurface(egl_->display, egl_->config, pb);
      if (!surface_) fail_unsupported("--renderer egl: cannot make a context current (no pbuffer surface)");
    }
    make_current();
  }
  ~EGLGLContext() override {
    egl_->makeCurrent(egl_->display, nullptr, nullptr, nullptr);
    if (surface_) egl_->destroySurface(egl_->display, surface_);
    if (ctx_) egl_->destroyContext(egl_->display, ctx_);
  }
  void make_current() override {
    if (!egl_->makeCurrent(egl_->display, surface_, surface_, ctx_))
      fail_unsupported("--renderer egl: eglMakeCurrent failed (error 0x" + hex(egl_->getError()) + ")");
  }
  RendererKind kind() const override { return RendererKind::kEGL; }

 private:
  static std::string hex(EGLint v) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "%x", unsigned(v));
    return buf;
  }
  Egl* egl_;
  EGLContext ctx_ = nullptr;
  EGLSurface surface_ = nullptr;
};

}  // namespace

const char* renderer_name(RendererKind kind) {
  switch (kind) {
    case RendererKind::kNone: return "none";
    case RendererKind::kOSMesa: return "osmesa";
    case RendererKind::kEGL: return "egl";
  }
  return "?";
}

RendererKind parse_renderer(const std::string& name) {
  if (name == "egl") return RendererKind::kEGL;
  if (name == "osmesa") return RendererKind::kOSMesa;
  if (name == "none") return RendererKind::kNone;
  if (name == "auto" || name.empty()) return default_renderer();
  fail(ErrorKind::kInvalidArgument, "--renderer: unknown renderer '" + name + "' (egl, osmesa, none or auto)");
}

RendererKind default_renderer() {
  for (const char* var : {"EMBER_RENDERER", "MUJOCO_GL"}) {
    const char* v = std::getenv(var);
    if (v && std::strcmp(v, "egl") == 0) return RendererKind::kEGL;
    if (v && std::strcmp(v, "osmesa") == 0) return RendererKind::kOSMesa;
  }
  static const RendererKind probed = [] {
    // probe EGL without exposing its symbols to MuJoCo (RTLD_LOCAL): if OSMesa wins, MuJoCo
    // must not find eglGetProcAddress in the global scope
    Egl probe;
    std::string why;
    return egl_open(&probe, false, &why) ? RendererKind::kEGL : RendererKind::kOSMesa;
  }();
  return probed;
}

bool renderer_available(RendererKind kind, std::string* why) {
  std::string w;
  bool ok = true;
  if (kind == RendererKind::kOSMesa) {
    void* lib = open_library(kOSMesaNames, false, &w);
    ok = lib != nullptr;
  } else if (kind == RendererKind::kEGL) {
    Egl probe;
    ok = egl_open(&probe, false, &w);
  }
  std::lock_guard<std::mutex> lock(g_mu);
  if (ok && g_process_kind != RendererKind::kNone && g_process_kind != kind) {
    ok = false;
    w = std::string("this process already renders with ") + renderer_name(g_process_kind);
  }
  if (!ok && why) *why = w;
  return ok;
}

std::unique_ptr<GLContext> GLContext::create(RendererKind kind, int width, int height) {
  if (kind == RendererKind::kNone) fail(ErrorKind::kInvalidArgument, "--renderer none: no GL context to create");
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_process_kind != RendererKind::kNone && g_process_kind != kind)
    fail_unsupported(std::string("--renderer ") + renderer_name(kind) + ": this process already renders with " +
                     renderer_name(g_process_kind) + " (MuJoCo binds one GL platform per process)");
  std::string why;
  std::unique_ptr<GLContext> ctx;
  if (kind == RendererKind::kOSMesa) {
    void* lib = open_library(kOSMesaNames, true, &why);
    if (!lib) fail_unsupported("--renderer osmesa: cannot load libOSMesa (apt-get install libosmesa6): " + why);
    ctx = std::make_unique<OSMesaGLContext>(lib, width, height);
  } else {
    Egl* egl = egl_instance(&why);
    if (!egl) fail_unsupported("--renderer egl: " + why);
    ctx = std::make_unique<EGLGLContext>(egl, width, height);
  }
  g_process_kind = kind;
  return ctx;
}

}  // namespace ember::sim
