#include "ember/model/fp8_mlp.h"

#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/custom_function.h>

#include "ember/core/error.h"
#include "ember/kernels/fp8_reference.h"
#include "ember/model/fused_ops.h"

#ifdef EMBER_CUDA_KERNELS
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "ember/kernels/fp8_quant.h"
#endif

namespace ember::model {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw Error(ErrorKind::kInvalidArgument, "fp8 mlp: " + what);
}

// gu [rows, 2 hidden] (row stride 2 hidden), dh [rows, hidden] or undefined: the forward's or the
// backward's fused quantisation
Fp8Tensor gelu_quantize(const at::Tensor& dh_in, const at::Tensor& gu_in) {
  require(gu_in.dim() == 2 && gu_in.size(1) % (2 * kFp8Tile) == 0, "gate|up must be [rows, 2 hidden], hidden a multiple of 128");
  const bool backward = dh_in.defined();
  const int64_t rows = gu_in.size(0), hidden = gu_in.size(1) / 2;
  Fp8Tensor t = fp8_rows_empty(rows, backward ? 2 * hidden : hidden, gu_in.options(), true);
  const int64_t padded = t.q.size(0);
  auto* q = t.q.data_ptr();
  auto* qt = t.qt.data_ptr();
  if (gu_in.is_cuda()) {
#ifdef EMBER_CUDA_KERNELS
    c10::cuda::CUDAGuard guard(gu_in.device());
    const auto dtype = kernel_dtype(gu_in.scalar_type()) >= 0 ? gu_in.scalar_type() : at::kFloat;
    const at::Tensor gu = gu_in.to(dtype).contiguous();  // the products' outputs are contiguous: no copy
    auto* stream = c10::cuda::getCurrentCUDAStream(gu.device().index()).stream();
    const char* g = static_cast<const char*>(gu.data_ptr());
    const void* u = g + hidden * gu.element_size();
    if (backward) {
      const at::Tensor dh = dh_in.to(dtype).contiguous();
      kernels::fp8_gelu_mul_backward_quantize(dh.data_ptr(), g, u, 2 * hidden, kernel_dtype(dtype), rows, hidden, padded,
                                              q, t.scale.data_ptr<float>(), qt, t.scale_t.data_ptr<float>(), stream);
    } else {
      kernels::fp8_gelu_mul_quantize(g, u, 2 * hidden, kernel_dtype(dtype), rows, hidden, padded, q,
                                     t.scale.data_ptr<float>(), qt, t.scale_t.data_ptr<float>(), stream);
    }
#else
    require(false, "ember was built without its CUDA kernels (nvcc was not found)");
#endif
  } else {
    const at::Tensor gu = gu_in.to(at::kFloat).contiguous();
    const float* g = gu.data_ptr<float>();
    auto* qb = static_cast<uint8_t*>(q);
    auto* qtb = static_cast<uint8_t*>(qt);
    if (backward) {
      const at::Tensor dh = dh_in.to(at::kFloat).contiguous();
      kernels::ref::fp8_quantize_gelu_mul_backward(dh.data_ptr<float>(), g, g + hidden, 2 * hidden, rows, hidden, padded,
                                                   qb, t.scale.data_ptr<float>(), qtb, t.scale_t.data_ptr<float>());
    } else {
      kernels::ref::fp8_quantize_gelu_mul(g, g + hidden, 2 * hidden, rows, hidden, padded, qb, t.scale.data_ptr<float>(),
                                          qtb, t.scale_t.data_ptr<float>());
    }
  }
  return t;
}

// a [M, K] (1x128 tiles) times b^T, b [N, K] quantised per 128x128 block: [padded M, N]
at::Tensor times_blocks(const Fp8Tensor& a, const at::Tensor& b_q, const at::Tensor& b_scale, at::ScalarType dtype) {
  return fp8_scaled_mm(a.q, a.scale.t(), b_q.t(), b_scale.t(), dtype);
}

// a^T b over the (padded) tokens, both per 1x128 tile along them: [a cols, b cols]
at::Tensor over_tokens(const Fp8Tensor& a, const Fp8Tensor& b, at::ScalarType dtype) {
  return fp8_scaled_mm(a.qt, a.scale_t.t(), b.qt.t(), b.scale_t, dtype);
}

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

