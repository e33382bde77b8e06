// pi0.5 at its real shapes against LeRobot 0.6.1's PI05Policy on the GPU (issue 21): the
// directory EMBER_LEROBOT_FULL_SIZE names, written by `lerobot_pi05_reference.py --full-size`
// (random weights rounded to bf16 values; LeRobot's outputs in float32 and after its bf16 cast).
// bench/lerobot_parity_h200.sh makes it and runs this test. ember runs the same weights in both
// attention layouts: float32 (TF32 off) against LeRobot's float32, and its two bf16 modes (bf16
// autocast over float32 master weights; bf16 parameters) against LeRobot's bf16 and float32.
// Skips, printing why, without a CUDA device or without the directory.
#include <gtest/gtest.h>

#include <torch/cuda.h>

#include <cstdio>
#include <cstdlib>

#include "ember/model/pi05.h"
#include "ember/train/cuda_setup.h"
#include "model/lerobot_reference.h"
#include "model/policy_test_util.h"

namespace ember::model {
namespace {

constexpr double kBf16Rtol = 2e-2;  // issue 21: bf16 on the GPU, against the float32 answer
constexpr double kFp32Rtol = 1e-3;  // float32 on the GPU: summation orders of cuBLAS and attention
// ember's bf16 against LeRobot's bf16: two independent bf16 roundings, each up to kBf16Rtol from
// the float32 answer, differ by up to their sum. The reductions (loss, per sample) and the sampled
// actions still meet kBf16Rtol; the element-wise velocity does not always (H200, 2026-12-01:
// padded 2.23e-2, with LeRobot's own bf16 1.23e-2 and ember's 1.46e-2 from float32).
constexpr double kBf16PairRtol = 2 * kBf16Rtol;

struct Outputs {
  at::Tensor velocity, per_element, per_sample, loss, sampled;
};

struct FullSize {
  std::filesystem::path dir;
  LeRobotImport im;
  test::LeRobotReference ref;
  Pi05Policy policy{nullptr};
  explicit FullSize(const std::filesystem::path& d)
      : dir(d), im(import_lerobot_pi05(d)), ref(d), policy(test::imported_policy(im)) {
    policy->to(at::kCUDA);
  }
  Outputs run(AttentionBackend backend, bool bf16) {
    at::NoGradGuard no_grad;
    auto samples = ref.samples();
    auto in = collate(test::ptrs(samples), im.shape, backend).to(at::kCUDA);
    const auto noise = ref("noise").to(at::kCUDA), time = ref("time").to(at::kCUDA);
    train::Bf16Autocast autocast(bf16);
    Outputs o;
    auto tt = time.view({-1, 1, 1});
    auto x_t = tt * noise + (1 - tt) * in.actions;
    o.velocity = policy->velocity(in, x_t, time).to(at::kFloat);
    o.per_element = (noise - in.actions - o.velocity).square();
    o.per_sample = o.per_element.narrow(2, 0, im.spec.action_dim).mean({1, 2});
    o.loss = policy->loss(in, noise, time).loss.to(at::kFloat);
    o.sampled = policy->sample_actions(in, ref("sample_noise").to(at::kCUDA)).to(at::kFloat);
    return o;
  }
  // the largest relative error against LeRobot's outputs (prefix "" or "bf16."), of the
  // element-wise ones (velocity, loss.per_element) or of the others; each printed
  std::pair<double, double> compare(const Outputs& o, const std::string& prefix, const std::string& what) {
    const std::pair<const char*, const at::Tensor*> rows[] = {{"velocity", &o.velocity},
                                                              {"loss.per_element", &o.per_element},
                                                              {"loss.per_sample", &o.per_sample},
                                                              {"loss", &o.loss},
                                                              {"sample_actions", &o.sampled}};
    double elementwise = 0, others = 0;
    std::printf("%s:", what.c_str());
    for (const auto& [name, t] : rows) {
      const double e = test::lerobot_rel(t->cpu(), ref(prefix + name));
      std::printf(" %s %.3e", name, e);
      double& worst = t == &o.velocity || t == &o.per_element ? elementwise : others;
      worst = std::max(worst, e);
    }
    std::printf("\n");
    return {elementwise, others};
  }
};

FullSize* full_size(std::string* why) {
  if (!torch::cuda::is_available()) {
    *why = "no CUDA device: this test needs a GPU";
    return nullptr;
  }
  const char* dir = std::getenv("EMBER_LEROBOT_FULL_SIZE");
  if (!dir || !*dir) {
    *why = "EMBER_LEROBOT_FULL_SIZE is not set: bench/lerobot_parity_h200.sh writes LeRobot's full-size reference "
           "(tests/python/lerobot_pi05_reference.py --full-size) and runs this test on it";
    return nullptr;
  }
  static FullSize f{std::filesystem::path(dir)};
  return &f;
}

class LeRobotFullSize : public ::testing::TestWithParam<AttentionBackend> {};

TEST_P(LeRobotFullSize, LossAndSampleActionsMatchLeRobot) {
  std::string why;
  FullSize* f = full_size(&why);
  if (!f) GTEST_SKIP() << why;
  const char* layout = GetParam() == AttentionBackend::kVarlen ? "varlen" : "padded";
  EXPECT_EQ(f->im.shape.lm.layers, 18);  // pi0.5's real shapes, not the shrunken fixture
  EXPECT_EQ(f->im.shape.vision.layers, 27);
  at::globalContext().setAllowTF32CuBLAS(false);
  at::globalContext().setAllowTF32CuDNN(false);
  set_param_dtype(f->policy, at::kFloat);
  const auto fp32 = f->compare(f->run(GetParam(), false), "", std::string(layout) + " float32 vs LeRobot float32");
  EXPECT_LT(std::max(fp32.first, fp32.second), kFp32Rtol);
  auto expect_bf16 = [&](const Outputs& o, const std::string& mode) {
    const auto truth = f->compare(o, "", std::string(layout) + " " + mode + " vs LeRobot float32");
    EXPECT_LT(std::max(truth.first, truth.second), kBf16Rtol) << mode;
    const auto pair = f->compare(o, "bf16.", std::string(layout) + " " + mode + " vs LeRobot bf16");
    EXPECT_LT(pair.second, kBf16Rtol) << mode;
    EXPECT_LT(pair.first, kBf16PairRtol) << mode;
  };
  expect_bf16(f->run(GetParam(), true), "bf16 autocast");
  set_param_dtype(f->policy, at::kBFloat16);
  expect_bf16(f->run(GetParam(), true), "bf16 parameters");
  set_param_dtype(f->policy, at::kFloat);
  std::printf("LeRobot bf16 vs LeRobot float32: %s\n", f->ref.meta.at("lerobot_bf16_vs_fp32").dump().c_str());
}

INSTANTIATE_TEST_SUITE_P(Layouts, LeRobotFullSize, ::testing::Values(AttentionBackend::kVarlen, AttentionBackend::kPadded),
                         [](const auto& info) { return info.param == AttentionBackend::kVarlen ? "Varlen" : "Padded"; });

}  // namespace
}  // namespace ember::model
