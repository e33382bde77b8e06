// The collective operations a training job needs over its ranks, as an interface: the trainer
// and the optimizer call it; process_group.h implements it on c10d (NCCL on CUDA, Gloo on CPU).
#pragma once

#include <ATen/ATen.h>

#include <vector>

namespace ember::dist {

// Collective operations over the ranks of a job (implemented on c10d by the dist layer). All
// calls are collective: every rank makes them in the same order.
class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual int local_rank() const = 0;
  virtual int local_world_size() const = 0;  // ranks on this host
  // Sums each tensor in place across ranks (gradients: bucketed by the implementation).
  virtual void all_reduce_sum(std::vector<at::Tensor>& tensors) = 0;
  virtual double all_reduce_sum(double value) = 0;
  // Copies root's tensors into every other rank's (same shapes and dtypes on every rank).
  virtual void broadcast(std::vector<at::Tensor>& tensors, int root) = 0;
  // Gradient sync overlapped with the backward pass. attach_gradients(params) once: the
  // implementation may hook each parameter's gradient accumulation. arm_gradient_sync() before
  // a step's last backward: from then on a bucket's all-reduce may start as soon as all its
  // gradients are accumulated. reduce_gradients(grads) after that backward (grads[i] is
  // params[i].grad(), all defined) completes the sum over ranks. The defaults sum after the
  // backward pass.
  virtual void attach_gradients(const std::vector<at::Tensor>& params) { (void)params; }
  // ZeRO: owners[i] is the rank that updates params[i] (after attach_gradients). An
  // implementation that returns true then sums each gradient onto its owner only (a reduce per
  // bucket, no bucket spanning two owners: ZeRO's reduce-scatter), and reduce_gradients leaves
  // the gradients of other ranks' parameters undefined. false: gradients stay all-reduced.
  virtual bool set_gradient_owners(const std::vector<int>& owners) {
    (void)owners;
    return false;
  }
  virtual void arm_gradient_sync() {}
  virtual void reduce_gradients(std::vector<at::Tensor>& grads) { all_reduce_sum(grads); }
  virtual void barrier() = 0;
};

}  // namespace ember::dist
