// bf16 copies of the matmul weights, made once per step, instead of autocast's casts per op.
//
// Under bf16 autocast every matmul casts its fp32 weight to bf16 (a kernel and an autograd node
// per weight per forward pass) and casts the weight's gradient back to fp32 (a kernel per
// weight in the backward pass): for pi05, ~800 casts each way per step; for `small`, ~350,
// which its host pays for in launches. Bf16Weights keeps the given parameters as views of one
// flat fp32 buffer. cast() converts the buffer into one flat bf16 buffer in one kernel and lets
// the parameters hold bf16 views of it while forward and backward run: autocast finds them in
// bf16 and casts nothing. restore() gathers their bf16 gradients into one flat buffer,
// converts it to fp32 in one kernel, gives the parameters their fp32 data back and, as
// gradients, fp32 views of one flat buffer, for clipping and the optimizer.
//
// The values are those autocast computes (the same bf16 weights and bf16 gradients), except
// where gradients add up: several backward passes of one step (micro-batches) accumulate in
// bf16, and a data-parallel all-reduce that runs while the parameters hold bf16 sums in bf16.
#pragma once

#include <ATen/ATen.h>

#include <vector>

namespace ember::train {

class Bf16Weights {
 public:
  // params: fp32, on one device, requiring gradients; their data moves into the flat buffer
  // (the tensors stay the same objects: modules and optimizers that hold them are unaffected).
  explicit Bf16Weights(std::vector<at::Tensor> params);

  // Before the step's first forward pass: the bf16 copy of the current weights, held by the
  // parameters; their gradients are cleared.
  void cast();
  // After the step's last backward pass (and the gradients' all-reduce): the parameters hold
  // fp32 again, and their gradients are fp32 (a parameter that got none gets zeros).
  void restore();

  bool holds_bf16() const { return bf16_; }
  int64_t numel() const { return numel_; }

 private:
  std::vector<at::Tensor> params_;
  std::vector<at::Tensor> fp32_views_, bf16_views_, grad_views_;
  at::Tensor fp32_, bf16_buffer_, grad16_, grad32_;
  int64_t numel_ = 0;
  bool bf16_ = false;
};

}  // namespace ember::train
