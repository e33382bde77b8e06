#include "ember/model/activation_checkpoint.h"

#include <ATen/autocast_mode.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <utility>

namespace ember::model {
namespace {

// autocast as the forward saw it, for the rerun (the backward may run on another thread)
struct AutocastState {
  bool cuda = false, cpu = false;
  at::ScalarType cuda_dtype = at::kBFloat16, cpu_dtype = at::kBFloat16;

  static AutocastState current() {
    return {at::autocast::is_autocast_enabled(at::kCUDA), at::autocast::is_autocast_enabled(at::kCPU),
            at::autocast::get_autocast_dtype(at::kCUDA), at::autocast::get_autocast_dtype(at::kCPU)};
  }
  void apply() const {
    at::autocast::set_autocast_enabled(at::kCUDA, cuda);
    at::autocast::set_autocast_dtype(at::kCUDA, cuda_dtype);
    at::autocast::set_autocast_enabled(at::kCPU, cpu);
    at::autocast::set_autocast_dtype(at::kCPU, cpu_dtype);
  }
};

// the block, carried in the autograd context until the backward pass
struct BlockHolder : torch::CustomClassHolder {
  CheckpointedBlock block;
  AutocastState autocast;
};

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

struct CheckpointFunction : torch::autograd::Function<CheckpointFunction> {
  // runs with grad mode off (the Function API's forward): nothing inside is recorded
  static tensor_list forward(AutogradContext* ctx, c10::intrusive_ptr<BlockHolder> holder, at::TensorList inputs) {
    ctx->save_for_backward(inputs.vec());
    auto outputs = holder->block(inputs.vec());
    ctx->saved_data["block"] = c10::IValue::make_capsule(std::move(holder));
    return outputs;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    auto holder = c10::static_intrusive_pointer_cast<BlockHolder>(ctx->saved_data["block"].toCapsule());
    auto saved = ctx->get_saved_variables();
    std::vector<at::Tensor> inputs;
    for (size_t i = 0; i < saved.size(); ++i)
      inputs.push_back(saved[i].detach().requires_grad_(ctx->needs_input_grad(i)));  // edges: the tensors only
    // the rerun, recorded this time
    std::vector<at::Tensor> outputs;
    {
      const AutocastState before = AutocastState::current();
      holder->autocast.apply();
      at::AutoGradMode grad_on(true);
      outputs = holder->block(inputs);
      before.apply();
      if (!before.cuda && !before.cpu && (holder->autocast.cuda || holder->autocast.cpu)) at::autocast::clear_cache();
    }
    tensor_list roots, root_grads;
    for (size_t i = 0; i < outputs.size() && i < grads.size(); ++i)
      if (outputs[i].requires_grad() && grads[i].defined()) {
        roots.push_back(outputs[i]);
        root_grads.push_back(grads[i]);
      }
    // parameters the block read accumulate their gradients here; the inputs' come back below
    if (!roots.empty()) torch::autograd::backward(roots, root_grads);
    tensor_list result{at::Tensor()};  // the holder's
    for (auto& x : inputs) result.push_back(x.requires_grad() ? x.grad() : at::Tensor());
    return result;
  }
};

}  // namespace

std::vector<at::Tensor> checkpointed(const CheckpointedBlock& block, const std::vector<at::Tensor>& inputs) {
  bool any_grad = false;
  for (const auto& x : inputs) any_grad = any_grad || x.requires_grad();
  // without an input that requires gradients the Function's outputs would not either (and the
  // block's parameters would get none): then the block runs as is, its activations kept
  if (!at::GradMode::is_enabled() || !any_grad) return block(inputs);
  auto holder = c10::make_intrusive<BlockHolder>();
  holder->block = block;
  holder->autocast = AutocastState::current();
  return CheckpointFunction::apply(std::move(holder), at::TensorList(inputs));
}

}  // namespace ember::model