struct Fp8MlpFunction : torch::autograd::Function<Fp8MlpFunction> {
  // x [rows, width]; gate, up [hidden, width]; down [width, hidden]; out_dtype: y's and gu's
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& gate, const at::Tensor& up,
                            const at::Tensor& down, Fp8MlpCache* cache, int64_t out_dtype) {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    const auto dtype = at::ScalarType(out_dtype);
    const bool weight_grad = gate.requires_grad() || up.requires_grad() || down.requires_grad();
    const Fp8Tensor& wgu = cache->gate_up.get({gate, up});
    const Fp8Tensor& wd = cache->down.get(down);
    Fp8Tensor xq = fp8_quantize_rows(x, weight_grad);
    at::Tensor gu = times_blocks(xq, wgu.q, wgu.scale, dtype);  // [padded, 2 hidden]
    Fp8Tensor hq = fp8_quantize_gelu_mul(gu);                   // rows past x's are 0
    ctx->save_for_backward({gu, xq.qt, xq.scale_t, hq.qt, hq.scale_t, wgu.qt, wgu.scale_t, wd.qt, wd.scale_t});
    ctx->saved_data["rows"] = x.size(0);
    ctx->saved_data["x_dtype"] = int64_t(x.scalar_type());
    ctx->saved_data["w_dtype"] = int64_t(gate.scalar_type());
    ctx->saved_data["down_dtype"] = int64_t(down.scalar_type());
    return times_blocks(hq, wd.q, wd.scale, dtype).narrow(0, 0, x.size(0));
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& gu = saved[0];
    const Fp8Tensor xq{{}, {}, saved[1], saved[2]}, hq{{}, {}, saved[3], saved[4]};
    const int64_t rows = ctx->saved_data["rows"].toInt(), hidden = gu.size(1) / 2;
    const bool want_dx = ctx->needs_input_grad(0);
    const bool want_dw = ctx->needs_input_grad(1) || ctx->needs_input_grad(2) || ctx->needs_input_grad(3);
    Fp8Tensor dyq = fp8_quantize_rows(grads[0], want_dw);                    // [padded, width]
    at::Tensor dh = times_blocks(dyq, saved[7], saved[8], gu.scalar_type());  // dy down: [padded, hidden]
    Fp8Tensor dgu = fp8_quantize_gelu_mul_backward(dh, gu);                  // [padded, 2 hidden]
    at::Tensor dx, dgate, dup, ddown;
    if (want_dx)
      dx = times_blocks(dgu, saved[5], saved[6], at::ScalarType(ctx->saved_data["x_dtype"].toInt())).narrow(0, 0, rows);
    if (want_dw) {
      ddown = over_tokens(dyq, hq, at::ScalarType(ctx->saved_data["down_dtype"].toInt()));  // [width, hidden]
      auto dgate_up = over_tokens(dgu, xq, at::ScalarType(ctx->saved_data["w_dtype"].toInt()));  // [2 hidden, width]
      dgate = dgate_up.narrow(0, 0, hidden), dup = dgate_up.narrow(0, hidden, hidden);
    }
    return {dx, dgate, dup, ddown, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

Fp8Tensor fp8_quantize_gelu_mul(const at::Tensor& gu) { return gelu_quantize({}, gu); }

Fp8Tensor fp8_quantize_gelu_mul_backward(const at::Tensor& dh, const at::Tensor& gu) {
  require(dh.dim() == 2 && dh.size(0) == gu.size(0) && 2 * dh.size(1) == gu.size(1), "dh must be [rows, hidden]");
  return gelu_quantize(dh, gu);
}

at::Tensor fp8_gated_mlp(const at::Tensor& x, const at::Tensor& gate, const at::Tensor& up, const at::Tensor& down,
                         Fp8MlpCache& cache) {
  const int64_t width = gate.size(1), hidden = gate.size(0);
  require(x.dim() >= 1 && x.size(-1) == width && up.sizes() == gate.sizes() && down.size(0) == width &&
              down.size(1) == hidden && width % kFp8Tile == 0 && hidden % kFp8Tile == 0,
          "x [..., width], gate and up [hidden, width], down [width, hidden] with width, hidden multiples of 128");
  const auto device_type = x.device().type();
  const at::ScalarType dtype =
      at::autocast::is_autocast_enabled(device_type) ? at::autocast::get_autocast_dtype(device_type) : x.scalar_type();
  const at::Tensor x2 = x.reshape({-1, width});
  at::Tensor y;
  if (at::GradMode::is_enabled() &&
      (x.requires_grad() || gate.requires_grad() || up.requires_grad() || down.requires_grad())) {
    y = Fp8MlpFunction::apply(x2, gate, up, down, &cache, int64_t(dtype));
  } else {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    const Fp8Tensor& wgu = cache.gate_up.get({gate, up});
    const Fp8Tensor& wd = cache.down.get(down);
    Fp8Tensor hq = fp8_quantize_gelu_mul(times_blocks(fp8_quantize_rows(x2, false), wgu.q, wgu.scale, dtype));
    y = times_blocks(hq, wd.q, wd.scale, dtype).narrow(0, 0, x2.size(0));
  }
  auto sizes = x.sizes().vec();
  return y.view(sizes);
}

}  // namespace ember::model
