#include "ember/train/cuda_setup.h"

#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAAllocatorConfig.h>

#include <cstdlib>
#include <thread>

namespace ember::train {

void configure_cuda_allocator() {
  if (std::getenv("PYTORCH_CUDA_ALLOC_CONF")) return;
  c10::CachingAllocator::setAllocatorSettings("expandable_segments:True");
}

}  // namespace ember::train

namespace ember::train {

Bf16Autocast::Bf16Autocast(bool enable, at::DeviceType device) : enabled_(enable), device_(device) {
  if (!enabled_) return;
  at::autocast::set_autocast_enabled(device_, true);
  at::autocast::set_autocast_dtype(device_, at::kBFloat16);
}

Bf16Autocast::~Bf16Autocast() {
  if (!enabled_) return;
  at::autocast::set_autocast_enabled(device_, false);
  at::autocast::clear_cache();
}

}  // namespace ember::train

namespace ember::train {

struct GpuLag::Events {
  std::deque<at::cuda::CUDAEvent> in_flight;
};

GpuLag::GpuLag(at::Device device, int steps) : device_(device), steps_(std::max(1, steps)), events_(std::make_unique<Events>()) {}
GpuLag::~GpuLag() = default;

bool GpuLag::mark(std::chrono::milliseconds timeout) {
  auto& q = events_->in_flight;
  q.emplace_back();
  q.back().record(c10::cuda::getCurrentCUDAStream(device_.index()));
  if (int(q.size()) <= steps_) return true;
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!q.front().query()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  q.pop_front();
  return true;
}

}  // namespace ember::train
