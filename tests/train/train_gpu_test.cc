// The trainer's CUDA helpers. Skips (with the reason) where no CUDA device is present.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <ATen/cuda/Sleep.h>

#include "ember/model/groot.h"
#include "ember/train/cuda_setup.h"
#include "ember/train/optimizer.h"

namespace ember::train {
namespace {

// GpuLag lets the host run `steps` steps ahead, then waits for the oldest, at most the timeout.
TEST(GpuLagCuda, WaitsForTheOldestStepWithinTheTimeout) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
  at::Device cuda(at::kCUDA, 0);
  GpuLag lag(cuda, 2);
  using std::chrono::milliseconds;
  EXPECT_TRUE(lag.mark(milliseconds(1)));  // nothing to wait for yet
  EXPECT_TRUE(lag.mark(milliseconds(1)));
  at::cuda::sleep(int64_t(1) << 32);       // about 2 s of GPU time on the stream
  EXPECT_TRUE(lag.mark(milliseconds(10000)));  // the oldest step finished before the sleep
  EXPECT_TRUE(lag.mark(milliseconds(10000)));
  EXPECT_FALSE(lag.mark(milliseconds(10)));    // the step recorded after the sleep: not yet
  torch::cuda::synchronize();
}


}  // namespace
}  // namespace ember::train

namespace ember::train {
namespace {

// ember's one-launch AdamW kernel and PyTorch's fused AdamW make the same updates: parameters of
// fp32 and bf16 (two groups, as --policy.param_dtype=bf16 has them) with sizes that are not whole
// packs, larger than a block's chunk, and empty; three steps with a gradient multiplier.
TEST(AdamWCuda, KernelMatchesPyTorchsFusedAdamW) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
  ASSERT_TRUE(adamw_kernel_built()) << "ember was built without nvcc: the AdamW kernel is not in this build";
  at::manual_seed(6);
  at::Device cuda(at::kCUDA, 0);
  std::vector<std::pair<at::ScalarType, std::vector<int64_t>>> shapes = {
      {at::kFloat, {7}}, {at::kBFloat16, {300, 131}}, {at::kFloat, {40000}}, {at::kBFloat16, {0}},
      {at::kBFloat16, {3}}, {at::kFloat, {64, 33}}, {at::kBFloat16, {70001}}};
  auto make = [&] {
    at::manual_seed(7);
    model::NamedTensors params;
    for (size_t i = 0; i < shapes.size(); ++i)
      params.emplace_back("p" + std::to_string(i),
                          at::randn(shapes[i].second, at::TensorOptions().device(cuda)).to(shapes[i].first));
    return params;
  };
  auto mine = make(), theirs = make();
  AdamW a(mine, {}), b(theirs, {});
  b.use_kernel(false);
  for (int step = 0; step < 3; ++step) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      auto g = at::randn(shapes[i].second, at::TensorOptions().device(cuda)).to(shapes[i].first);
      mine[i].second.mutable_grad() = g.clone();
      theirs[i].second.mutable_grad() = g.clone();
    }
    auto multiplier = at::full({}, 0.5 + step, at::TensorOptions().device(cuda));
    a.step(1e-2, multiplier);
    b.step(1e-2, multiplier);
  }
  auto sa = a.state(), sb = b.state();
  for (size_t i = 0; i < shapes.size(); ++i) {
    sa.push_back(mine[i]);
    sb.push_back(theirs[i]);
  }
  auto start = make();
  for (size_t i = 0; i < sa.size(); ++i) {
    SCOPED_TRACE(sa[i].first);
    const auto& x = sa[i].second;
    const auto& y = sb[i].second;
    ASSERT_EQ(x.scalar_type(), y.scalar_type());
    if (y.numel() == 0) continue;
    const double tol = y.scalar_type() == at::kFloat ? 1e-5 : 1e-2;
    const double err = (x.to(at::kDouble) - y.to(at::kDouble)).abs().max().item<double>() /
                       std::max(y.to(at::kDouble).abs().max().item<double>(), 1e-12);
    EXPECT_LT(err, tol);
  }
  // the parameters moved (the comparison is not of two no-ops)
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (mine[i].second.numel() == 0) continue;
    EXPECT_FALSE(at::equal(mine[i].second, start[i].second)) << mine[i].first;
  }
}

