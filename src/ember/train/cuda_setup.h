// Process-wide CUDA settings for training: the caching allocator grows its segments instead of
// allocating new blocks for every new batch shape (packed batches change shape every step).
#pragma once

#include <ATen/ATen.h>

#include <chrono>
#include <deque>
#include <memory>

namespace ember::train {

// Call once before the first CUDA allocation; a no-op when PYTORCH_CUDA_ALLOC_CONF is set
// (the user's choice wins).
void configure_cuda_allocator();

}  // namespace ember::train

namespace ember::train {

// bf16 autocast on `device` (CUDA unless told) for the scope (matrix products and attention in
// bf16, float32 master weights), then the autocast weight cache cleared; does nothing when
// `enable` is false. On CPU it serves policies whose parameters are bf16 (--policy.param_dtype).
class Bf16Autocast {
 public:
  explicit Bf16Autocast(bool enable, at::DeviceType device = at::kCUDA);
  ~Bf16Autocast();
  Bf16Autocast(const Bf16Autocast&) = delete;
  Bf16Autocast& operator=(const Bf16Autocast&) = delete;

 private:
  bool enabled_;
  at::DeviceType device_;
};

}  // namespace ember::train

namespace ember::train {

// Keeps the host at most `steps` steps ahead of a CUDA device's current stream: mark() after
// each step records an event there and, once more than `steps` are in flight, waits for the
// oldest (polling, so that the wait is bounded). A data-parallel host never blocks for long
// on its own GPU, yet cannot run far ahead of a GPU stuck in a collective either.
class GpuLag {
 public:
  GpuLag(at::Device device, int steps);
  ~GpuLag();
  // false when the oldest step did not finish within `timeout`.
  bool mark(std::chrono::milliseconds timeout);

 private:
  struct Events;
  at::Device device_;
  int steps_;
  std::unique_ptr<Events> events_;
};

}  // namespace ember::train
