#include "ember/train/cuda_setup.h"

#include <ATen/autocast_mode.h>
#include <c10/cuda/CUDAAllocatorConfig.h>

#include <cstdlib>

namespace ember::train {

void configure_cuda_allocator() {
  if (std::getenv("PYTORCH_CUDA_ALLOC_CONF")) return;
  c10::CachingAllocator::setAllocatorSettings("expandable_segments:True");
}

}  // namespace ember::train

namespace ember::train {

Bf16Autocast::Bf16Autocast(bool enable) : enabled_(enable) {
  if (!enabled_) return;
  at::autocast::set_autocast_enabled(at::kCUDA, true);
  at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
}

Bf16Autocast::~Bf16Autocast() {
  if (!enabled_) return;
  at::autocast::set_autocast_enabled(at::kCUDA, false);
  at::autocast::clear_cache();
}

}  // namespace ember::train
