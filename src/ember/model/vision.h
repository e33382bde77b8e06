// The vision tower: a SigLIP-like ViT (patch embedding, learned positions, pre-norm blocks with
// bidirectional attention within an image, final LayerNorm).
#pragma once

#include <torch/nn/modules/container/modulelist.h>

#include "ember/model/layers.h"
#include "ember/model/policy_shape.h"

namespace ember::model {

// The patch embedding: a convolution with stride = kernel = patch (weight [w, c, p, p], bias [w])
// computed as one matrix product over the images' patches, [n, P, w]. No per-shape convolution
// plans (cuDNN builds one for each new number of images, and that number changes from batch to
// batch when cameras are missing).
at::Tensor patch_embed(const at::Tensor& images, const at::Tensor& weight, const at::Tensor& bias, int patch);

class VitBlockImpl : public torch::nn::Module {
 public:
  VitBlockImpl(const VisionShape& shape);
  // x is [n, P, width]
  at::Tensor forward(const at::Tensor& x) const;
  LayerNorm norm1{nullptr}, norm2{nullptr};
  Dense qkv{nullptr}, proj{nullptr}, fc1{nullptr}, fc2{nullptr};
  int64_t heads;
};
TORCH_MODULE(VitBlock);

class VisionTowerImpl : public torch::nn::Module {
 public:
  explicit VisionTowerImpl(const VisionShape& shape);
  // images [n, 3, S, S] in [-1, 1]; returns [n, P, width]
  at::Tensor forward(const at::Tensor& images) const;
  VisionShape shape;
  at::Tensor patch_weight, patch_bias, positions;  // [w, 3, p, p], [w], [P, w]
  torch::nn::ModuleList blocks;
  LayerNorm final_norm{nullptr};
  // in training, each block's activations recomputed in the backward pass (activation_checkpoint.h)
  bool checkpoint_blocks = false;
};
TORCH_MODULE(VisionTower);

}  // namespace ember::model
