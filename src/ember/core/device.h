// Which device a --device flag names, decided once for every command (model/device.h turns it
// into an at::Device).
#pragma once

#include <string>

namespace ember {

enum class DeviceKind { kCpu, kCuda };

// value: "auto" (or ""): CUDA when available, else the CPU; "cuda": CUDA, refused when none is
// available; "cpu". Throws kInvalidArgument naming `flag` for anything else.
DeviceKind resolve_device_kind(const std::string& value, bool cuda_available, const std::string& flag = "--device");

}  // namespace ember
