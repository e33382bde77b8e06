#include "ember/io/nvjpeg.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "ember/core/error.h"

namespace ember::io {

namespace {

// nvjpeg.h's types and values, as that C API defines them (nvJPEG's documentation): the status
// (0 is success), interleaved RGB output (NVJPEG_OUTPUT_RGBI = 5), the backends
// (NVJPEG_BACKEND_DEFAULT = 0, NVJPEG_BACKEND_HARDWARE = 3), nvjpegImage_t.
constexpr int kOutputRgbi = 5;
constexpr int kBackendDefault = 0, kBackendHardware = 3;
constexpr int kMaxComponent = 4;
struct NvImage {
  unsigned char* channel[kMaxComponent];
  size_t pitch[kMaxComponent];
};
using Handle = void*;
using State = void*;
using Stream = void*;
constexpr int kMemcpyDeviceToHost = 2;  // cudaMemcpyDeviceToHost

// the first of `names` that loads (its name in *loaded), or nullptr with every name in *tried
void* load_first(const std::vector<std::string>& names, std::string* loaded, std::string* tried) {
  for (const std::string& n : names) {
    if (void* h = ::dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      *loaded = n;
      return h;
    }
    *tried += (tried->empty() ? "" : ", ") + n;
  }
  return nullptr;
}

}  // namespace

struct NvJpeg::Impl {
  void* lib = nullptr;
  void* cudart = nullptr;
  std::string library, backend;
  // libnvjpeg
  int (*create_ex)(int, void*, void*, unsigned, Handle*) = nullptr;
  int (*destroy)(Handle) = nullptr;
  int (*state_create)(Handle, State*) = nullptr;
  int (*state_destroy)(State) = nullptr;
  int (*image_info)(Handle, const unsigned char*, size_t, int*, int*, int*, int*) = nullptr;
  int (*batched_init)(Handle, State, int, int, int) = nullptr;
  int (*batched)(Handle, State, const unsigned char* const*, const size_t*, NvImage*, Stream) = nullptr;
  // the CUDA runtime
  int (*device_count)(int*) = nullptr;
  int (*get_device)(int*) = nullptr;
  int (*set_device)(int) = nullptr;
  int (*cuda_malloc)(void**, size_t) = nullptr;
  int (*cuda_free)(void*) = nullptr;
  int (*memcpy)(void*, const void*, size_t, int) = nullptr;
  int (*stream_create)(Stream*) = nullptr;
  int (*stream_sync)(Stream) = nullptr;
  int (*stream_destroy)(Stream) = nullptr;

  Handle handle = nullptr;
  State state = nullptr;
  Stream stream = nullptr;
  int device_index = 0;  // the device current when it opened: every decode runs there
  unsigned char* device = nullptr;
  size_t device_bytes = 0;
  int initialized_batch = 0;
  std::mutex mu;

  template <class F>
  bool find(void* from, F& fn, const char* name, std::string* why) {
    fn = reinterpret_cast<F>(::dlsym(from, name));
    if (!fn) *why = library + ": no symbol " + name;
    return fn != nullptr;
  }

  // a handle on `backend_id` and its decoder state
  bool create(int backend_id, std::string* why) {
    if (create_ex(backend_id, nullptr, nullptr, 0, &handle) != 0) {
      handle = nullptr;
      *why = "nvjpegCreateEx refused backend " + std::to_string(backend_id);
      return false;
    }
    if (state_create(handle, &state) != 0) {
      destroy(handle);
      handle = nullptr;
      *why = "nvjpegJpegStateCreate failed";
      return false;
    }
    backend = backend_id == kBackendHardware ? "hardware" : "default";
    initialized_batch = 0;
    return true;
  }
  void release_handle() {
    if (state) state_destroy(state);
    if (handle) destroy(handle);
    state = handle = nullptr;
  }

