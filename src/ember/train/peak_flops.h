// The device's achievable matrix-multiply throughput, measured (for MFU): the best of a few
// large matrix products, bf16 on CUDA when bf16 is used, else float32.
#pragma once

#include <ATen/ATen.h>

namespace ember::train {

// FLOP/s. Takes well under a second.
double measure_peak_flops(const at::Device& device, bool bf16);

// The datasheet's dense bf16 peak of known GPUs (H100/H200 SXM: 989.4e12), 0 when unknown.
double nominal_peak_flops(const at::Device& device);

}  // namespace ember::train
