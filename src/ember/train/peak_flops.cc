#include "ember/train/peak_flops.h"

#include <ATen/cuda/CUDAContext.h>
#include <torch/cuda.h>

#include <chrono>
#include <string>

namespace ember::train {

double measure_peak_flops(const at::Device& device, bool bf16) {
  const int64_t n = device.is_cuda() ? 8192 : 512;
  auto opts = at::TensorOptions().device(device).dtype(bf16 ? at::kBFloat16 : at::kFloat);
  auto a = at::randn({n, n}, opts), b = at::randn({n, n}, opts);
  auto sync = [&] {
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
  };
  at::matmul(a, b);
  sync();
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const int inner = device.is_cuda() ? 10 : 2;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < inner; ++i) at::matmul(a, b);
    sync();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, inner * 2.0 * n * n * n / s);
  }
  return best;
}

double nominal_peak_flops(const at::Device& device) {
  if (!device.is_cuda()) return 0;
  std::string name = at::cuda::getDeviceProperties(device.index())->name;
  if (name.find("H100") != std::string::npos || name.find("H200") != std::string::npos) return 989.4e12;
  return 0;
}

}  // namespace ember::train
