#include "ember/model/groot.h"

#include <c10/core/InferenceMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "ember/core/error.h"
#include "ember/model/attention.h"
#include "ember/model/flops.h"

namespace ember::model {

namespace {

// A small host tensor on `device` without making the host wait for the GPU (a copy from pageable
// memory would: the host could not queue work ahead of it)
at::Tensor to_device(const at::Tensor& host, const at::Device& device) {
  if (host.device() == device || !device.is_cuda()) return host.to(device);
  return host.pin_memory().to(device, /*non_blocking=*/true);
}

// LayerNorm without a learned scale and shift, in x's dtype (as LayerNormImpl, autocast excluded)
at::Tensor plain_layer_norm(const at::Tensor& x, double eps) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  return at::layer_norm(x, {x.size(-1)}, {}, {}, eps);
}

at::Tensor repeat_heads(const at::Tensor& x, int64_t heads) {  // [.., kv, d] -> [.., heads, d]
  const int64_t kv = x.size(-2);
  return kv == heads ? x : x.repeat_interleave(heads / kv, -2);
}

// diffusers' Timesteps(256, flip_sin_to_cos=True, downscale_freq_shift=1): [cos, sin] of t at
// periods 2 pi * 10000^(j / 127), j < 128. t [n] -> [n, 256] float32
at::Tensor timestep_proj(const at::Tensor& t) {
  auto opts = at::TensorOptions().dtype(at::kFloat).device(t.device());
  auto freq = at::exp(at::arange(128, opts) * (-std::log(10000.0) / 127.0));
  auto a = t.to(at::kFloat).unsqueeze(1) * freq.unsqueeze(0);
  return at::cat({a.cos(), a.sin()}, 1);
}

// Isaac-GR00T's SinusoidalPositionalEncoding(width) of the action encoder: [sin, cos] at
// frequencies 10000^(-j / (width/2)). t [m] -> [m, width] float32
at::Tensor action_time_encoding(const at::Tensor& t, int64_t width) {
  auto opts = at::TensorOptions().dtype(at::kFloat).device(t.device());
  const int64_t half = width / 2;
  auto freq = at::exp(at::arange(half, opts) * (-std::log(10000.0) / double(half)));
  auto a = t.to(at::kFloat).unsqueeze(1) * freq.unsqueeze(0);
  return at::cat({a.sin(), a.cos()}, 1);
}

}  // namespace

GrootLayout make_groot_layout(const PolicyInputs& in, const GrootShape& shape) {
  GrootLayout l;
  const auto& plan = in.plan;
  const auto device = in.actions.defined() ? in.actions.device() : in.images.device();
  l.samples = in.samples;
  l.varlen = plan.backend == AttentionBackend::kVarlen;
  l.step_len = shape.step_tokens();
  if (l.varlen) {
    l.cu_prefix = plan.cu_prefix;
    l.prefix_lens = plan.prefix_lens;
    if (plan.prefix_pad > 0) l.prefix_lens.push_back(plan.prefix_pad);
    l.max_prefix = plan.max_prefix;
    l.key_lens = plan.prefix_lens;
    l.cu_keys = plan.cu_prefix.narrow(0, 0, in.samples + 1);
    // the plan's bound (a graph's batches share it: train/sampler.h), not this batch's longest
    l.max_keys = std::max(plan.max_prefix, *std::max_element(l.key_lens.begin(), l.key_lens.end()));
    l.step_lens.assign(size_t(in.samples), l.step_len);
    // made on the device (no host data a CUDA graph would hold)
    l.cu_steps = at::arange(0, (in.samples + 1) * l.step_len, l.step_len, at::TensorOptions().dtype(at::kInt).device(device));
    return l;
  }
  l.prefix_len = plan.prefix_len;
  auto valid = to_device(plan.valid.narrow(1, 0, l.prefix_len), device);  // [n, Lp] (on the device already after in.to())
  l.key_mask = valid.unsqueeze(1).unsqueeze(1);                   // [n, 1, 1, Lp]
  auto rule = at::ones({l.prefix_len, l.prefix_len}, valid.options()).tril();  // key <= query
  // a padding query attends to its sample's real keys (its output is never read; a fully
  // masked row would give NaN)
  l.causal_mask = at::where(valid.unsqueeze(2), rule.unsqueeze(0).logical_and(valid.unsqueeze(1)), valid.unsqueeze(1))
                      .unsqueeze(1)
                      .contiguous();
  return l;
}

