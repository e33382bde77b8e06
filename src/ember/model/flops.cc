#include "ember/model/flops.h"

namespace ember::model {

StepWork layout_work(const PolicyInputs& in, const PolicyShape& shape) {
  StepWork w;
  w.images = in.images.size(0);
  w.suffix_len = shape.horizon;
  if (in.plan.backend == AttentionBackend::kVarlen) {
    w.prefix_lens = in.plan.prefix_lens;
    w.filler_tokens = in.plan.prefix_pad;
  } else {
    w.prefix_lens.assign(in.samples, in.plan.prefix_len);
  }
  return w;
}

StepWork real_work(const PolicyInputs& in, const PolicyShape& shape) {
  StepWork w;
  w.images = in.real_images;
  w.suffix_len = shape.horizon;
  w.prefix_lens = in.real_prefix_lens;
  return w;
}

double train_flops(const StepWork& w, const PolicyShape& s) {
  const double hd = s.lm.head_dim, heads = s.lm.heads, kv = s.lm.kv_heads, layers = s.lm.layers;
  // vision: patch embedding, blocks, projector, per image
  const auto& v = s.vision;
  const double p = v.tokens(), dv = v.width;
  double vit = p * (3.0 * v.patch * v.patch * dv) + v.layers * (p * (4 * dv * dv + 2 * dv * v.mlp) + 2 * p * p * dv) +
               p * dv * s.lm.width;
  // towers: multiply-adds per token per layer
  auto tower = [&](const TowerShape& t, bool adaptive) {
    double d = t.width;
    double m = d * (heads * hd) * 2 + d * (kv * hd) * 2 + 3 * d * t.mlp;
    if (adaptive) m += 0;  // modulations are per sample, not per token
    return m;
  };
  const double lm_tok = tower(s.lm, false), ex_tok = tower(s.expert, true);
  const double lm_q = s.lm.width * heads * hd, lm_o = lm_q, lm_mlp = 3.0 * s.lm.width * s.lm.mlp;
  double towers = 0, attention = 0;
  // all layers but the last run the prefix fully; the last only projects keys and values
  auto prefix_towers = [&](double pref) { return pref * (lm_tok * (layers - 1) + (lm_tok - lm_q - lm_o - lm_mlp)); };
  for (int64_t lp : w.prefix_lens) {
    const double pref = double(lp), suf = double(w.suffix_len);
    towers += prefix_towers(pref) + suf * ex_tok * layers;
    // scores + weighted values: 2 multiply-adds per (query, key, head, dim)
    attention += 2 * heads * hd * (pref * pref * (layers - 1) + suf * (pref + suf) * layers);
  }
  const double filler = double(w.filler_tokens);
  towers += prefix_towers(filler);
  attention += 2 * heads * hd * filler * filler * (layers - 1);
  const double heads_io = double(w.prefix_lens.size()) * w.suffix_len * 2.0 * s.max_action_dim * s.expert.width;
  const double forward_macs = double(w.images) * vit + towers + attention + heads_io;
  return 3.0 * 2.0 * forward_macs;
}

}  // namespace ember::model
