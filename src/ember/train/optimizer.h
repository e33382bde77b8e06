// AdamW over a list of parameters with libtorch's fused multi-tensor kernel
// (at::_fused_adamw_, CUDA and CPU), global-norm gradient clipping, and its state as named
// tensors for checkpoints. Decoupled weight decay as torch.optim.AdamW: p -= lr * wd * p.
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <string>
#include <vector>

#include "ember/model/weights.h"

namespace ember::dist {
class Collectives;  // dist/collectives.h
}  // namespace ember::dist

namespace ember::train {

using dist::Collectives;

struct AdamWOptions {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.01;
};

// What the trainer needs of an optimizer: the replicated AdamW below, or its ZeRO-1 variant
// (zero_adamw.h) whose state() is collective.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // grad_multiplier (a 0-d fp32 tensor, or undefined: 1): the gradients are read multiplied
  // by it (clip_and_scale's multiplier), inside the update: no pass of its own over them.
  virtual void step(double lr, const at::Tensor& grad_multiplier = {}) = 0;
  virtual void zero_grad() = 0;
  // The full state by name (every parameter's, on every rank).
  virtual model::NamedTensors state() const = 0;
  virtual void load_state(const std::map<std::string, at::Tensor>& tensors, const std::string& what) = 0;
  // Bytes of optimizer state this process holds.
  virtual int64_t local_state_bytes() const = 0;
};

// Whether ember's CUDA AdamW kernel is in this build (nvcc was found).
bool adamw_kernel_built();

class AdamW final : public Optimizer {
 public:
  // params: the trainable parameters with their names (kept by reference, updated in place).
  AdamW(model::NamedTensors params, AdamWOptions options);

  // One update at learning rate lr with the gradients in p.grad() (times grad_multiplier);
  // parameters without a gradient are skipped.
  void step(double lr, const at::Tensor& grad_multiplier = {}) override;
  // Sets every gradient to undefined.
  void zero_grad() override;

  // State as named tensors: "<param>.exp_avg", "<param>.exp_avg_sq", "<param>.step".
  model::NamedTensors state() const override;
  // Restores state(); throws Error kInvalidArgument naming `what` and the tensor on mismatch.
  void load_state(const std::map<std::string, at::Tensor>& tensors, const std::string& what) override;
  int64_t local_state_bytes() const override;

  const model::NamedTensors& params() const { return params_; }
  // CUDA parameters of float, bf16 or half go through ember's one-launch kernel (where it was
  // built: adamw_kernel_built()) unless this is set false; otherwise, and on CPU, PyTorch's fused
  // AdamW. The two compute the same update (the GPU tests compare them).
  void use_kernel(bool on) { use_kernel_ = on; }

 private:
  model::NamedTensors params_;
  AdamWOptions options_;
  bool use_kernel_ = true;
  std::vector<at::Tensor> exp_avg_, exp_avg_sq_, steps_;  // per parameter; steps_ float32 scalars
};

// Global L2 norm of the gradients (fp32); scales them by max_norm / norm when it exceeds
// max_norm (max_norm <= 0: no clipping). Returns the norm before clipping, as a 0-d tensor on
// the gradients' device: nothing waits for the GPU. With `scale` (a 0-d tensor), the gradients
// are first multiplied by it (in the same multiplication as the clipping), and the norm is
// theirs after that. With `sum_over_ranks` (ZeRO: each rank holds the gradients of its own
// parameters), the squared norms of every rank's gradients are summed (a collective).
at::Tensor clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm, const at::Tensor& scale = {},
                          Collectives* sum_over_ranks = nullptr);

// The sum of the squares of the defined gradients of `params` (float 0-d tensor, on their device;
// 0 on the CPU when there are none): ember's one-launch kernel per dtype on CUDA where built and
// `use_kernel`, PyTorch's foreach norms otherwise.
at::Tensor grad_squared_norm(const std::vector<at::Tensor>& params, bool use_kernel = true);

// clip_grad_norm's norm and multiplier (scale x the clipping coefficient, 0-d fp32 tensors on
// the gradients' device) without touching the gradients: Optimizer::step applies the
// multiplier while it reads them, which saves a read and a write of every gradient.
struct ClipAndScale {
  at::Tensor norm;        // the global norm after `scale`, before clipping
  at::Tensor multiplier;  // undefined when there is nothing to multiply (no scale, no clipping)
};
ClipAndScale clip_and_scale(const std::vector<at::Tensor>& params, double max_norm, const at::Tensor& scale = {},
                            Collectives* sum_over_ranks = nullptr);

}  // namespace ember::train
