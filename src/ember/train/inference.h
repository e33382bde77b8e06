// The one inference path of `ember predict`, `ember eval` (checkpoint policies), `ember serve`
// and `ember bench inference`: policy samples, collated (varlen) onto the device, through the
// policy's sample_actions (its prefix computed once per batch, the flow integrated from the
// initial noise), under bf16 autocast on CUDA, back to the host as normalised action chunks.
// A captured denoising loop (CUDA graphs per batch bucket) belongs here, behind this call.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <span>

#include "ember/model/policy.h"
#include "ember/model/policy_inputs.h"

namespace ember::train {

// [H, max_action_dim] float32 on the host: the initial flow noise of `seed`, drawn from a CPU
// generator of its own, so that it is the same on every device and in whatever batch the sample
// runs. `ember predict` (its seed) and `ember serve` (each request's seed) draw it this way.
at::Tensor seeded_noise(const model::PolicyShape& shape, uint64_t seed);

// Throws Error kInternal (naming `who`) unless noise is undefined or [n, H, max_action_dim]
// floating point: sample_chunks's and Sampler's check of a caller's initial noise.
void check_noise(const model::PolicyShape& shape, int64_t n, const at::Tensor& noise, const char* who);

// Normalised chunks [n, H, max_action_dim] float32 on the host for n >= 1 samples.
// noise: [n, H, max_action_dim] floating point on any device, the initial flow noise of each
// sample (not modified); undefined: drawn on `device` from its current generator, as
// sample_actions draws it (`ember eval`, seeded once with at::manual_seed). No gradients.
// Throws Error kInternal for noise of another shape; otherwise what the policy throws.
at::Tensor sample_chunks(model::PolicyModuleImpl& module, const model::PolicyShape& shape,
                         std::span<const model::PolicySample* const> samples, const at::Device& device,
                         const at::Tensor& noise = {});

}  // namespace ember::train
