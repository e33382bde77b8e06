// `ember bench fp8_linear`: each distinct linear layer of a preset's language backbone and action
// expert, forward and backward at the token counts a training batch gives it, in bf16 (at::linear)
// and block-wise FP8 (model::fp8_linear, the weight re-quantised every iteration as once per
// optimizer step with one micro-batch), side by side; plus the activation quantisation alone;
// then the language backbone's gated MLP whole, bf16 against the fused FP8 function, with the
// time of its quantisations (each alone, with the bytes it moves and its TB/s, under both
// quantisation kernels: staged, the first, and vector, the default) and of its products alone.
// What the per-layer choice of --policy.fp8 rests on.
#pragma once

#include <string>
#include <vector>

namespace ember::bench {

struct Fp8BenchOptions {
  std::string preset = "pi05";
  std::string device = "auto";
  int64_t batch_size = 16;  // the language backbone gets batch x 560 tokens (2 cameras of 256 + a
                            // 48-token prompt, the libero stream's mean), the expert batch x horizon
  int warmup = 5, repeats = 20;
};

// Prints one JSON line per layer shape; returns them. Throws Error kInvalidArgument naming the
// option for a bad value, or when FP8 cannot run on the device.
std::vector<std::string> run_fp8_bench(const Fp8BenchOptions& options);

}  // namespace ember::bench
