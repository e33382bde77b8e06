#include "ember/model/vision.h"

#include "ember/model/activation_checkpoint.h"
#include "ember/model/attention.h"

namespace ember::model {

VitBlockImpl::VitBlockImpl(const VisionShape& s) : heads(s.heads) {
  norm1 = register_module("norm1", LayerNorm(s.width));
  qkv = register_module("qkv", Dense(s.width, 3 * s.width));
  proj = register_module("proj", Dense(s.width, s.width));
  norm2 = register_module("norm2", LayerNorm(s.width));
  fc1 = register_module("fc1", Dense(s.width, s.mlp));
  fc2 = register_module("fc2", Dense(s.mlp, s.width));
}

at::Tensor VitBlockImpl::forward(const at::Tensor& x) const {
  const int64_t n = x.size(0), p = x.size(1), w = x.size(2), d = w / heads;
  // unbind, not indexing: its backward writes the three gradients into one [n, P, 3, h, d] tensor
  // in one kernel (indexing's would zero-fill and add three tensors of that size)
  auto parts = qkv->forward(norm1->forward(x)).view({n, p, 3, heads, d}).unbind(2);  // 3 x [n, P, h, d]
  auto a = image_attention(parts[0].transpose(1, 2), parts[1].transpose(1, 2), parts[2].transpose(1, 2))
               .transpose(1, 2).reshape({n, p, w});
  auto h = x + proj->forward(a);
  return h + fc2->forward(at::gelu(fc1->forward(norm2->forward(h)), "tanh"));
}

VisionTowerImpl::VisionTowerImpl(const VisionShape& s) : shape(s) {
  patch_weight = register_parameter("patch_weight", at::randn({s.width, 3, s.patch, s.patch}) * 0.02);
  patch_bias = register_parameter("patch_bias", at::zeros({s.width}));
  positions = register_parameter("position_embed", at::randn({s.tokens(), s.width}) * 0.02);
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int i = 0; i < s.layers; ++i) blocks->push_back(VitBlock(s));
  final_norm = register_module("final_norm", LayerNorm(s.width));
}

at::Tensor patch_embed(const at::Tensor& images, const at::Tensor& weight, const at::Tensor& bias, int patch) {
  const int64_t n = images.size(0), c = images.size(1), g = images.size(2) / patch, w = weight.size(0);
  // [n, c, g, p, g, p] -> [n, g, g, c, p, p]: one row per patch, in the weight's (c, p, p) order
  auto rows = images.reshape({n, c, g, patch, g, patch}).permute({0, 2, 4, 1, 3, 5}).reshape({n * g * g, c * patch * patch});
  return at::linear(rows, weight.view({w, -1}), bias).view({n, g * g, w});
}

at::Tensor VisionTowerImpl::forward(const at::Tensor& images) const {
  auto e = patch_embed(images, patch_weight, patch_bias, shape.patch);  // [n, P, w]
  // the residual stream keeps the patch embedding's dtype (bf16 under autocast), as the language
  // model's does; the float32 positions would make it float32
  auto x = (e + positions).to(e.scalar_type());
  for (const auto& block : *blocks) {
    const auto* b = block->as<VitBlockImpl>();
    if (checkpoint_blocks)
      x = checkpointed([b](const std::vector<at::Tensor>& in) { return std::vector<at::Tensor>{b->forward(in[0])}; }, {x})[0];
    else
      x = b->forward(x);
  }
  return final_norm->forward(x);
}

}  // namespace ember::model