at::Tensor groot_prefix_attention(const GrootLayout& l, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  bool causal) {
  if (l.varlen)
    return segment_attention(q, k, v, l.cu_prefix, l.cu_prefix, l.max_prefix, l.max_prefix, l.prefix_lens, l.prefix_lens, causal);
  const int64_t n = l.samples, lp = l.prefix_len, heads = q.size(1), d = q.size(2);
  auto batch = [&](const at::Tensor& t) { return repeat_heads(t.view({n, lp, t.size(1), d}), heads).transpose(1, 2); };
  auto o = at::scaled_dot_product_attention(batch(q), batch(k), batch(v), causal ? l.causal_mask : l.key_mask);
  return o.transpose(1, 2).reshape({n * lp, heads, d});
}

// --- backbone ----------------------------------------------------------------------------------

GrootBackboneImpl::GrootBackboneImpl(const GrootShape& s) : shape(s) {
  const auto& v = s.base.vision;
  const int64_t merged = int64_t(v.width) * v.merge * v.merge, dlm = s.base.lm.width;
  vision = register_module("vision", VisionTower(v));
  if (s.connector_layers == 2) {
    proj_norm = register_module("proj_norm", LayerNorm(merged, 1e-5));
    proj1 = register_module("proj1", Dense(merged, dlm));
    proj2 = register_module("proj2", Dense(dlm, dlm));
  } else {
    proj1 = register_module("proj1", Dense(merged, dlm));
  }
  embedding = register_parameter("embedding", at::randn({s.base.vocab, dlm}) * 0.02);
  lm = register_module("lm", torch::nn::ModuleList());
  for (int l = 0; l < s.base.lm.layers; ++l) lm->push_back(GrootLmLayer(s.base.lm));
  lm_norm = register_module("lm_norm", RmsNorm(dlm));
}

at::Tensor GrootBackboneImpl::forward(const PolicyInputs& in, const GrootLayout& layout) {
  const auto& v = shape.base.vision;
  const auto& t = shape.base.lm;
  const int64_t dlm = t.width;
  std::vector<at::Tensor> rows;
  if (in.images.size(0) > 0) {
    // Eagle's pixel shuffle: merge x merge neighbouring patches become one token of merge^2 widths
    auto x = vision->forward(in.images);  // [ni, P, dv]
    const int64_t ni = x.size(0), g = v.image_size / v.patch, m = v.merge, dv = v.width;
    x = x.view({ni, g / m, m, g / m, m, dv}).permute({0, 1, 3, 2, 4, 5}).reshape({ni, (g / m) * (g / m), m * m * dv});
    x = proj2 ? proj2->forward(at::gelu(proj1->forward(proj_norm->forward(x)))) : proj1->forward(x);  // [ni, P / m^2, Dlm]
    rows.push_back(x.reshape({-1, dlm}));
  }
  auto text = at::embedding(embedding, in.text_ids);  // [n_text, Dlm]
  if (!rows.empty()) text = text.to(rows[0].scalar_type());
  rows.push_back(text);
  auto x = at::cat(rows, 0).index_select(0, in.prefix_gather);  // [Tp, Dlm]
  Rope rope = make_rope(in.prefix_positions, t.head_dim, shape.rope_base);
  for (const auto& module : *lm) x = module->as<GrootLmLayerImpl>()->forward(x, rope, layout);
  return lm_norm->forward(x);
}