// ember's one-launch sum of squares of the gradients (the clipping's norm) against the fp64
// answer and PyTorch's foreach norms: fp32 and bf16 groups, odd sizes, an empty gradient, a
// parameter without one, a gradient that is a strided view (the foreach path takes that group),
// and gradients large enough for many blocks.
TEST(GradNormCuda, KernelMatchesTheExactSumOfSquares) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
  ASSERT_TRUE(adamw_kernel_built()) << "ember was built without nvcc: the optimizer kernels are not in this build";
  at::manual_seed(8);
  auto on = at::TensorOptions().device(at::Device(at::kCUDA, 0));
  std::vector<std::pair<at::ScalarType, std::vector<int64_t>>> shapes = {
      {at::kFloat, {7}}, {at::kBFloat16, {300, 131}}, {at::kFloat, {40000}}, {at::kBFloat16, {0}},
      {at::kBFloat16, {3}}, {at::kFloat, {64, 33}}, {at::kBFloat16, {1000003}}, {at::kHalf, {5, 9}}};
  std::vector<at::Tensor> params;
  for (const auto& [dtype, shape] : shapes) {
    auto p = at::zeros(shape, on.dtype(dtype));
    p.mutable_grad() = (at::randn(shape, on) * 3).to(dtype);
    params.push_back(p);
  }
  params.push_back(at::zeros({11}, on));  // no gradient
  auto exact = [&] {
    double sum = 0;
    for (const auto& p : params)
      if (p.grad().defined()) sum += p.grad().to(at::kDouble).square().sum().item<double>();
    return sum;
  };
  const double want = exact();
  const double mine = grad_squared_norm(params).item<double>();
  const double theirs = grad_squared_norm(params, /*use_kernel=*/false).item<double>();
  EXPECT_NEAR(mine, want, 1e-5 * want);
  EXPECT_NEAR(theirs, want, 1e-5 * want);
  EXPECT_TRUE(grad_squared_norm(params).is_cuda());
  // a strided gradient: its dtype's group falls back to the foreach norms, still exact
  auto strided = at::zeros({100, 200}, on);
  strided.mutable_grad() = (at::randn({200, 400}, on) * 2).t().narrow(0, 0, 100);
  ASSERT_FALSE(strided.grad().is_contiguous());
  params.push_back(strided);
  EXPECT_NEAR(grad_squared_norm(params).item<double>(), exact(), 1e-5 * exact());
}


}  // namespace
}  // namespace ember::train

#include "ember/model/pi05.h"
#include "ember/train/inference.h"
#include "ember/train/sampler.h"
#include "model/policy_test_util.h"

namespace ember::train {
namespace {

// Samples batches of each size in `sizes` through `graphs` and eagerly (sample_chunks), then the
// same shapes with other images, prompts and noise: each matches eager sampling (2e-2, bf16), the
// second of a shape replays the first's graph (its inputs are copied in, not stale), none runs
// eagerly. state_dim > 0: the samples carry states (GR00T's state token).
void expect_graphs_sample_what_eager_samples(model::PolicyModuleImpl& policy, const model::PolicyShape& shape, Sampler& graphs,
                                             const std::vector<int>& sizes, int64_t state_dim) {
  const at::Device cuda(at::kCUDA, 0);
  ASSERT_EQ(graphs.mode(), SamplerMode::kGraphs);
  int64_t batches = 0;
  auto check = [&](std::vector<model::PolicySample>& samples, const std::string& what) {
    if (state_dim > 0)
      for (auto& s : samples) s.state = at::randn({state_dim});
    auto p = model::test::ptrs(samples);
    auto noise = at::randn({int64_t(samples.size()), shape.horizon, shape.max_action_dim});
    auto want = sample_chunks(policy, shape, p, cuda, noise);
    auto got = graphs.sample(p, noise);
    ++batches;
    ASSERT_EQ(got.sizes(), want.sizes()) << what;
    EXPECT_LT(model::test::max_rel_err(got, want), 2e-2) << what;
  };
  for (int n : sizes) {
    auto samples = model::test::inference_samples(shape, n, uint64_t(n));
    check(samples, "batch " + std::to_string(n));
    const int64_t captured = graphs.stats().captures;
    // the same shapes, other values: replayed, not captured again
    for (auto& s : samples) {
      for (auto& im : s.images) im = at::rand_like(im) * 2 - 1;
      for (auto& t : s.prompt) t = (t + 5) % int(shape.vocab);
    }
    check(samples, "batch " + std::to_string(n) + ", other values");
    EXPECT_EQ(graphs.stats().captures, captured) << "batch " << n;
  }
  EXPECT_EQ(graphs.stats().replays, batches);
  EXPECT_EQ(graphs.stats().eager, 0);
}

// The engine's CUDA graphs sample what sample_chunks samples eagerly (the same weights, bf16
// autocast both); batches of 3 run in a graph of 4.
TEST(SamplerCuda, GraphsSampleWhatEagerSamples) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
  auto shape = model::test::tiny_pi05_shape();
  at::manual_seed(3);
  model::Pi05Policy policy(shape);
  policy->to(at::Device(at::kCUDA, 0));
  policy->eval();
  Sampler graphs(*policy, shape, at::Device(at::kCUDA, 0), {.text_multiple = 16});
  expect_graphs_sample_what_eager_samples(*policy, shape, graphs, {1, 3, 4, 2}, 0);
  EXPECT_EQ(graphs.stats().captures, 4);  // one shape per batch size here (their cameras differ)
}

// The same for a GR00T policy of one embodiment (graph-safe: GrootPolicyImpl::graph_safe), its
// samples with states; one of several embodiments is not graph-safe (host-made groupings).
TEST(SamplerCuda, GrootGraphsSampleWhatEagerSamples) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
  auto groot = model::groot_preset_shape("tiny");
  groot.embodiments = {{8, 7}};
  at::manual_seed(4);
  model::GrootPolicy policy(groot);
  policy->to(at::Device(at::kCUDA, 0));
  policy->eval();
  Sampler graphs(*policy, groot.base, at::Device(at::kCUDA, 0), {.text_multiple = 16});
  expect_graphs_sample_what_eager_samples(*policy, groot.base, graphs, {1, 3, 2}, 8);
  model::GrootPolicy mixed(model::groot_preset_shape("tiny"));
  EXPECT_FALSE(mixed->graph_safe());
}

}  // namespace
}  // namespace ember::train
