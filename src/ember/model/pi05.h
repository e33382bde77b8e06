// The pi0.5-style policy: vision tower + Gemma-like language backbone over the prefix, and an
// action expert over the suffix, sharing one attention per layer; trained by flow matching.
//
// Layer l of the joint model:
//   prefix x_p [Tp, Dlm]:  q,k,v = lm_l(RMSNorm(x_p)), rotary by prefix positions
//   suffix x_s [n, H, De]: q,k,v = expert_l(AdaNorm(x_s, time)), rotary by suffix positions
//   attention (attention.h): prefix -> prefix; suffix -> [prefix ; suffix], per sample
//   each stream: residual + o-projection, then a gated MLP (adaptive norm + gate in the expert)
// The prefix's output after the last layer is never used, so that layer has no prefix queries,
// prefix attention, o-projection or MLP at all (only its keys and values feed the suffix).
//
// Flow matching (pi0): x_t = t * noise + (1 - t) * actions, target u = noise - actions,
// t ~ Beta(1.5, 1) * 0.999 + 0.001. Loss: mean squared error over the entries of action_mask.
#pragma once

#include <torch/nn/modules/container/modulelist.h>

#include <optional>

#include "ember/model/layers.h"
#include "ember/model/policy.h"
#include "ember/model/policy_inputs.h"
#include "ember/model/vision.h"

namespace ember::model {

// One tower's half of a joint layer (attention projections, norms, MLP).
class TowerLayerImpl : public torch::nn::Module {
 public:
  // cond_width 0: plain RMSNorm. keys_only: only norm1, k and v (the language model's last
  // layer, whose prefix output nothing reads).
  // linear: how its projections and MLP compute (the layer factory's options).
  TowerLayerImpl(const TowerShape& shape, int64_t cond_width, bool keys_only = false, const LinearOptions& linear = {});
  TowerShape shape;
  Dense q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};
  RmsNorm norm1{nullptr}, norm2{nullptr};
  AdaNorm ada1{nullptr}, ada2{nullptr};
  GatedMlp mlp{nullptr};
};
TORCH_MODULE(TowerLayer);

// Keys and values of the prefix, per layer, for inference: [Tp, kv_heads, head_dim] each.
struct PrefixCache : PrefixState {
  std::vector<at::Tensor> keys, values;
  int64_t bytes() const override;
};

// How the policy computes (not what it is: checkpoints are the same whatever these say).
struct PolicyOptions {
  // every linear layer of the language backbone whose sizes fit (fp8_fits) in block-wise FP8;
  // the vision tower, attention, norms, embeddings, the action expert and the action/time
  // projections stay bf16 (the expert's layers, 800 tokens at batch 16, ran 0.38-0.49x of bf16
  // in FP8: `ember bench fp8_linear`, H200, 2026-12-01)
  bool fp8 = false;
  // --policy.gradient_checkpointing (lerobot's flag): in training, each joint layer and each
  // vision block keeps only its inputs and recomputes its activations in the backward pass
  // (activation_checkpoint.h): less memory, about one more forward pass of work
  bool gradient_checkpointing = false;
};

class Pi05PolicyImpl : public PolicyModuleImpl {
 public:
  explicit Pi05PolicyImpl(const PolicyShape& shape, const PolicyOptions& options = {});

  // Flow-matching loss. noise [n, H, A] and time [n] are drawn (from the current generator)
  // when not given; tests pass them to compare layouts.
  LossOut loss(const PolicyInputs& in, std::optional<at::Tensor> noise = std::nullopt,
               std::optional<at::Tensor> time = std::nullopt) override;

  // Integrates the flow from noise (drawn when not given) with shape.flow_steps Euler steps,
  // the prefix computed once. Returns [n, H, max_action_dim] normalised actions.
  at::Tensor sample_actions(const PolicyInputs& in, std::optional<at::Tensor> noise = std::nullopt) override;
  double work_flops(const StepWork& work) const override { return train_flops(work, shape); }
  // pi0's Beta(1.5, 1) * 0.999 + 0.001 (Beta(1.5, 1) is u^(1/1.5))
  at::Tensor flow_time(const at::Tensor& u) const override { return at::pow(u, 1.0 / 1.5) * 0.999 + 0.001; }
  std::string type() const override { return "pi05"; }
  const PolicyShape& base_shape() const override { return shape; }

  // sampling hooks (policy.h): the prefix cache; the velocity of pi0's flow itself; the mean of
  // the last layer's prefix values over each sample's tokens (varlen layout)
  std::shared_ptr<const PrefixState> encode_prefix(const PolicyInputs& in) override;
  // the prefix cache is the prefix parameters' alone: shared as it is
  std::shared_ptr<const PrefixState> refresh_prefix(const PolicyInputs&, std::shared_ptr<const PrefixState> frozen) override { return frozen; }
  at::Tensor prefix_velocity(const PolicyInputs& in, const PrefixState& prefix, const at::Tensor& x_t,
                             const at::Tensor& t) override;
  at::Tensor prefix_velocity_hidden(const PolicyInputs& in, const PrefixState& prefix, const at::Tensor& x_t,
                                    const at::Tensor& t, at::Tensor& hidden) override;
  int64_t expert_width() const override { return shape.expert.width; }
  at::Tensor prefix_features(const PolicyInputs& in, const PrefixState& prefix) override;
  int64_t prefix_feature_dim() const override { return int64_t(shape.lm.kv_heads) * shape.lm.head_dim; }
  bool is_prefix_parameter(const std::string& name) const override;
  std::vector<std::string> fp8_layer_names() override;
  // the FP8 kernels have not been checked under capture
  bool graph_safe() const override { return !options.fp8; }
  bool to_param_dtype(at::ScalarType dtype) override;