// Qwen3-1.7B: no biases, RMSNorm eps 1e-6 (also on the heads' queries and keys), SiLU MLP
GrootLmLayerImpl::GrootLmLayerImpl(const TowerShape& s) : shape(s) {
  norm1 = register_module("norm1", RmsNorm(s.width));
  q = register_module("q", Dense(s.width, s.heads * s.head_dim, false));
  k = register_module("k", Dense(s.width, s.kv_heads * s.head_dim, false));
  v = register_module("v", Dense(s.width, s.kv_heads * s.head_dim, false));
  q_norm = register_module("q_norm", RmsNorm(s.head_dim));
  k_norm = register_module("k_norm", RmsNorm(s.head_dim));
  o = register_module("o", Dense(s.heads * s.head_dim, s.width, false));
  norm2 = register_module("norm2", RmsNorm(s.width));
  gate = register_module("gate", Dense(s.width, s.mlp, false));
  up = register_module("up", Dense(s.width, s.mlp, false));
  down = register_module("down", Dense(s.mlp, s.width, false));
}

at::Tensor GrootLmLayerImpl::forward(const at::Tensor& x, const Rope& rope, const GrootLayout& layout) const {
  const auto& t = shape;
  auto y = norm1->forward(x);
  auto q_h = apply_rope(q_norm->forward(q->forward(y).view({-1, t.heads, t.head_dim})), rope);
  auto k_h = apply_rope(k_norm->forward(k->forward(y).view({-1, t.kv_heads, t.head_dim})), rope);
  auto v_h = v->forward(y).view({-1, t.kv_heads, t.head_dim});
  auto a = groot_prefix_attention(layout, q_h, k_h, v_h, /*causal=*/true);
  auto h = x + o->forward(a.reshape({-1, t.heads * t.head_dim}));
  auto z = norm2->forward(h);
  return h + down->forward(at::silu(gate->forward(z)) * up->forward(z));
}

// --- blocks and heads --------------------------------------------------------------------------

GrootBlockImpl::GrootBlockImpl(int dim, int heads_, int head_dim_, int kdim, bool adaptive_)
    : heads(heads_), head_dim(head_dim_), adaptive(adaptive_) {
  const int inner = heads * head_dim;
  // diffusers' attention, feed-forward and AdaLayerNorm, as N1.5 builds them: PyTorch's default
  // initialisation (N1.5 overrides it only in the action head's own MLPs and embeddings)
  if (adaptive) {
    ada = register_module("ada", torch_default_init(Dense(dim, 2 * dim)));
  } else {
    norm1 = register_module("norm1", LayerNorm(dim, 1e-5));
    norm3 = register_module("norm3", LayerNorm(dim, 1e-5));
  }
  q = register_module("q", torch_default_init(Dense(dim, inner)));
  k = register_module("k", torch_default_init(Dense(kdim, inner)));
  v = register_module("v", torch_default_init(Dense(kdim, inner)));
  o = register_module("o", torch_default_init(Dense(inner, dim)));
  ff1 = register_module("ff1", torch_default_init(Dense(dim, 4 * dim)));
  ff2 = register_module("ff2", torch_default_init(Dense(4 * dim, dim)));
}

at::Tensor GrootBlockImpl::forward(const at::Tensor& x, const at::Tensor& ctx, const at::Tensor& temb,
                                   const Attend& attend, double p) const {
  auto drop = [p](const at::Tensor& t) { return p > 0 ? at::dropout(t, p, /*train=*/true) : t; };
  at::Tensor y;
  if (adaptive) {
    auto mod = ada->forward(at::silu(temb)).unsqueeze(1).chunk(2, -1);  // scale, shift: [n, 1, dim]
    y = at::addcmul(mod[1], plain_layer_norm(x, 1e-5), 1 + mod[0]);
  } else {
    y = norm1->forward(x);
  }
  const auto& src = ctx.defined() ? ctx : y;
  auto a = attend(q->forward(y).reshape({-1, heads, head_dim}), k->forward(src).reshape({-1, heads, head_dim}),
                  v->forward(src).reshape({-1, heads, head_dim}));
  auto h = x + drop(drop(o->forward(a.reshape({-1, heads * head_dim})))).view(x.sizes());
  auto z = adaptive ? plain_layer_norm(h, 1e-5) : norm3->forward(h);
  return h + drop(ff2->forward(drop(at::gelu(ff1->forward(z), "tanh"))));
}

