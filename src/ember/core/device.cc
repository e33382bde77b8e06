#include "ember/core/device.h"

#include "ember/core/error.h"

namespace ember {

DeviceKind resolve_device_kind(const std::string& value, bool cuda_available, const std::string& flag) {
  if (value == "cpu") return DeviceKind::kCpu;
  if (value == "cuda") {
    if (!cuda_available) fail(ErrorKind::kInvalidArgument, flag + "=cuda: no CUDA device is available");
    return DeviceKind::kCuda;
  }
  if (value == "auto" || value.empty()) return cuda_available ? DeviceKind::kCuda : DeviceKind::kCpu;
  fail(ErrorKind::kInvalidArgument, flag + ": expected auto, cuda or cpu, got '" + value + "'");
}

}  // namespace ember
