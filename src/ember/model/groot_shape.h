// The shapes of a GR00T-N1.5-style policy and its named presets. Pure data, no libtorch.
//
//   backbone  base.vision: a SigLIP-like ViT per present camera, its patches merged base.vision.merge^2
//             to one token (Eagle's pixel shuffle; N1.5 has none: merge 1) and projected to
//             base.lm.width by Eagle's mlp1 (connector_layers: one Linear, N1.5's, or LayerNorm +
//             Linear + GELU + Linear); base.lm: the language model's first base.lm.layers
//             layers over the prefix [image tokens ; prompt tokens] (N1.5 keeps Qwen3's first
//             select_layer = 12 and takes that layer's output). Frozen by default.
//   adapter   to backbone_dim (a linear map when the widths differ; N1.5's eagle_linear, the identity
//             there), LayerNorm (vlln), vl_layers self-attention blocks over the prefix (vl_self_attention)
//   DiT       dit_layers blocks over [state token ; future_tokens ; H action tokens], even blocks
//             cross-attending to the adapter's tokens, odd ones self-attending; adaptive LayerNorm
//             on the flow time
//   heads     per embodiment: a state encoder, an action encoder and an action decoder (MLPs)
//
// Sizes from Isaac-GR00T's N1.5 config as LeRobot's groot policy builds it (docs/groot.md cites each).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ember/model/policy_shape.h"

namespace ember::model {

struct GrootEmbodiment {
  int state_dim = 64;   // N1.5's max_state_dim
  int action_dim = 32;  // N1.5's max_action_dim
};

struct GrootShape {
  PolicyShape base;            // vision, lm, vocab, horizon, max_action_dim, max_cameras, max_prompt, flow_steps
  int backbone_dim = 2048;     // adapter output, the DiT's cross-attention input (backbone_embedding_dim)
  int vl_layers = 4, vl_heads = 32, vl_head_dim = 64;       // vl_self_attention_cfg
  int dit_layers = 16, dit_heads = 32, dit_head_dim = 48;   // diffusion_model_cfg (inner 1536 = input_embedding_dim)
  int dit_output = 1024;       // diffusion_model_cfg.output_dim
  int hidden = 1024;           // hidden_size: the state encoder's and action decoder's hidden width
  int future_tokens = 32;      // num_target_vision_tokens
  int max_seq_len = 1024;      // rows of the action tokens' position embedding
  int timestep_buckets = 1000; // num_timestep_buckets: the flow time is discretised to these
  // Eagle's connector from the (merged) patches to the language model: 2 = LayerNorm, Linear,
  // GELU, Linear (mlp_connector_layers 2); 1 = one Linear (N1.5's Eagle: mlp_connector_layers 1,
  // no pixel shuffle)
  int connector_layers = 2;
  double rope_base = 1e6;      // Qwen3's rope_theta
  // dropout of the vl self-attention and DiT blocks while training (their configs' dropout with
  // final_dropout); a training setting, the same for every preset, recorded in policy.json
  double dropout = 0.2;
  std::vector<GrootEmbodiment> embodiments;  // up to 32 (max_num_embodiments)
  // N1.5's padded widths (a GR00T-N1.5 directory's heads, groot_n15.h): a dataset's narrower
  // states and actions are zero-padded to embodiment 0's widths instead of refitting its heads
  bool padded_heads = false;

  int inner() const { return dit_heads * dit_head_dim; }
  int step_tokens() const { return 1 + future_tokens + base.horizon; }  // DiT tokens per sample
};

constexpr int kMaxEmbodiments = 32;

// "tiny" (CPU tests, seconds), "small", "n15" (GR00T-N1.5's shapes). Throws Error
// kInvalidArgument naming the preset otherwise.
GrootShape groot_preset_shape(std::string_view preset);

// Checks the shapes are usable; throws kInvalidArgument naming the field.
void validate(const GrootShape& shape);

struct GrootParameterCount {
  int64_t backbone = 0;  // vision tower, projector, embedding, language model layers (frozen by default)
  int64_t head = 0;      // adapter, DiT, embodiment heads, future tokens, position embedding
  int64_t total() const { return backbone + head; }
};
GrootParameterCount parameter_count(const GrootShape& shape);

// Training FLOPs of a step (model/flops.h's counting: 2 per multiply-add, the backward twice the
// forward): `images` through the vision tower, one prefix of each length in prefix_lens (a
// sample's, or a padded row's), filler_tokens in a segment of their own. A frozen backbone's
// forward is counted once (no backward); with tune_backbone, three times.
double groot_train_flops(const GrootShape& shape, int64_t images, const std::vector<int64_t>& prefix_lens,
                         int64_t filler_tokens, bool tune_backbone);

}  // namespace ember::model
