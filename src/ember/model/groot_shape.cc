#include "ember/model/groot_shape.h"

#include "ember/core/error.h"

namespace ember::model {

GrootShape groot_preset_shape(std::string_view preset) {
  GrootShape s;
  s.base.preset = std::string(preset);
  s.base.horizon = 16;     // action_horizon
  s.base.flow_steps = 4;   // num_inference_timesteps
  s.base.max_action_dim = 32;
  if (preset == "n15") {
    // N1.5's Eagle 2.5: SigLIP at 224 px (16 x 16 patches of 14 px), no pixel shuffle (256 tokens
    // per image), one Linear to the language model (its eagle config: use_pixel_shuffle false,
    // mlp_connector_layers 1)
    s.base.vision = {224, 14, 1152, 27, 16, 4304, 1};
    s.connector_layers = 1;
    // Qwen3-1.7B's layers (hidden 2048, 16 query / 8 key-value heads of 128, MLP 6144), the first 12 kept
    s.base.lm = {2048, 12, 16, 8, 128, 6144};
    s.base.vocab = 151680;  // Eagle 2.5's Qwen3 (its text_config: Qwen3-1.7B's tokenizer and Eagle's special tokens)
    s.embodiments.assign(kMaxEmbodiments, GrootEmbodiment{64, 32});
    return s;
  }
  if (preset == "small") {
    // Eagle's pixel-shuffle layout: 2 x 2 patches merged into one prefix token, LayerNorm + MLP
    // to the language model (connector_layers 2). N1.5's own layout (every patch a token, one
    // Linear; the n15 preset's) made small worse on ember10: 50.2 % against 67.6 %
    // (bench/results/groot_small_layout_ember10_h200_2026-12-05.md)
    s.base.vision = {224, 14, 384, 6, 6, 1536, 2};
    s.connector_layers = 2;
    s.base.lm = {768, 6, 12, 4, 64, 3072};
    s.base.vocab = 2048;
    s.backbone_dim = 768;
    s.vl_layers = 2, s.vl_heads = 12, s.vl_head_dim = 64;
    s.dit_layers = 8, s.dit_heads = 12, s.dit_head_dim = 64;
    s.dit_output = 512, s.hidden = 512, s.future_tokens = 16, s.max_seq_len = 64;
    s.embodiments.assign(1, GrootEmbodiment{32, 32});
    return s;
  }
  if (preset == "tiny") {
    s.base.vision = {32, 8, 64, 2, 2, 128, 2};
    s.base.lm = {64, 2, 2, 1, 32, 128};
    s.base.vocab = 512;
    s.base.max_prompt = 64;
    s.backbone_dim = 48;
    s.vl_layers = 1, s.vl_heads = 2, s.vl_head_dim = 24;
    s.dit_layers = 2, s.dit_heads = 2, s.dit_head_dim = 16;
    s.dit_output = 32, s.hidden = 32, s.future_tokens = 4, s.max_seq_len = 64;
    s.rope_base = 10000;
    // three robots with different state and action widths (tests mix them in one batch)
    s.embodiments = {{8, 7}, {5, 4}, {12, 10}};
    return s;
  }
  throw Error(ErrorKind::kInvalidArgument,
              "unknown groot preset '" + std::string(preset) + "' (expected tiny, small or n15)");
}

namespace {
void require(bool ok, const std::string& field, const std::string& what) {
  if (!ok) throw Error(ErrorKind::kInvalidArgument, "groot shape: " + field + " " + what);
}
}  // namespace

void validate(const GrootShape& s) {
  // the backbone's parts as pi0.5's checks them (the expert is not used: give it lm's attention)
  PolicyShape base = s.base;
  base.expert = {base.lm.width, base.lm.layers, base.lm.heads, base.lm.kv_heads, base.lm.head_dim, base.lm.mlp};
  validate(base);
  auto positive = [](std::initializer_list<int> v) {
    for (int x : v)
      if (x <= 0 || x > (1 << 16)) return false;
    return true;
  };
  require(positive({s.backbone_dim, s.vl_heads, s.vl_head_dim, s.dit_layers, s.dit_heads, s.dit_head_dim, s.dit_output,
                    s.hidden, s.future_tokens, s.max_seq_len, s.timestep_buckets}) &&
              s.vl_layers >= 0 && s.vl_layers <= 1024 && s.dit_layers <= 1024,
          "", "has a size that is not 1 to 65536 (vl_layers: 0 to 1024)");
  require(s.vl_heads * s.vl_head_dim == s.backbone_dim, "vl_heads x vl_head_dim", "must equal backbone_dim");
  require(s.inner() <= (1 << 16), "dit_heads x dit_head_dim", "must be at most 65536");
  require(s.max_seq_len >= s.base.horizon, "max_seq_len", "must be at least the horizon");
  require(s.rope_base > 1, "rope_base", "must be above 1");
  require(s.connector_layers == 1 || s.connector_layers == 2, "connector_layers", "must be 1 or 2");
  require(s.base.vision.merge == 1 || s.base.vision.merge == 2, "vision.merge", "must be 1 or 2");
  require(s.dropout >= 0 && s.dropout < 1, "dropout", "must be in [0, 1)");
  require(!s.embodiments.empty() && s.embodiments.size() <= size_t(kMaxEmbodiments), "embodiments",
          "must number 1 to " + std::to_string(kMaxEmbodiments));
  for (size_t e = 0; e < s.embodiments.size(); ++e) {
    const auto& em = s.embodiments[e];
    require(em.state_dim >= 0 && em.state_dim <= 4096 && em.action_dim > 0 && em.action_dim <= s.base.max_action_dim,
            "embodiments[" + std::to_string(e) + "]",
            "needs state_dim 0 to 4096 and action_dim 1 to max_action_dim (" + std::to_string(s.base.max_action_dim) + ")");
  }
}

namespace {
int64_t dense(int64_t in, int64_t out) { return in * out + out; }
}  // namespace

GrootParameterCount parameter_count(const GrootShape& s) {
  const auto& v = s.base.vision;
  const auto& t = s.base.lm;
  const int64_t dv = v.width, dlm = t.width, b = s.backbone_dim, i = s.inner();
  GrootParameterCount c;
  // backbone
  int64_t vit = dv * 3 * v.patch * v.patch + dv + int64_t(v.tokens()) * dv +
                v.layers * (4 * dv + dense(dv, 3 * dv) + dense(dv, dv) + dense(dv, v.mlp) + dense(v.mlp, dv)) + 2 * dv;
  const int64_t merged = dv * v.merge * v.merge;
  int64_t projector = s.connector_layers == 1 ? dense(merged, dlm) : 2 * merged + dense(merged, dlm) + dense(dlm, dlm);
  // q, k, v, o, the MLP, two RMSNorms and Qwen3's q/k norms
  int64_t lm_layer =
      dlm * t.heads * t.head_dim * 2 + dlm * t.kv_heads * t.head_dim * 2 + 3 * dlm * t.mlp + 2 * dlm + 2 * t.head_dim;
  c.backbone = vit + projector + int64_t(s.base.vocab) * dlm + t.layers * lm_layer + dlm;
  // adapter
  int64_t adapter = (dlm != b ? dense(dlm, b) : 0) + 2 * b + s.vl_layers * (4 * b + 4 * dense(b, b) + dense(b, 4 * b) + dense(4 * b, b));
  // DiT: time encoder, blocks (even: cross-attention to backbone_dim keys), output
  int64_t dit = dense(256, i) + dense(i, i);
  for (int l = 0; l < s.dit_layers; ++l) {
    const int64_t kdim = l % 2 == 0 ? b : i;
    dit += dense(i, 2 * i) + 2 * dense(i, i) + 2 * dense(kdim, i) + dense(i, 4 * i) + dense(4 * i, i);
  }
  dit += dense(i, 2 * i) + dense(i, s.dit_output);
  int64_t heads = 0;
  for (const auto& e : s.embodiments)
    heads += dense(e.state_dim, s.hidden) + dense(s.hidden, i) + dense(e.action_dim, i) + dense(2 * i, i) + dense(i, i) +
             dense(s.dit_output, s.hidden) + dense(s.hidden, e.action_dim);
  c.head = adapter + dit + heads + int64_t(s.future_tokens) * i + int64_t(s.max_seq_len) * i;
  return c;
}

double groot_train_flops(const GrootShape& s, int64_t images, const std::vector<int64_t>& prefix_lens, int64_t filler,
                         bool tune_backbone) {
  const auto& v = s.base.vision;
  const auto& t = s.base.lm;
  const double p = v.tokens(), po = v.out_tokens(), dv = v.width, dlm = t.width, b = s.backbone_dim, i = s.inner();
  const double merged = dv * v.merge * v.merge;
  // multiply-adds of the backbone's forward
  double vit = p * (3.0 * v.patch * v.patch * dv) + v.layers * (p * (4 * dv * dv + 2 * dv * v.mlp) + 2 * p * p * dv) +
               po * (merged * dlm + (s.connector_layers == 1 ? 0.0 : dlm * dlm));
  const double lm_tok = t.layers * (dlm * t.heads * t.head_dim * 2 + dlm * t.kv_heads * t.head_dim * 2 + 3 * dlm * t.mlp);
  auto causal_pairs = [](double l) { return l * (l + 1) / 2; };
  double backbone = double(images) * vit, head = 0;
  const double l = s.step_tokens(), h = s.base.horizon;
  std::vector<int64_t> lens = prefix_lens;
  for (size_t k = 0; k < lens.size() + (filler > 0 ? 1 : 0); ++k) {
    const bool is_filler = k == lens.size();
    const double lp = double(is_filler ? filler : lens[k]);
    backbone += lp * lm_tok + 2.0 * t.heads * t.head_dim * causal_pairs(lp) * t.layers;
    // adapter: projection, vl self-attention blocks (12 b^2 per token, scores and values)
    head += lp * (dlm != b ? dlm * b : 0) + s.vl_layers * (lp * 12 * b * b + 2 * b * lp * lp);
    if (is_filler) continue;  // filler has no DiT tokens and no key in any sample's cross-attention
    for (int layer = 0; layer < s.dit_layers; ++layer) {
      const bool cross = layer % 2 == 0;
      head += l * (2 * i * i + 8 * i * i);                      // q, o, feed-forward
      head += cross ? lp * 2 * b * i + 2 * i * l * lp : l * 2 * i * i + 2 * i * l * l;  // k, v and attention
    }
    // output projection (action tokens only), heads: state encoder, action encoder, decoder
    const double a = s.base.max_action_dim;  // at most; the per-embodiment width is close for a count
    head += h * i * s.dit_output + s.hidden * i + h * (a * i + 3 * i * i) + h * (s.dit_output * s.hidden + s.hidden * a);
  }
  const double backbone_passes = tune_backbone ? 3.0 : 1.0;
  return 2.0 * (backbone_passes * backbone + 3.0 * head);
}

}  // namespace ember::model
