// The trainer's CUDA helpers. Skips (with the reason) where no CUDA device is present.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <ATen/cuda/Sleep.h>

#include "ember/train/cuda_setup.h"

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
