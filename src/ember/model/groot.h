// A GR00T-N1.5-style policy (NVIDIA Isaac-GR00T; LeRobot's `groot` policy): a frozen
// vision-language backbone, an adapter, and a diffusion transformer (DiT) action head trained by
// flow matching, with per-embodiment state and action MLPs. Shapes: groot_shape.h; the sources of
// each detail: docs/groot.md.
//
// One step, for n samples (PolicyInputs as collated for pi0.5, plus state and embodiment ids):
//   backbone  images [n_images, 3, S, S] -> ViT -> merge^2 patches per token -> LayerNorm + MLP
//             -> with the prompt's embeddings, the prefix [Tp, Dlm] -> the language model's first
//             layers (causal attention within each sample) -> RMSNorm. Frozen: without autograd,
//             in inference mode.
//   adapter   -> Dense (when widths differ) -> LayerNorm -> self-attention blocks: ctx [Tp, B]
//   DiT       per sample [state token ; future tokens ; H action tokens] [n, L, I]; even blocks
//             cross-attend to the sample's ctx rows, odd blocks self-attend; AdaLayerNorm on the
//             discretised flow time
//   heads     samples grouped by embodiment: each group runs its own MLPs on its own state and
//             action widths (no padding to a common width inside the heads)
// Flow matching as N1.5: t = (0.999 - Beta(1.5, 1)) / 0.999, x_t = (1 - t) noise + t actions,
// target actions - noise, the DiT's time trunc(1000 t) (N1.5's `.long()`); inference integrates t = 0 -> 1 in
// flow_steps Euler steps. Loss: squared error summed over the action mask's entries of each
// embodiment's width, divided by their count.
//
// Layouts (attention.h): varlen packs each sample's prefix (absent cameras cost nothing), the
// prefix attentions are variable-length calls over cu_prefix and the DiT's cross-attention a
// variable-length call with separate query (fixed L per sample) and key (each prefix) offsets;
// padded gives every sample max_cameras image slots and max_prompt prompt slots, masked. Both
// compute the same function of the real tokens.
#pragma once

#include <torch/nn/modules/container/modulelist.h>

#include <functional>

#include "ember/model/groot_shape.h"
#include "ember/model/layers.h"
#include "ember/model/pi05.h"
#include "ember/model/policy.h"
#include "ember/model/vision.h"

namespace ember::model {

// How one batch's prefix rows attend, made once per forward pass (on the batch's device).
struct GrootLayout {
  bool varlen = true;
  int64_t samples = 0;
  int64_t prefix_len = 0;  // padded: prefix rows per sample
  // varlen: prefix segments (the filler's last, where there is one), the samples' own (the
  // cross-attention's keys), and the DiT's fixed-length query segments
  at::Tensor cu_prefix, cu_keys, cu_steps;  // int32 [segments + 1]
  std::vector<int64_t> prefix_lens, key_lens, step_lens;
  int64_t max_prefix = 0, max_keys = 0, step_len = 0;
  // padded: key_mask [n, 1, 1, prefix_len] (true = a real token), causal_mask [n, 1, Lp, Lp]
  at::Tensor key_mask, causal_mask;
};
GrootLayout make_groot_layout(const PolicyInputs& in, const GrootShape& shape);

// Attention of q [rows, heads, d] to k, v [rows, kv_heads, d] within each sample's prefix rows.
at::Tensor groot_prefix_attention(const GrootLayout& layout, const at::Tensor& q, const at::Tensor& k,
                                  const at::Tensor& v, bool causal);

// One Qwen3 decoder layer (Eagle 2.5's language model): RMSNorm -> attention without biases,
// grouped keys and values, RMSNorm over each head's queries and keys before the rotary positions,
// causal within each sample's prefix -> residual; RMSNorm -> SiLU-gated MLP -> residual.
class GrootLmLayerImpl : public torch::nn::Module {
 public:
  explicit GrootLmLayerImpl(const TowerShape& shape);
  at::Tensor forward(const at::Tensor& x, const Rope& rope, const GrootLayout& layout) const;  // [Tp, width]
  TowerShape shape;
  RmsNorm norm1{nullptr}, norm2{nullptr}, q_norm{nullptr}, k_norm{nullptr};
  Dense q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr}, gate{nullptr}, up{nullptr}, down{nullptr};
};
TORCH_MODULE(GrootLmLayer);

