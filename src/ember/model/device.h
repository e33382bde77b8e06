// The device a --device flag names, as libtorch's at::Device (core/device.h decides).
#pragma once

#include <ATen/ATen.h>

#include <string>

namespace ember::model {

// "auto" (or ""), "cuda" (CUDA device 0; refused when none is available) or "cpu"; throws
// kInvalidArgument naming `flag` otherwise.
at::Device resolve_device(const std::string& value, const std::string& flag = "--device");

}  // namespace ember::model