EmbodimentHeadImpl::EmbodimentHeadImpl(const GrootShape& s, const GrootEmbodiment& e, bool torch_init) : dims(e) {
  const int i = s.inner();
  state1 = register_module("state1", Dense(e.state_dim, s.hidden));
  state2 = register_module("state2", Dense(s.hidden, i));
  act1 = register_module("act1", Dense(e.action_dim, i));
  act2 = register_module("act2", Dense(2 * i, i));
  act3 = register_module("act3", Dense(i, i));
  dec1 = register_module("dec1", Dense(s.dit_output, s.hidden));
  dec2 = register_module("dec2", Dense(s.hidden, e.action_dim));
  if (torch_init)
    for (auto* d : {&state1, &state2, &act1, &act2, &act3, &dec1, &dec2}) torch_default_init(*d);
}

at::Tensor EmbodimentHeadImpl::encode_state(const at::Tensor& state) const {
  return state2->forward(at::relu(state1->forward(state))).unsqueeze(1);
}

at::Tensor EmbodimentHeadImpl::encode_action(const at::Tensor& x, const at::Tensor& tbucket) const {
  auto a = act1->forward(x);  // [m, H, I]
  auto tau = action_time_encoding(tbucket, a.size(-1)).to(a.scalar_type()).unsqueeze(1).expand(a.sizes());
  return act3->forward(at::silu(act2->forward(at::cat({a, tau}, -1))));
}

at::Tensor EmbodimentHeadImpl::decode(const at::Tensor& y) const { return dec2->forward(at::relu(dec1->forward(y))); }

// --- the policy --------------------------------------------------------------------------------

// Samples by embodiment: group g holds rows[g] (its samples, in batch order) of embodiment ids[g];
// `order` is cat(rows) and `inverse` maps it back to batch order.
// A policy of one embodiment has one group of every row: rows[0] and inverse stay undefined and
// nothing is gathered (no host-made index on the device: the forward can be captured in a CUDA graph).
struct GrootPolicyImpl::Groups {
  std::vector<int64_t> ids;
  std::vector<at::Tensor> rows;  // int64 on the device; undefined: every row, in order
  at::Tensor inverse;            // [n] int64; undefined: the groups' rows are in batch order

  at::Tensor of(const at::Tensor& t, size_t k) const { return rows[k].defined() ? t.index_select(0, rows[k]) : t; }
  at::Tensor in_batch_order(const std::vector<at::Tensor>& parts) const {
    auto all = parts.size() == 1 ? parts[0] : at::cat(parts, 0);
    return inverse.defined() ? all.index_select(0, inverse) : all;
  }
  // x's rows of group k get f(those rows), in place
  void update(at::Tensor& x, size_t k, const std::function<void(at::Tensor&)>& f) const {
    if (!rows[k].defined()) return f(x);
    auto part = x.index_select(0, rows[k]);
    f(part);
    x.index_copy_(0, rows[k], part);
  }
};