// The frozen part: vision tower, pixel shuffle + projector, embedding, language model layers.
class GrootBackboneImpl : public torch::nn::Module {
 public:
  explicit GrootBackboneImpl(const GrootShape& shape);
  // [prefix rows, lm.width]: the language model's features at its last kept layer
  at::Tensor forward(const PolicyInputs& in, const GrootLayout& layout);
  GrootShape shape;
  VisionTower vision{nullptr};
  LayerNorm proj_norm{nullptr};
  Dense proj1{nullptr}, proj2{nullptr};
  at::Tensor embedding;  // [vocab, Dlm]
  torch::nn::ModuleList lm;
  RmsNorm lm_norm{nullptr};
};
TORCH_MODULE(GrootBackbone);

// A diffusers BasicTransformerBlock as N1.5 uses it: norm1 (LayerNorm, or AdaLayerNorm on the
// time), attention with biases (keys from `kdim`-wide context rows, or self), norm3 + GELU(tanh)
// feed-forward of 4x width. Dropout p (training only; N1.5: 0.2 with final_dropout) where
// diffusers puts it: twice on the attention's output (Attention's to_out and the block's
// final_dropout), after the feed-forward's activation and after its output.
class GrootBlockImpl : public torch::nn::Module {
 public:
  GrootBlockImpl(int dim, int heads, int head_dim, int kdim, bool adaptive);
  using Attend = std::function<at::Tensor(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v)>;
  // x [..., dim]; ctx [rows, kdim] or undefined (self-attention); temb [n, dim] when adaptive
  // (x then [n, L, dim]). attend gets q [x rows, heads, d], k and v [key rows, heads, d].
  at::Tensor forward(const at::Tensor& x, const at::Tensor& ctx, const at::Tensor& temb, const Attend& attend,
                     double dropout = 0) const;
  int heads, head_dim;
  bool adaptive;
  LayerNorm norm1{nullptr}, norm3{nullptr};  // affine (not adaptive)
  Dense ada{nullptr};                        // adaptive: (scale, shift) = ada(silu(temb))
  Dense q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr}, ff1{nullptr}, ff2{nullptr};
};
TORCH_MODULE(GrootBlock);

// One embodiment's MLPs (Isaac-GR00T's CategorySpecificMLP / MultiEmbodimentActionEncoder, one
// category's weights).
class EmbodimentHeadImpl : public torch::nn::Module {
 public:
  EmbodimentHeadImpl(const GrootShape& shape, const GrootEmbodiment& e, bool torch_init = false);
  at::Tensor encode_state(const at::Tensor& state) const;                        // [m, s] -> [m, 1, I]
  at::Tensor encode_action(const at::Tensor& x, const at::Tensor& tbucket) const;  // [m, H, a], [m] -> [m, H, I]
  at::Tensor decode(const at::Tensor& y) const;                                    // [m, H, out] -> [m, H, a]
  GrootEmbodiment dims;
  Dense state1{nullptr}, state2{nullptr}, act1{nullptr}, act2{nullptr}, act3{nullptr}, dec1{nullptr}, dec2{nullptr};
};
TORCH_MODULE(EmbodimentHead);

class GrootPolicyImpl : public PolicyModuleImpl {
 public:
  // tune_backbone false: the backbone's parameters do not require gradients and its forward
  // runs in inference mode.
  // torch_head_init: the embodiment heads' linear layers start as torch.nn.Linear's default
  // (uniform +-1/sqrt(fan_in)) instead of N1.5's N(0, 0.02^2): N1.5's are made to be loaded
  // from pretrained weights; from scratch their small gain slows learning (docs/groot.md).
  GrootPolicyImpl(const GrootShape& shape, bool tune_backbone = false, bool torch_head_init = false);

  // N1.5's time: (s - Beta(1.5, 1)) / s with s = 0.999 (Beta(1.5, 1) is u^(1/1.5))
  at::Tensor flow_time(const at::Tensor& u) const override { return (0.999 - at::pow(u, 1.0 / 1.5)) / 0.999; }
  LossOut loss(const PolicyInputs& in, std::optional<at::Tensor> noise = std::nullopt,
               std::optional<at::Tensor> time = std::nullopt) override;
  at::Tensor sample_actions(const PolicyInputs& in, std::optional<at::Tensor> noise = std::nullopt) override;
  double work_flops(const StepWork& work) const override {
    return groot_train_flops(shape, work.images, work.prefix_lens, work.filler_tokens, tune_backbone);
  }
  bool frozen_forward(const PolicyInputs& in) override;
  // One embodiment: the forward reads nothing from the host that changes per batch (its groups
  // gather nothing, the layout's offsets are made on the device), so the engine can capture it.
  // Several: each batch's grouping is host-made indices, which a replayed graph would hold stale.
  bool graph_safe() const override { return shape.embodiments.size() == 1; }
  std::string type() const override { return "groot"; }
  const PolicyShape& base_shape() const override { return shape.base; }

