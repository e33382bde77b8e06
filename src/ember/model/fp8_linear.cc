#include "ember/model/fp8_linear.h"

#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/custom_function.h>

#include <atomic>

#include "ember/core/error.h"
#include "ember/kernels/fp8_reference.h"
#include "ember/model/fused_ops.h"

#ifdef EMBER_CUDA_KERNELS
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "ember/kernels/fp8_quant.h"
#endif

namespace ember::model {
namespace {

std::atomic<int64_t> weight_generation{0};

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

std::string sizes_of(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

void require(bool ok, const std::string& what) {
  if (!ok) throw Error(ErrorKind::kInvalidArgument, "fp8: " + what);
}

// x [rows, cols]: the kernel on CUDA, the CPU reference elsewhere
Fp8Tensor quantize(const at::Tensor& x_in, bool blocks, bool transposed) {
  require(x_in.dim() == 2 && x_in.size(1) % kFp8Tile == 0,
          "an operand must be [rows, cols] with cols a multiple of 128, got " + sizes_of(x_in));
  require(!blocks || x_in.size(0) % kFp8Tile == 0, "a weight's rows must be a multiple of 128, got " + sizes_of(x_in));
  const int64_t rows = x_in.size(0), cols = x_in.size(1);
  const int64_t padded = blocks ? rows : round_up(rows, kFp8Tile);
  Fp8Tensor t = blocks ? Fp8Tensor{} : fp8_rows_empty(rows, cols, x_in.options(), transposed);
  if (blocks) {
    t.rows = rows;
    t.q = at::empty({rows, cols}, x_in.options().dtype(at::kFloat8_e4m3fn));
    t.scale = at::empty({rows / kFp8Tile, cols / kFp8Tile}, x_in.options().dtype(at::kFloat));
    if (transposed) t.qt = at::empty({cols, rows}, x_in.options().dtype(at::kFloat8_e4m3fn));
  }
  auto* qt = transposed ? t.qt.data_ptr() : nullptr;
  auto* scale_t = transposed && !blocks ? t.scale_t.data_ptr<float>() : nullptr;
  if (x_in.is_cuda()) {
#ifdef EMBER_CUDA_KERNELS
    c10::cuda::CUDAGuard guard(x_in.device());
    at::Tensor x = kernel_dtype(x_in.scalar_type()) >= 0 ? x_in.contiguous() : x_in.to(at::kFloat).contiguous();
    if (reinterpret_cast<uintptr_t>(x.data_ptr()) % 16) x = x.clone();  // the kernel reads 16-byte packs
    kernels::fp8_quantize(x.data_ptr(), kernel_dtype(x.scalar_type()), rows, cols, padded, blocks, t.q.data_ptr(),
                          t.scale.data_ptr<float>(), qt, scale_t,
                          c10::cuda::getCurrentCUDAStream(x.device().index()).stream());
#else
    require(false, "ember was built without its CUDA kernels (nvcc was not found)");
#endif
  } else {
    const at::Tensor x = x_in.to(at::kFloat).contiguous();
    kernels::ref::fp8_quantize(x.data_ptr<float>(), rows, cols, padded, blocks, static_cast<uint8_t*>(t.q.data_ptr()),
                               t.scale.data_ptr<float>(), static_cast<uint8_t*>(qt), scale_t);
  }
  if (blocks && transposed) t.scale_t = t.scale.t().contiguous();
  return t;
}

// y [rows, out] = x W^T
at::Tensor forward_product(const Fp8Tensor& x, const Fp8Tensor& w, at::ScalarType dtype) {
  return fp8_scaled_mm(x.q, x.scale.t(), w.q.t(), w.scale.t(), dtype).narrow(0, 0, x.rows);
}

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

struct Fp8LinearFunction : torch::autograd::Function<Fp8LinearFunction> {
  // x [rows, in], weight [out, in]; out_dtype: y's
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight, Fp8WeightCache* cache,
                            bool weight_grad, int64_t out_dtype) {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    const Fp8Tensor& w = cache->get(weight);
    // x^T's tiles (for the weight gradient) from the same read of x
    Fp8Tensor xq = quantize(x, false, weight_grad);
    ctx->saved_data["x_qt"] = xq.qt;
    ctx->saved_data["x_scale_t"] = xq.scale_t;
    ctx->saved_data["w_qt"] = w.qt;
    ctx->saved_data["w_scale_t"] = w.scale_t;
    ctx->saved_data["x_dtype"] = int64_t(x.scalar_type());
    ctx->saved_data["w_dtype"] = int64_t(weight.scalar_type());
    return forward_product(xq, w, at::ScalarType(out_dtype));
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    const at::Tensor& dy = grads[0];  // [rows, out]
    const bool want_dx = ctx->needs_input_grad(0), want_dw = ctx->needs_input_grad(1);
    Fp8Tensor dyq = quantize(dy, false, want_dw);
    at::Tensor dx, dw;
    if (want_dx) {
      // dx [rows, in] = dy W: W^T's blocks as the column-major second operand
      auto w_qt = ctx->saved_data["w_qt"].toTensor(), w_scale_t = ctx->saved_data["w_scale_t"].toTensor();
      dx = fp8_scaled_mm(dyq.q, dyq.scale.t(), w_qt.t(), w_scale_t.t(), at::ScalarType(ctx->saved_data["x_dtype"].toInt()))
               .narrow(0, 0, dyq.rows);
    }
    if (want_dw) {
      // dW [out, in] = dy^T x, both per 1x128 tile along the (padded) tokens
      auto x_qt = ctx->saved_data["x_qt"].toTensor(), x_scale_t = ctx->saved_data["x_scale_t"].toTensor();
      dw = fp8_scaled_mm(dyq.qt, dyq.scale_t.t(), x_qt.t(), x_scale_t, at::ScalarType(ctx->saved_data["w_dtype"].toInt()));
    }
    return {dx, dw, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

Fp8Tensor fp8_rows_empty(int64_t rows, int64_t cols, const at::TensorOptions& options, bool transposed) {
  const int64_t padded = round_up(rows, kFp8Tile);
  const auto f8 = options.dtype(at::kFloat8_e4m3fn), f32 = options.dtype(at::kFloat);
  Fp8Tensor t;
  t.rows = rows;
  t.q = at::empty({padded, cols}, f8);
  t.scale = at::empty({cols / kFp8Tile, padded}, f32);
  if (transposed) t.qt = at::empty({cols, padded}, f8), t.scale_t = at::empty({padded / kFp8Tile, cols}, f32);
  return t;
}

Fp8Tensor fp8_quantize_rows(const at::Tensor& x, bool transposed) { return quantize(x, false, transposed); }

Fp8Tensor fp8_quantize_blocks(const at::Tensor& w) { return quantize(w, true, true); }

at::Tensor fp8_dequantize(const at::Tensor& q, const at::Tensor& scale) {
  if (q.numel() == 0) return at::zeros(q.sizes(), q.options().dtype(at::kFloat));
  const int64_t tr = q.size(0) / scale.size(0), tc = q.size(1) / scale.size(1);
  return q.to(at::kFloat) * scale.repeat_interleave(tr, 0).repeat_interleave(tc, 1);
}

at::Tensor fp8_scaled_mm(const at::Tensor& a, const at::Tensor& scale_a, const at::Tensor& b, const at::Tensor& scale_b,
                         at::ScalarType out_dtype) {
  if (a.is_cuda()) return at::_scaled_mm(a, b, scale_a, scale_b, std::nullopt, std::nullopt, out_dtype);
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  return at::mm(fp8_dequantize(a, scale_a), fp8_dequantize(b, scale_b)).to(out_dtype);
}

void fp8_weights_updated() { weight_generation.fetch_add(1, std::memory_order_relaxed); }

const Fp8Tensor& Fp8WeightCache::get(const std::vector<at::Tensor>& weights) {
  const int64_t generation = weight_generation.load(std::memory_order_relaxed);
  std::vector<int64_t> versions;
  std::vector<const void*> data;
  for (const auto& w : weights) versions.push_back(w._version()), data.push_back(w.data_ptr());
  if (generation != generation_ || versions != versions_ || data != data_ || !w_.q.defined()) {
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> parts;
    for (const auto& w : weights) parts.push_back(w.detach());
    w_ = quantize(parts.size() == 1 ? parts[0] : at::cat(parts, 0), true, true);
    generation_ = generation, versions_ = std::move(versions), data_ = std::move(data);
    ++refreshes_;
  }
  return w_;
}

bool fp8_fits(int64_t in, int64_t out) { return in > 0 && out > 0 && in % (4 * kFp8Tile) == 0 && out % (4 * kFp8Tile) == 0; }

void set_fp8_quant_kernel(const std::string& name, const std::string& flag) {
  if (name != "vector" && name != "staged")
    throw Error(ErrorKind::kInvalidArgument, flag + ": expected vector or staged, got '" + name + "'");
#ifdef EMBER_CUDA_KERNELS
  kernels::set_fp8_quant_kernel(name == "staged" ? kernels::Fp8QuantKernel::kStaged : kernels::Fp8QuantKernel::kVector);
#else
  throw Error(ErrorKind::kInvalidArgument, flag + ": ember was built without its CUDA kernels (nvcc was not found)");
#endif
}

std::string fp8_quant_kernel_name() {
#ifdef EMBER_CUDA_KERNELS
  return kernels::fp8_quant_kernel() == kernels::Fp8QuantKernel::kStaged ? "staged" : "vector";
#else
  return "none";
#endif
}

std::string fp8_unsupported_reason(at::Device device) {
  if (!device.is_cuda()) return "";
#ifdef EMBER_CUDA_KERNELS
  const auto* p = at::cuda::getDeviceProperties(device.has_index() ? device.index() : at::cuda::current_device());
  if (p->major != 9)
    return "the block-scaled FP8 product (cuBLASLt) runs on sm_90 (Hopper) GPUs only; this one is sm_" +
           std::to_string(p->major) + std::to_string(p->minor);
  return "";
#else
  return "ember was built without its CUDA kernels (nvcc was not found)";
#endif
}

at::Tensor fp8_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, Fp8WeightCache& cache) {
  const int64_t in = weight.size(1), out = weight.size(0);
  require(x.dim() >= 1 && x.size(-1) == in, "input " + sizes_of(x) + " does not match weight " + sizes_of(weight));
  const auto device_type = x.device().type();
  const at::ScalarType dtype =
      at::autocast::is_autocast_enabled(device_type) ? at::autocast::get_autocast_dtype(device_type) : x.scalar_type();
  const at::Tensor x2 = x.reshape({-1, in});
  at::Tensor y;
  if (at::GradMode::is_enabled() && (x.requires_grad() || weight.requires_grad())) {
    y = Fp8LinearFunction::apply(x2, weight, &cache, weight.requires_grad(), int64_t(dtype));
  } else {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    y = forward_product(quantize(x2, false, false), cache.get(weight), dtype);
  }
  auto sizes = x.sizes().vec();
  sizes.back() = out;
  y = y.view(sizes);
  return bias.defined() ? y + bias.to(y.scalar_type()) : y;
}

}  // namespace ember::model