  ~Impl() {
    if (state_destroy && destroy) release_handle();
    if (device && cuda_free) cuda_free(device);
    if (stream && stream_destroy) stream_destroy(stream);
    if (lib) ::dlclose(lib);
    if (cudart) ::dlclose(cudart);
  }
};

std::unique_ptr<NvJpeg> NvJpeg::open(std::string* why) {
  std::string ignored;
  if (!why) why = &ignored;
  auto impl = std::make_unique<Impl>();
  Impl& m = *impl;
  std::string tried, cudart_name;
  std::vector<std::string> names;
  if (const char* e = std::getenv("EMBER_NVJPEG"); e && *e) names = {e};
  else names = {"libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so", "/usr/local/cuda/lib64/libnvjpeg.so"};
  m.lib = load_first(names, &m.library, &tried);
  if (!m.lib) {
    *why = "libnvjpeg not found (tried " + tried + "; EMBER_NVJPEG=PATH names it)";
    return nullptr;
  }
  // the CUDA runtime: the one already loaded in a CUDA build (libtorch's), else the first found
  tried.clear();
  m.cudart = load_first({"libcudart.so.13", "libcudart.so.12", "libcudart.so", "/usr/local/cuda/lib64/libcudart.so"}, &cudart_name, &tried);
  if (!m.cudart) {
    *why = "the CUDA runtime not found (tried " + tried + ")";
    return nullptr;
  }
  const bool symbols = m.find(m.lib, m.create_ex, "nvjpegCreateEx", why) && m.find(m.lib, m.destroy, "nvjpegDestroy", why) &&
                       m.find(m.lib, m.state_create, "nvjpegJpegStateCreate", why) &&
                       m.find(m.lib, m.state_destroy, "nvjpegJpegStateDestroy", why) &&
                       m.find(m.lib, m.image_info, "nvjpegGetImageInfo", why) &&
                       m.find(m.lib, m.batched_init, "nvjpegDecodeBatchedInitialize", why) &&
                       m.find(m.lib, m.batched, "nvjpegDecodeBatched", why) &&
                       m.find(m.cudart, m.device_count, "cudaGetDeviceCount", why) &&
                       m.find(m.cudart, m.get_device, "cudaGetDevice", why) && m.find(m.cudart, m.set_device, "cudaSetDevice", why) &&
                       m.find(m.cudart, m.cuda_malloc, "cudaMalloc", why) && m.find(m.cudart, m.cuda_free, "cudaFree", why) &&
                       m.find(m.cudart, m.memcpy, "cudaMemcpy", why) && m.find(m.cudart, m.stream_create, "cudaStreamCreate", why) &&
                       m.find(m.cudart, m.stream_sync, "cudaStreamSynchronize", why) &&
                       m.find(m.cudart, m.stream_destroy, "cudaStreamDestroy", why);
  if (!symbols) return nullptr;
  int devices = 0;
  if (m.device_count(&devices) != 0 || devices == 0) {
    *why = "no CUDA device";
    return nullptr;
  }
  if (m.get_device(&m.device_index) != 0) {
    *why = "cudaGetDevice failed";
    return nullptr;
  }
  if (m.stream_create(&m.stream) != 0) {
    m.stream = nullptr;
    *why = "cudaStreamCreate failed";
    return nullptr;
  }
  std::string hw_why;
  if (!m.create(kBackendHardware, &hw_why) && !m.create(kBackendDefault, why)) return nullptr;
  return std::unique_ptr<NvJpeg>(new NvJpeg(std::move(impl)));
}

NvJpeg::NvJpeg(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NvJpeg::~NvJpeg() = default;
const std::string& NvJpeg::backend() const { return impl_->backend; }
const std::string& NvJpeg::library() const { return impl_->library; }

std::vector<Image> NvJpeg::decode(const std::vector<std::span<const uint8_t>>& jpegs, const std::string& what) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  // the calling thread's current device may be another (loader threads start on device 0)
  if (m.set_device(m.device_index) != 0) fail(ErrorKind::kIO, what + ": cudaSetDevice(" + std::to_string(m.device_index) + ") failed");
  const int n = int(jpegs.size());
  std::vector<Image> out(jpegs.size());
  if (n == 0) return out;
  std::vector<size_t> offsets(jpegs.size() + 1, 0);
  for (int i = 0; i < n; ++i) {
    int components = 0, subsampling = 0, widths[kMaxComponent] = {0}, heights[kMaxComponent] = {0};
    if (m.image_info(m.handle, jpegs[size_t(i)].data(), jpegs[size_t(i)].size(), &components, &subsampling, widths, heights) != 0 ||
        widths[0] <= 0 || heights[0] <= 0 || widths[0] > 16384 || heights[0] > 16384)
      fail_corrupt(what + " image " + std::to_string(i) + ": nvJPEG cannot read its header");
    out[size_t(i)].width = widths[0];
    out[size_t(i)].height = heights[0];
    offsets[size_t(i) + 1] = offsets[size_t(i)] + size_t(widths[0]) * size_t(heights[0]) * 3;
  }
  if (offsets.back() > m.device_bytes) {
    if (m.device) m.cuda_free(m.device);
    m.device = nullptr;
    m.device_bytes = 0;
    if (m.cuda_malloc(reinterpret_cast<void**>(&m.device), offsets.back()) != 0) fail(ErrorKind::kIO, what + ": cudaMalloc failed");
    m.device_bytes = offsets.back();
  }
  std::vector<const unsigned char*> data;
  std::vector<size_t> lengths;
  std::vector<NvImage> dst(jpegs.size());
  for (int i = 0; i < n; ++i) {
    data.push_back(jpegs[size_t(i)].data());
    lengths.push_back(jpegs[size_t(i)].size());
    dst[size_t(i)] = {};
    dst[size_t(i)].channel[0] = m.device + offsets[size_t(i)];
    dst[size_t(i)].pitch[0] = size_t(out[size_t(i)].width) * 3;
  }
  auto run = [&] {
    if (m.initialized_batch != n) {
      if (m.batched_init(m.handle, m.state, n, 1, kOutputRgbi) != 0) return false;
      m.initialized_batch = n;
    }
    return m.batched(m.handle, m.state, data.data(), lengths.data(), dst.data(), m.stream) == 0 && m.stream_sync(m.stream) == 0;
  };
  bool ok = run();
  if (!ok && m.backend == "hardware") {
    // the hardware engines take baseline JPEG only: the default backend for the rest of the run
    std::string why;
    m.release_handle();
    if (!m.create(kBackendDefault, &why)) fail(ErrorKind::kIO, what + ": nvJPEG: " + why);
    ok = run();
  }
  if (!ok) fail_corrupt(what + ": nvJPEG could not decode a batch of " + std::to_string(n) + " images");
  std::vector<uint8_t> host(offsets.back());
  if (m.memcpy(host.data(), m.device, host.size(), kMemcpyDeviceToHost) != 0) fail(ErrorKind::kIO, what + ": cudaMemcpy failed");
  for (int i = 0; i < n; ++i)
    out[size_t(i)].rgb.assign(host.begin() + std::ptrdiff_t(offsets[size_t(i)]), host.begin() + std::ptrdiff_t(offsets[size_t(i) + 1]));
  return out;
}

JpegDecoder choose_jpeg_decoder(const std::string& name, bool nvjpeg_opened, const std::string& why_not) {
  if (name == "cpu") return JpegDecoder::kCpu;
  if (name == "nvjpeg") {
    if (!nvjpeg_opened) fail(ErrorKind::kInvalidArgument, "--dataset.jpeg_decoder=nvjpeg: nvJPEG is not available here (" + why_not + ")");
    return JpegDecoder::kNvjpeg;
  }
  fail(ErrorKind::kInvalidArgument, "--dataset.jpeg_decoder=" + name + ": must be cpu or nvjpeg");
}

}  // namespace ember::io