  // sampling hooks (policy.h): the prefix is the adapter's context (backbone, vlln, vl blocks),
  // the embodiment groups and the state tokens; the velocity is N1.5's (t = 0 noise) turned into
  // pi0's convention: v = -v_N1.5 at N1.5 time 1 - t; the features are each sample's context rows'
  // mean (varlen layout). Dropout is off in the hooks (it would corrupt RL's log-probabilities).
  std::shared_ptr<const PrefixState> encode_prefix(const PolicyInputs& in) override;
  // the backbone's context shared, the state tokens (the action head's state encoder) computed again
  std::shared_ptr<const PrefixState> refresh_prefix(const PolicyInputs& in, std::shared_ptr<const PrefixState> frozen) override;
  at::Tensor prefix_velocity(const PolicyInputs& in, const PrefixState& prefix, const at::Tensor& x_t,
                             const at::Tensor& t) override;
  // hidden: the DiT's output [m*n, H, dit_output] (after its final adaptive norm and out2, before
  // the embodiment's action decoder), RL's flow_noise head reads it
  at::Tensor prefix_velocity_hidden(const PolicyInputs& in, const PrefixState& prefix, const at::Tensor& x_t, const at::Tensor& t,
                                    at::Tensor& hidden) override;
  int64_t expert_width() const override { return shape.dit_output; }
  at::Tensor prefix_features(const PolicyInputs& in, const PrefixState& prefix) override;
  int64_t prefix_feature_dim() const override { return shape.backbone_dim; }
  // the backbone and the adapter (backbone_proj, vlln, vl blocks): what the DiT cross-attends to
  bool is_prefix_parameter(const std::string& name) const override;
  void annotate(nlohmann::json& policy_json) const override { policy_json["groot"]["tune_backbone"] = tune_backbone; }

  // The adapter's tokens [prefix rows, backbone_dim]; dropout as GrootBlock's.
  at::Tensor context(const PolicyInputs& in, const GrootLayout& layout, double dropout = 0);

  GrootShape shape;
  bool tune_backbone;
  GrootBackbone backbone{nullptr};
  Dense backbone_proj{nullptr};  // only when lm.width != backbone_dim
  LayerNorm vlln{nullptr};
  torch::nn::ModuleList vl_blocks, dit_blocks, heads;
  Dense time1{nullptr}, time2{nullptr}, out1{nullptr}, out2{nullptr};
  at::Tensor future_tokens;  // [F, I]
  at::Tensor positions;      // [max_seq_len, I]: added to the action tokens

 private:
  struct Groups;
  struct Prefix;
  // the groot prefix behind a hook's PrefixState (kInternal for another type's)
  static const Prefix& as_prefix(const PrefixState& prefix);
  Groups make_groups(const PolicyInputs& in) const;
  at::Tensor state_tokens(const PolicyInputs& in, const Groups& groups);  // [n, 1, I]
  // the velocity at x_t [n, H, max_action_dim], buckets [n]: one [m_g, H, a_g] per embodiment group
  // (hidden: when given, the DiT's output [n, H, dit_output] in batch order)
  std::vector<at::Tensor> velocity(const PolicyInputs& in, const GrootLayout& layout, const at::Tensor& ctx, const Groups& groups,
                      const at::Tensor& state_tokens, const at::Tensor& x_t, const at::Tensor& tbucket, double dropout,
                      at::Tensor* hidden = nullptr);
  // prefix_velocity's work; hidden: when given, prefix_velocity_hidden's
  at::Tensor velocity_over_prefix(const PolicyInputs& in, const PrefixState& prefix, const at::Tensor& x_t, const at::Tensor& t,
                                  at::Tensor* hidden);
};
TORCH_MODULE(GrootPolicy);

// Whether parameter `name` belongs to the backbone (frozen unless tune_backbone).
bool is_backbone_param(const std::string& name);

// policy.json of a groot policy: {"type": "groot", ...its base as shape_to_json..., "groot": {...}};
// "groot" also holds the training-only "dropout" (read back: a resumed run keeps it; absent in
// older files: 0.2) and, written by annotate(), "tune_backbone" (informational: a resumed run
// takes --policy.tune_backbone from its flags). from_json throws kCorruption naming `what`.
nlohmann::json groot_shape_to_json(const GrootShape& shape);
GrootShape groot_shape_from_json(const nlohmann::json& j, const std::string& what);

class PolicyArch;
// groot's architecture of `shape` (policy_type.h), for code that holds a shape of its own (tests).
std::shared_ptr<const PolicyArch> groot_arch(const GrootShape& shape);


}  // namespace ember::model