GrootPolicyImpl::GrootPolicyImpl(const GrootShape& s, bool tune, bool torch_head_init) : shape(s), tune_backbone(tune) {
  validate(s);
  const int i = s.inner(), b = s.backbone_dim;
  backbone = register_module("backbone", GrootBackbone(s));
  if (s.base.lm.width != b) backbone_proj = register_module("backbone_proj", Dense(s.base.lm.width, b));
  vlln = register_module("vlln", LayerNorm(b, 1e-5));
  vl_blocks = register_module("vl", torch::nn::ModuleList());
  for (int l = 0; l < s.vl_layers; ++l) vl_blocks->push_back(GrootBlock(b, s.vl_heads, s.vl_head_dim, b, false));
  // the DiT's timestep MLP and output projections: PyTorch's default, as N1.5 (the action head's
  // MLPs, future tokens and positions keep N(0, 0.02^2) as N1.5 sets them)
  time1 = register_module("time1", torch_default_init(Dense(256, i)));
  time2 = register_module("time2", torch_default_init(Dense(i, i)));
  dit_blocks = register_module("dit", torch::nn::ModuleList());
  for (int l = 0; l < s.dit_layers; ++l) dit_blocks->push_back(GrootBlock(i, s.dit_heads, s.dit_head_dim, l % 2 == 0 ? b : i, true));
  out1 = register_module("out1", torch_default_init(Dense(i, 2 * i)));
  out2 = register_module("out2", torch_default_init(Dense(i, s.dit_output)));
  future_tokens = register_parameter("future_tokens", at::randn({s.future_tokens, i}) * 0.02);
  positions = register_parameter("positions", at::randn({s.max_seq_len, i}) * 0.02);
  heads = register_module("heads", torch::nn::ModuleList());
  for (const auto& e : s.embodiments) heads->push_back(EmbodimentHead(s, e, torch_head_init));
  if (!tune_backbone)
    for (auto& p : backbone->parameters()) p.set_requires_grad(false);
}

bool is_backbone_param(const std::string& name) { return name.rfind("backbone.", 0) == 0; }

at::Tensor GrootPolicyImpl::context(const PolicyInputs& in, const GrootLayout& layout, double dropout) {
  at::Tensor x;
  if (!tune_backbone || !at::GradMode::is_enabled()) {
    c10::InferenceMode inference;
    x = backbone->forward(in, layout);
  } else {
    x = backbone->forward(in, layout);
  }
  if (x.is_inference() && !c10::InferenceMode::is_enabled()) x = x.clone();  // a tensor autograd may save
  if (backbone_proj) x = backbone_proj->forward(x);
  x = vlln->forward(x);
  auto attend = [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    return groot_prefix_attention(layout, q, k, v, /*causal=*/false);
  };
  for (const auto& block : *vl_blocks) x = block->as<GrootBlockImpl>()->forward(x, {}, {}, attend, dropout);
  return x;  // [prefix rows, B]
}

std::vector<at::Tensor> GrootPolicyImpl::velocity(const PolicyInputs& in, const GrootLayout& layout, const at::Tensor& ctx,
                                                  const Groups& g, const at::Tensor& state_tokens, const at::Tensor& x_t,
                                                  const at::Tensor& tbucket, double dropout, at::Tensor* hidden) {
  const int64_t n = in.samples, h = shape.base.horizon, i = shape.inner(), len = shape.step_tokens();
  auto temb = time2->forward(at::silu(time1->forward(timestep_proj(tbucket))));  // [n, I]
  // action tokens, each group through its own encoder at its own width
  std::vector<at::Tensor> parts;
  for (size_t k = 0; k < g.ids.size(); ++k) {
    auto* head = heads[g.ids[k]]->as<EmbodimentHeadImpl>();
    auto xg = g.of(x_t, k).narrow(2, 0, head->dims.action_dim);
    parts.push_back(head->encode_action(xg, g.of(tbucket, k)));
  }
  auto actions = g.in_batch_order(parts) + positions.narrow(0, 0, h).to(parts[0].scalar_type());
  auto seq = at::cat({state_tokens.to(actions.scalar_type()),
                      future_tokens.to(actions.scalar_type()).unsqueeze(0).expand({n, shape.future_tokens, i}), actions},
                     1);  // [n, L, I]
  auto self_attend = [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    auto batch = [&](const at::Tensor& t) { return t.view({n, len, t.size(1), t.size(2)}).transpose(1, 2); };
    return at::scaled_dot_product_attention(batch(q), batch(k), batch(v)).transpose(1, 2).reshape({n * len, q.size(1), q.size(2)});
  };
  auto cross_attend = [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    if (layout.varlen)
      return segment_attention(q, k, v, layout.cu_steps, layout.cu_keys, len, layout.max_keys, layout.step_lens, layout.key_lens);
    const int64_t lp = layout.prefix_len;
    auto kb = k.view({n, lp, k.size(1), k.size(2)}).transpose(1, 2), vb = v.view({n, lp, v.size(1), v.size(2)}).transpose(1, 2);
    auto qb = q.view({n, len, q.size(1), q.size(2)}).transpose(1, 2);
    return at::scaled_dot_product_attention(qb, kb, vb, layout.key_mask).transpose(1, 2).reshape({n * len, q.size(1), q.size(2)});
  };
  for (size_t l = 0; l < dit_blocks->size(); ++l) {
    const bool cross = l % 2 == 0;
    seq = dit_blocks[l]->as<GrootBlockImpl>()->forward(seq, cross ? ctx : at::Tensor(), temb, cross ? GrootBlockImpl::Attend(cross_attend) : GrootBlockImpl::Attend(self_attend), dropout);
  }
  // output: adaptive LayerNorm (shift, scale) on the action tokens only (nothing reads the others)
  auto mod = out1->forward(at::silu(temb)).unsqueeze(1).chunk(2, -1);
  auto y = at::addcmul(mod[0], plain_layer_norm(seq.narrow(1, len - h, h), 1e-6), 1 + mod[1]);
  y = out2->forward(y);  // [n, H, out]
  if (hidden) *hidden = y;
  std::vector<at::Tensor> v;
  for (size_t k = 0; k < g.ids.size(); ++k) v.push_back(heads[g.ids[k]]->as<EmbodimentHeadImpl>()->decode(g.of(y, k)));
  return v;
}

