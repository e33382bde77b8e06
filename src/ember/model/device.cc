#include "ember/model/device.h"

#include <torch/cuda.h>

#include "ember/core/device.h"

namespace ember::model {

at::Device resolve_device(const std::string& value, const std::string& flag) {
  return resolve_device_kind(value, torch::cuda::is_available(), flag) == DeviceKind::kCuda ? at::Device(at::kCUDA, 0)
                                                                                             : at::Device(at::kCPU);
}

}  // namespace ember::model
