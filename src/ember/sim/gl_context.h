// Headless OpenGL contexts for MuJoCo's renderer, created at run time: OSMesa (software, any
// CPU machine) or EGL (GPU machines: the NVIDIA driver's EGL through the glvnd loader). The
// libraries are opened with dlopen, so ember links no GL library and runs where none exists as
// long as rendering is off.
//
// MuJoCo 2.2 resolves its GL functions once per process from the first platform library it
// finds (eglGetProcAddress, then OSMesaGetProcAddress, in the global symbol scope), so a
// process renders with one kind only: the first context created fixes it, and asking for the
// other kind afterwards throws kUnsupported.
#pragma once

#include <memory>
#include <string>

namespace ember::sim {

enum class RendererKind { kNone, kOSMesa, kEGL };

const char* renderer_name(RendererKind kind);
// "egl", "osmesa", "none", or "auto" (default_renderer()). Throws kInvalidArgument naming
// --renderer otherwise.
RendererKind parse_renderer(const std::string& name);
// $EMBER_RENDERER (or MuJoCo's $MUJOCO_GL) when set to egl/osmesa; else EGL when an EGL
// device that is not a software rasteriser exists; else OSMesa.
RendererKind default_renderer();
// Whether a context of this kind can be created here; if not, *why says what is missing.
bool renderer_available(RendererKind kind, std::string* why);

// A GL context, current on the thread that created it (and only usable there).
class GLContext {
 public:
  // Creates the context and makes it current. Throws kUnsupported naming what is missing
  // (library, device, config), or when the process already renders with the other kind.
  static std::unique_ptr<GLContext> create(RendererKind kind, int width, int height);
  virtual ~GLContext() = default;
  virtual void make_current() = 0;
  virtual RendererKind kind() const = 0;
};

}  // namespace ember::sim