GrootPolicyImpl::Groups GrootPolicyImpl::make_groups(const PolicyInputs& in) const {
  std::map<int64_t, std::vector<int64_t>> by_id;
  for (size_t i = 0; i < in.embodiments.size(); ++i) {
    const int64_t e = in.embodiments[i];
    if (e < 0 || e >= int64_t(shape.embodiments.size()))
      throw Error(ErrorKind::kInvalidArgument, "policy input: sample " + std::to_string(i) + ": embodiment " + std::to_string(e) +
                                                   ", the policy has embodiments 0.." + std::to_string(shape.embodiments.size() - 1));
    by_id[e].push_back(int64_t(i));
  }
  if (in.embodiments.size() != size_t(in.samples))
    throw Error(ErrorKind::kInvalidArgument, "policy input: embodiment ids for " + std::to_string(in.embodiments.size()) + " of " +
                                                 std::to_string(in.samples) + " samples");
  Groups g;
  if (shape.embodiments.size() == 1) {  // every row is embodiment 0's (checked above): nothing to gather
    g.ids = {0};
    g.rows.emplace_back();
    return g;
  }
  const auto device = in.actions.defined() ? in.actions.device() : in.images.device();
  std::vector<int64_t> order, inverse(size_t(in.samples));
  for (const auto& [id, rows] : by_id) {
    g.ids.push_back(id);
    g.rows.push_back(to_device(at::tensor(rows, at::kLong), device));
    for (int64_t r : rows) inverse[size_t(r)] = int64_t(order.size()), order.push_back(r);
  }
  g.inverse = to_device(at::tensor(inverse, at::kLong), device);
  return g;
}

at::Tensor GrootPolicyImpl::state_tokens(const PolicyInputs& in, const Groups& g) {
  std::vector<at::Tensor> parts;
  for (size_t k = 0; k < g.ids.size(); ++k) {
    auto* head = heads[g.ids[k]]->as<EmbodimentHeadImpl>();
    const int64_t want = head->dims.state_dim, have = in.state.size(1);
    auto s = g.of(in.state, k);
    // the embodiment's width: narrower states are zero-padded (as N1.5 pads to max_state_dim)
    s = have >= want ? s.narrow(1, 0, want) : at::constant_pad_nd(s, {0, want - have});
    parts.push_back(head->encode_state(s));
  }
  return g.in_batch_order(parts);  // [n, 1, I]
}

