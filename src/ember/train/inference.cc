#include "ember/train/inference.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <optional>
#include <string>

#include "ember/core/error.h"
#include "ember/train/cuda_setup.h"

namespace ember::train {

at::Tensor seeded_noise(const model::PolicyShape& shape, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randn({shape.horizon, shape.max_action_dim}, gen, at::kFloat);
}

void check_noise(const model::PolicyShape& shape, int64_t n, const at::Tensor& noise, const char* who) {
  if (noise.defined() && (noise.dim() != 3 || noise.size(0) != n || noise.size(1) != shape.horizon ||
                          noise.size(2) != shape.max_action_dim || !noise.is_floating_point()))
    throw Error(ErrorKind::kInternal, std::string(who) + ": the noise is not [" + std::to_string(n) + ", " + std::to_string(shape.horizon) +
                                          ", " + std::to_string(shape.max_action_dim) + "] floating point");
}

at::Tensor sample_chunks(model::PolicyModuleImpl& module, const model::PolicyShape& shape,
                         std::span<const model::PolicySample* const> samples, const at::Device& device, const at::Tensor& noise) {
  const auto n = int64_t(samples.size());
  if (n == 0) throw Error(ErrorKind::kInternal, "sample_chunks: no samples");
  check_noise(shape, n, noise, "sample_chunks");
  auto in = model::collate(samples, shape, model::AttentionBackend::kVarlen).to(device);
  at::NoGradGuard no_grad;
  Bf16Autocast bf16(device.is_cuda());  // FlashAttention's varlen kernel on GPUs
  std::optional<at::Tensor> x0;
  // a copy on the device: a policy may integrate the flow in place
  if (noise.defined()) x0 = noise.to(device, at::kFloat, /*non_blocking=*/false, /*copy=*/true);
  return module.sample_actions(in, x0).to(at::kFloat).cpu().contiguous();  // [n, H, A]
}

}  // namespace ember::train
