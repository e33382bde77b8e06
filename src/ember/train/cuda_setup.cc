#include "ember/train/cuda_setup.h"

#include <c10/cuda/CUDAAllocatorConfig.h>

#include <cstdlib>

namespace ember::train {

void configure_cuda_allocator() {
  if (std::getenv("PYTORCH_CUDA_ALLOC_CONF")) return;
  c10::CachingAllocator::setAllocatorSettings("expandable_segments:True");
}

}  // namespace ember::train