LossOut GrootPolicyImpl::loss(const PolicyInputs& in, std::optional<at::Tensor> noise, std::optional<at::Tensor> time) {
  const auto& actions = in.actions;  // [n, H, A]
  auto opts = actions.options();
  at::Tensor eps = noise ? *noise : at::randn(actions.sizes(), opts);
  at::Tensor t = time ? *time : flow_time(at::rand({in.samples}, opts));
  auto tt = t.view({-1, 1, 1});
  auto x_t = (1 - tt) * eps + tt * actions;
  auto target = actions - eps;
  auto tbucket = at::trunc(t * shape.timestep_buckets);  // N1.5's (t * buckets).long()
  const GrootLayout layout = make_groot_layout(in, shape);
  const Groups g = make_groups(in);
  const double dropout = is_training() ? shape.dropout : 0.0;
  auto ctx = context(in, layout, dropout);
  auto v = velocity(in, layout, ctx, g, state_tokens(in, g), x_t, tbucket, dropout);
  LossOut out;
  out.loss_sum = at::zeros({}, opts);
  out.count = at::zeros({}, opts);
  for (size_t k = 0; k < g.ids.size(); ++k) {
    const int64_t a = v[k].size(2);
    auto mask = g.of(in.action_mask, k).narrow(2, 0, a);
    auto err = (v[k].to(at::kFloat) - g.of(target, k).narrow(2, 0, a)).square() * mask;
    out.loss_sum = out.loss_sum + err.sum();
    out.count = out.count + mask.sum();
  }
  out.loss = out.loss_sum / out.count.clamp_min(1);
  return out;
}

at::Tensor GrootPolicyImpl::sample_actions(const PolicyInputs& in, std::optional<at::Tensor> noise) {
  at::NoGradGuard no_grad;
  const auto device = in.actions.defined() ? in.actions.device() : in.images.device();
  const int64_t n = in.samples, h = shape.base.horizon, amax = shape.base.max_action_dim;
  // a copy: the integration below writes x in place, and the caller's noise must stay as given
  at::Tensor x = noise ? noise->to(at::kFloat).clone() : at::randn({n, h, amax}, at::TensorOptions().device(device).dtype(at::kFloat));
  const GrootLayout layout = make_groot_layout(in, shape);
  const Groups g = make_groups(in);
  auto ctx = context(in, layout);  // once: the backbone does not depend on the flow time; no dropout
  auto states = state_tokens(in, g);
  const int steps = shape.base.flow_steps;
  const double dt = 1.0 / steps;
  for (int i = 0; i < steps; ++i) {
    const double t = double(i) / steps;
    auto tbucket = at::full({n}, std::floor(t * shape.timestep_buckets), x.options());
    auto v = velocity(in, layout, ctx, g, states, x, tbucket, 0.0);
    for (size_t k = 0; k < g.ids.size(); ++k) {
      const int64_t a = v[k].size(2);
      g.update(x, k, [&](at::Tensor& rows) { rows.narrow(2, 0, a).add_(v[k].to(at::kFloat), dt); });
    }
  }
  // past each embodiment's width the output is zero (the noise there was never integrated)
  for (size_t k = 0; k < g.ids.size(); ++k) {
    const int64_t a = shape.embodiments[size_t(g.ids[k])].action_dim;
    if (a == amax) continue;
    g.update(x, k, [&](at::Tensor& rows) { rows.narrow(2, a, amax - a).zero_(); });
  }
  return x;
}

struct GrootPolicyImpl::Prefix : PrefixState {
  GrootLayout layout;
  Groups groups;
  at::Tensor ctx;     // [prefix rows, backbone_dim]
  at::Tensor states;  // [n, 1, I]
  int64_t bytes() const override { return int64_t(ctx.nbytes() + states.nbytes()); }
};

const GrootPolicyImpl::Prefix& GrootPolicyImpl::as_prefix(const PrefixState& prefix) {
  const auto* p = dynamic_cast<const Prefix*>(&prefix);
  if (!p) throw Error(ErrorKind::kInternal, "groot: a prefix state of another policy type");
  return *p;
}

