#include "ember/model/fused_ops.h"

#include <torch/csrc/autograd/custom_function.h>

#ifdef EMBER_CUDA_KERNELS
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "ember/kernels/fused_kernels.h"
#endif

namespace ember::model {

at::Tensor gelu_tanh_mul_reference(const at::Tensor& gate, const at::Tensor& up) {
  return at::gelu(gate, "tanh") * up;
}

at::Tensor rope_rotate_reference(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  auto xf = x.to(at::kFloat);
  auto swapped = xf.roll(xf.size(-1) / 2, -1);  // [x2, x1]
  return at::addcmul(xf * cos, swapped, sin).to(x.scalar_type());
}

int kernel_dtype(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return 0;
    case at::kBFloat16: return 1;
    case at::kHalf: return 2;
    default: return -1;
  }
}

bool fused_kernels_built() {
#ifdef EMBER_CUDA_KERNELS
  return true;
#else
  return false;
#endif
}

#ifdef EMBER_CUDA_KERNELS
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

bool fusable(const at::Tensor& t) { return t.is_cuda() && kernel_dtype(t.scalar_type()) >= 0; }

void* stream_of(const at::Tensor& t) { return c10::cuda::getCurrentCUDAStream(t.device().index()).stream(); }

struct GeluTanhMul : torch::autograd::Function<GeluTanhMul> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& gate_in, const at::Tensor& up_in) {
    c10::cuda::CUDAGuard guard(gate_in.device());
    auto gate = gate_in.contiguous(), up = up_in.contiguous();
    auto out = at::empty_like(gate);
    kernels::gelu_tanh_mul_forward(gate.data_ptr(), up.data_ptr(), out.data_ptr(), gate.numel(),
                                   kernel_dtype(gate.scalar_type()), stream_of(gate));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    ctx->save_for_backward({gate, up});
    return out;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto &gate = saved[0], &up = saved[1];
    c10::cuda::CUDAGuard guard(gate.device());
    auto d_out = grads[0].to(gate.scalar_type()).contiguous();
    auto d_gate = at::empty_like(gate), d_up = at::empty_like(up);
    kernels::gelu_tanh_mul_backward(d_out.data_ptr(), gate.data_ptr(), up.data_ptr(), d_gate.data_ptr(),
                                    d_up.data_ptr(), gate.numel(), kernel_dtype(gate.scalar_type()), stream_of(gate));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return {d_gate, d_up};
  }
};

// heads contiguous within a token (a column slice of a wider projection qualifies)
bool rows_of_heads(const at::Tensor& x) { return x.stride(2) == 1 && (x.size(1) == 1 || x.stride(1) == x.size(2)); }

at::Tensor rotate(const at::Tensor& x_in, const at::Tensor& cos, const at::Tensor& sin, bool inverse) {
  c10::cuda::CUDAGuard guard(x_in.device());
  auto x = rows_of_heads(x_in) ? x_in : x_in.contiguous();
  auto out = at::empty(x.sizes(), x.options());
  kernels::rope_rotate(x.data_ptr(), x.stride(0), cos.data_ptr<float>(), sin.data_ptr<float>(), out.data_ptr(),
                       x.size(0), x.size(1), x.size(2) / 2, inverse, kernel_dtype(x.scalar_type()), stream_of(x));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

struct RopeRotate : torch::autograd::Function<RopeRotate> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    ctx->save_for_backward({cos, sin});
    return rotate(x, cos, sin, /*inverse=*/false);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    auto saved = ctx->get_saved_variables();
    // the rotation is orthogonal: its gradient is the rotation by the opposite angle
    return {rotate(grads[0], saved[0], saved[1], /*inverse=*/true), at::Tensor(), at::Tensor()};
  }
};

bool rope_fusable(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  if (!fusable(x) || x.dim() != 3 || x.size(2) % 2 != 0) return false;
  for (const auto* t : {&cos, &sin}) {
    if (t->scalar_type() != at::kFloat || !t->is_contiguous() || t->device() != x.device() || t->requires_grad() ||
        t->sizes() != at::IntArrayRef({x.size(0), 1, x.size(2)}))
      return false;
  }
  return true;
}

}  // namespace
#endif

at::Tensor gelu_tanh_mul(const at::Tensor& gate, const at::Tensor& up) {
#ifdef EMBER_CUDA_KERNELS
  if (fusable(gate) && up.device() == gate.device() && up.scalar_type() == gate.scalar_type() &&
      up.sizes() == gate.sizes())
    return GeluTanhMul::apply(gate, up);
#endif
  return gelu_tanh_mul_reference(gate, up);
}

at::Tensor rope_rotate(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
#ifdef EMBER_CUDA_KERNELS
  if (rope_fusable(x, cos, sin)) return RopeRotate::apply(x, cos, sin);
#endif
  return rope_rotate_reference(x, cos, sin);
}

}  // namespace ember::model