  // The prefix's keys and values per layer, computed once for several velocity_cached() calls
  // (RL's stochastic denoising chain, rl/flow_noise.h). They carry gradients when grad mode is
  // on (the learner trains through the prefix), and not otherwise.
  PrefixCache prefix_cache(const PolicyInputs& in);
  // Velocity [n, H, A] of noisy actions x_t [n, H, A] at times t [n] over a prefix_cache(in).
  // hidden: when given, set to the expert's last hidden states [n, H, De] (prefix_velocity_hidden)
  at::Tensor velocity_cached(const PolicyInputs& in, const PrefixCache& cache, const at::Tensor& x_t, const at::Tensor& t,
                             at::Tensor* hidden = nullptr) {
    return velocity(in, at::Tensor(), x_t, t, &cache, nullptr, hidden);
  }

  // Prefix embeddings [Tp, Dlm] (image tokens projected, text embedded and scaled by sqrt(Dlm)).
  at::Tensor embed_prefix(const PolicyInputs& in);

  // Velocity [n, H, A] of noisy actions x_t [n, H, A] at times t [n], the prefix recomputed.
  at::Tensor velocity(const PolicyInputs& in, const at::Tensor& x_t, const at::Tensor& t) {
    return velocity(in, embed_prefix(in), x_t, t, nullptr, nullptr);
  }

  PolicyShape shape;
  PolicyOptions options;
  VisionTower vision{nullptr};
  Dense projector{nullptr};
  at::Tensor embedding;  // [vocab, Dlm]
  torch::nn::ModuleList lm_layers, expert_layers;
  AdaNorm expert_final_norm{nullptr};
  Dense action_in{nullptr}, action_out{nullptr}, time_in{nullptr}, time_out{nullptr};

 private:
  // Runs the joint layers. x_prefix [Tp, Dlm] or undefined (then `cache` supplies the prefix
  // keys/values); x_suffix [n, H, De]; cond [n, De]. Fills `fill` with the prefix keys/values
  // when given. Returns the suffix output [n, H, De] after the final norm.
  at::Tensor run_layers(const PolicyInputs& in, at::Tensor x_prefix, at::Tensor x_suffix, const at::Tensor& cond,
                        const PrefixCache* cache, PrefixCache* fill);
  struct Streams {
    at::Tensor prefix, suffix;  // [Tp, Dlm] (undefined after the last layer), [n, H, De]
  };
  // Joint layer l on the prefix stream xp (undefined: `cache` supplies its keys/values) and the
  // suffix stream xs [n, H, De] under condition cond [n, De].
  Streams joint_layer(int64_t l, const AttentionPlan& plan, const Rope& rope_p, const Rope& rope_s, at::Tensor xp,
                      at::Tensor xs, const at::Tensor& cond, const PrefixCache* cache, PrefixCache* fill);
  // velocity [n, H, A] for noisy actions x_t [n, H, A] at times t [n]; hidden: when given, the
  // expert's output [n, H, De] before action_out
  at::Tensor velocity(const PolicyInputs& in, const at::Tensor& prefix, const at::Tensor& x_t, const at::Tensor& t,
                      const PrefixCache* cache, PrefixCache* fill, at::Tensor* hidden = nullptr);
};
TORCH_MODULE(Pi05Policy);

// Whether parameter `name` stays float32 when the policy's parameters are bf16: the norms
// (the action expert's adaptive norms with their modulation), the vision tower's patch and
// position embeddings. LeRobot's pi05 with dtype=bfloat16 keeps the same ones (its
// to_bfloat16_for_selected_params).
bool keeps_fp32(const std::string& name);

// Whether parameter `name` computes the prefix (the vision tower, projector, token embedding and
// language-model layers, whose keys and values the action expert reads), not the action expert
// (its layers, final norm, action and time projections). `ember rl --rl.train expert` freezes
// these.
bool is_prefix_parameter(const std::string& name);

// The policy's linear layers on the FP8 path, by name ("lm.0.q", ...).
std::vector<std::string> fp8_layer_names(Pi05Policy& policy);

class PolicyArch;
// pi0.5's architecture of `shape` (policy_type.h), for code that holds a shape of its own (tests).
std::shared_ptr<const PolicyArch> pi05_arch(const PolicyShape& shape);

// Converts every parameter but those keeps_fp32() names to `dtype` (kBFloat16: LeRobot's
// dtype=bfloat16; kFloat: all back to float32). Their gradients and AdamW moments follow.
void set_param_dtype(Pi05Policy& policy, at::ScalarType dtype);

}  // namespace ember::model