std::shared_ptr<const PrefixState> GrootPolicyImpl::encode_prefix(const PolicyInputs& in) {
  auto p = std::make_shared<Prefix>();
  p->layout = make_groot_layout(in, shape);
  p->groups = make_groups(in);
  p->ctx = context(in, p->layout);
  p->states = state_tokens(in, p->groups);
  return p;
}

std::shared_ptr<const PrefixState> GrootPolicyImpl::refresh_prefix(const PolicyInputs& in, std::shared_ptr<const PrefixState> frozen) {
  auto p = std::make_shared<Prefix>(as_prefix(*frozen));
  p->states = state_tokens(in, p->groups);
  return p;
}

at::Tensor GrootPolicyImpl::prefix_velocity(const PolicyInputs& in, const PrefixState& prefix, const at::Tensor& x_t,
                                            const at::Tensor& t) {
  return velocity_over_prefix(in, prefix, x_t, t, nullptr);
}

at::Tensor GrootPolicyImpl::prefix_velocity_hidden(const PolicyInputs& in, const PrefixState& prefix, const at::Tensor& x_t,
                                                   const at::Tensor& t, at::Tensor& hidden) {
  return velocity_over_prefix(in, prefix, x_t, t, &hidden);
}

at::Tensor GrootPolicyImpl::velocity_over_prefix(const PolicyInputs& in, const PrefixState& prefix, const at::Tensor& x_t,
                                                 const at::Tensor& t, at::Tensor* hidden) {
  const auto* p = &as_prefix(prefix);
  const int64_t n = in.samples, amax = shape.base.max_action_dim;
  const int64_t copies = x_t.size(0) / std::max<int64_t>(n, 1);
  if (copies * n != x_t.size(0)) throw Error(ErrorKind::kInternal, "groot prefix_velocity: rows not a multiple of the samples");
  // N1.5's bucket of its time 1 - t; the small offset keeps 1 - (1 - i/K) in float32 in bucket i/K
  auto tbucket = at::floor((1 - t.to(at::kDouble)) * shape.timestep_buckets + 1e-4).clamp(0, shape.timestep_buckets - 1).to(at::kFloat);
  std::vector<at::Tensor> out, hiddens;
  for (int64_t c = 0; c < copies; ++c) {
    at::Tensor h;
    auto v = velocity(in, p->layout, p->ctx, p->groups, p->states, x_t.narrow(0, c * n, n), tbucket.narrow(0, c * n, n), 0.0, hidden ? &h : nullptr);
    std::vector<at::Tensor> parts;
    for (auto& vk : v) parts.push_back(at::constant_pad_nd(vk.to(at::kFloat), {0, amax - vk.size(2)}));
    out.push_back(-p->groups.in_batch_order(parts));  // [n, H, A], pi0's sign
    if (hidden) hiddens.push_back(h);
  }
  if (hidden) *hidden = copies == 1 ? hiddens[0] : at::cat(hiddens, 0);
  return copies == 1 ? out[0] : at::cat(out, 0);
}

at::Tensor GrootPolicyImpl::prefix_features(const PolicyInputs& in, const PrefixState& prefix) {
  const auto* p = &as_prefix(prefix);
  if (!p->layout.varlen) throw Error(ErrorKind::kInternal, "groot prefix_features: needs the varlen layout");
  at::NoGradGuard no_grad;
  return segment_means(p->ctx.to(at::kFloat), in.plan.cu_prefix, in.samples);
}

bool GrootPolicyImpl::is_prefix_parameter(const std::string& name) const {
  for (const char* p : {"backbone.", "backbone_proj.", "vlln.", "vl."})
    if (name.rfind(p, 0) == 0) return true;
  return false;
}

bool GrootPolicyImpl::frozen_forward(const PolicyInputs& in) {
  if (tune_backbone) return false;
  c10::InferenceMode inference;
  backbone->forward(in, make_groot_layout(in, shape));
  return true;
}

}  // namespace ember::model
