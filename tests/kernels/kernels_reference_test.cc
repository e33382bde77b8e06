// The CPU references of ember's CUDA kernels (kernels/reference.h) against PyTorch's own
// operators on random inputs: gelu(tanh) * up and its gradients through autograd, the rotary
// rotation as x * cos + swap_halves(x) * sin, AdamW against torch::optim::AdamW, and the sum of
// squares in double.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ember/kernels/reference.h"

namespace ember::kernels {
namespace {

double rel_err(const at::Tensor& got, const at::Tensor& want) {
  return (got - want).abs().max().item<double>() / std::max(1e-12, want.abs().max().item<double>());
}

TEST(KernelReference, GeluTanhMulMatchesAtenForwardAndBackward) {
  at::manual_seed(1);
  const int64_t n = 1037;
  auto gate = (at::randn({n}) * 3).requires_grad_(), up = at::randn({n}).requires_grad_();
  auto y = at::gelu(gate, "tanh") * up;
  auto d_out = at::randn({n});
  y.backward(d_out);
  auto out = at::empty({n}), d_gate = at::empty({n}), d_up = at::empty({n});
  auto g = gate.detach(), u = up.detach();
  ref::gelu_tanh_mul_forward(g.data_ptr<float>(), u.data_ptr<float>(), out.data_ptr<float>(), n);
  ref::gelu_tanh_mul_backward(d_out.data_ptr<float>(), g.data_ptr<float>(), u.data_ptr<float>(), d_gate.data_ptr<float>(),
                              d_up.data_ptr<float>(), n);
  EXPECT_LT(rel_err(out, y.detach()), 1e-6);
  EXPECT_LT(rel_err(d_gate, gate.grad()), 1e-5);
  EXPECT_LT(rel_err(d_up, up.grad()), 1e-6);
}

TEST(KernelReference, RopeRotateMatchesCosSinFormulaAndInverts) {
  at::manual_seed(2);
  const int64_t tokens = 7, heads = 3, half = 8, stride = heads * 2 * half + 5;  // tokens 5 elements apart
  auto storage = at::randn({tokens, stride});
  auto x = storage.narrow(1, 0, heads * 2 * half).reshape({tokens, heads, 2 * half});
  auto angle = at::rand({tokens, 1, half}) * 6.28;
  auto cos = at::cat({angle.cos(), angle.cos()}, -1).contiguous(), sin = at::cat({-angle.sin(), angle.sin()}, -1).contiguous();
  auto swapped = at::cat({x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  auto want = x * cos + swapped * sin;
  auto out = at::empty({tokens, heads, 2 * half}), back = at::empty({tokens, heads, 2 * half});
  ref::rope_rotate(storage.data_ptr<float>(), stride, cos.data_ptr<float>(), sin.data_ptr<float>(), out.data_ptr<float>(), tokens,
                   heads, half, false);
  EXPECT_LT(rel_err(out, want), 1e-6);
  ref::rope_rotate(out.data_ptr<float>(), heads * 2 * half, cos.data_ptr<float>(), sin.data_ptr<float>(), back.data_ptr<float>(),
                   tokens, heads, half, true);
  EXPECT_LT(rel_err(back, x.contiguous()), 1e-5);
}

TEST(KernelReference, AdamWMatchesTorchOptimAdamW) {
  at::manual_seed(3);
  const int64_t n = 513;
  const double lr = 1e-2, b1 = 0.9, b2 = 0.95, wd = 0.1, eps = 1e-8;
  auto p = torch::randn({n}).requires_grad_();
  torch::optim::AdamW opt({p}, torch::optim::AdamWOptions(lr).betas({b1, b2}).eps(eps).weight_decay(wd));
  auto mine = p.detach().clone(), m = torch::zeros({n}), v = torch::zeros({n});
  for (int step = 1; step <= 5; ++step) {
    auto g = torch::randn({n});
    p.mutable_grad() = g.clone();
    opt.step();
    ref::adamw_step(mine.data_ptr<float>(), g.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(), n, float(step), lr, b1,
                    b2, wd, eps);
  }
  EXPECT_LT(rel_err(mine, p.detach()), 1e-5);
}

TEST(KernelReference, AdamWGradientMultiplierScalesTheGradient) {
  at::manual_seed(4);
  const int64_t n = 64;
  auto p1 = at::randn({n}), g = at::randn({n});
  auto p2 = p1.clone(), g2 = g * 0.25;
  auto m1 = at::zeros({n}), v1 = at::zeros({n}), m2 = at::zeros({n}), v2 = at::zeros({n});
  ref::adamw_step(p1.data_ptr<float>(), g.data_ptr<float>(), m1.data_ptr<float>(), v1.data_ptr<float>(), n, 1, 1e-3, 0.9, 0.95, 0.01,
                  1e-8, 0.25f);
  ref::adamw_step(p2.data_ptr<float>(), g2.data_ptr<float>(), m2.data_ptr<float>(), v2.data_ptr<float>(), n, 1, 1e-3, 0.9, 0.95, 0.01,
                  1e-8);
  EXPECT_TRUE(at::equal(p1, p2));
}

TEST(KernelReference, SumSquaresIsExact) {
  at::manual_seed(5);
  auto x = at::randn({100003});
  EXPECT_NEAR(ref::sum_squares(x.data_ptr<float>(), x.numel()), x.to(at::kDouble).pow(2).sum().item<double>(), 1e-9 * x.numel());
}

}  // namespace
}  // namespace ember::kernels
