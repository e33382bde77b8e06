// Activation checkpointing (lerobot's --policy.gradient_checkpointing; PyTorch's reentrant
// torch.utils.checkpoint): a block's forward runs without keeping its intermediate activations,
// and its backward runs the block again, with autograd on, to get them. The block's inputs are
// all that stays in memory between the two passes; the block's work is paid twice.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <vector>

namespace ember::model {

// The block: tensors in, tensors out (fresh tensors, none of them an input or a view of one). It
// must compute the same in both passes: no random numbers, no state it changes.
using CheckpointedBlock = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;

// Runs block(inputs) and returns its outputs. When grad mode is on and an input or a parameter
// the block reads requires gradients, the block's activations are not kept: the backward pass
// reruns block on the saved inputs (under the autocast state the forward saw) and back-propagates
// through the rerun, so parameters the block reads get their gradients then. With grad mode off
// this is block(inputs), and so it is when no input requires gradients (then nothing is saved).
// Inputs must be defined.
std::vector<at::Tensor> checkpointed(const CheckpointedBlock& block, const std::vector<at::Tensor>& inputs);

}  // namespace ember::model
