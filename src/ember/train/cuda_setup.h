// Process-wide CUDA settings for training: the caching allocator grows its segments instead of
// allocating new blocks for every new batch shape (packed batches change shape every step).
#pragma once

namespace ember::train {

// Call once before the first CUDA allocation; a no-op when PYTORCH_CUDA_ALLOC_CONF is set
// (the user's choice wins).
void configure_cuda_allocator();

}  // namespace ember::train
