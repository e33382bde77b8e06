#include "ember/model/pi05.h"

#include <ATen/core/grad_mode.h>

#include <cmath>

#include "ember/core/error.h"
#include "ember/model/activation_checkpoint.h"
#include "ember/model/flops.h"

namespace ember::model {

TowerLayerImpl::TowerLayerImpl(const TowerShape& s, int64_t cond_width, bool keys_only, const LinearOptions& linear)
    : shape(s) {
  k = register_module("k", make_dense(s.width, s.kv_heads * s.head_dim, false, linear));
  v = register_module("v", make_dense(s.width, s.kv_heads * s.head_dim, false, linear));
  if (keys_only) {
    norm1 = register_module("norm1", RmsNorm(s.width));
    return;
  }
  q = register_module("q", make_dense(s.width, s.heads * s.head_dim, false, linear));
  o = register_module("o", make_dense(s.heads * s.head_dim, s.width, false, linear));
  if (cond_width > 0) {
    ada1 = register_module("ada1", AdaNorm(s.width, cond_width));
    ada2 = register_module("ada2", AdaNorm(s.width, cond_width));
  } else {
    norm1 = register_module("norm1", RmsNorm(s.width));
    norm2 = register_module("norm2", RmsNorm(s.width));
  }
  mlp = register_module("mlp", GatedMlp(s.width, s.mlp, linear));
}

Pi05PolicyImpl::Pi05PolicyImpl(const PolicyShape& s, const PolicyOptions& options) : shape(s), options(options) {
  validate(s);
  vision = register_module("vision", VisionTower(s.vision));
  vision->checkpoint_blocks = options.gradient_checkpointing;
  projector = register_module("projector", Dense(s.vision.width, s.lm.width));
  embedding = register_parameter("embedding", at::randn({s.vocab, s.lm.width}) * (1.0 / std::sqrt(double(s.lm.width))));
  lm_layers = register_module("lm", torch::nn::ModuleList());
  expert_layers = register_module("expert", torch::nn::ModuleList());
  for (int l = 0; l < s.lm.layers; ++l) {
    lm_layers->push_back(TowerLayer(s.lm, 0, /*keys_only=*/l + 1 == s.lm.layers, LinearOptions{.fp8 = options.fp8}));
    expert_layers->push_back(TowerLayer(s.expert, s.expert.width));
  }
  expert_final_norm = register_module("expert_final_norm", AdaNorm(s.expert.width, s.expert.width));
  action_in = register_module("action_in", Dense(s.max_action_dim, s.expert.width));
  action_out = register_module("action_out", Dense(s.expert.width, s.max_action_dim));
  time_in = register_module("time_in", Dense(s.expert.width, s.expert.width));
  time_out = register_module("time_out", Dense(s.expert.width, s.expert.width));
}

at::Tensor Pi05PolicyImpl::embed_prefix(const PolicyInputs& in) {
  const int64_t dlm = shape.lm.width;
  std::vector<at::Tensor> rows;
  if (in.images.size(0) > 0) {
    auto tokens = projector->forward(vision->forward(in.images));  // [n_images, P, Dlm]
    rows.push_back(tokens.reshape({-1, dlm}));
  }
  auto text = at::embedding(embedding, in.text_ids) * std::sqrt(double(dlm));  // [n_text, Dlm]
  if (!rows.empty()) text = text.to(rows[0].scalar_type());
  rows.push_back(text);
  return at::cat(rows, 0).index_select(0, in.prefix_gather);  // [Tp, Dlm]
}

namespace {
at::Tensor heads_view(const at::Tensor& x, int64_t heads, int64_t dim) {
  return x.reshape({-1, heads, dim});  // [T, heads, dim]
}
}  // namespace

at::Tensor Pi05PolicyImpl::run_layers(const PolicyInputs& in, at::Tensor xp, at::Tensor xs, const at::Tensor& cond,
                                      const PrefixCache* cache, PrefixCache* fill) {
  const int64_t hd = shape.lm.head_dim;
  const bool with_prefix = xp.defined();
  Rope rope_p, rope_s = make_rope(in.suffix_positions, hd);
  const AttentionPlan plan = in.plan.with_mask();
  if (with_prefix) rope_p = make_rope(in.prefix_positions, hd);
  // checkpointing saves memory in training only (grad mode, the whole prefix recomputed)
  const bool recompute = options.gradient_checkpointing && with_prefix && !fill && at::GradMode::is_enabled();
  for (int64_t l = 0; l < shape.lm.layers; ++l) {
    if (recompute) {
      auto outs = checkpointed(
          [this, l, plan, rope_p, rope_s](const std::vector<at::Tensor>& x) {
            auto s = joint_layer(l, plan, rope_p, rope_s, x[0], x[1], x[2], nullptr, nullptr);
            return s.prefix.defined() ? std::vector<at::Tensor>{s.suffix, s.prefix} : std::vector<at::Tensor>{s.suffix};
          },
          {xp, xs, cond});
      xs = outs[0];
      xp = outs.size() > 1 ? outs[1] : at::Tensor();
    } else {
      auto s = joint_layer(l, plan, rope_p, rope_s, xp, xs, cond, cache, fill);
      xp = s.prefix;
      xs = s.suffix;
    }
  }
  return expert_final_norm->forward(xs, cond).y;
}

Pi05PolicyImpl::Streams Pi05PolicyImpl::joint_layer(int64_t l, const AttentionPlan& plan, const Rope& rope_p,
                                                    const Rope& rope_s, at::Tensor xp, at::Tensor xs,
                                                    const at::Tensor& cond, const PrefixCache* cache, PrefixCache* fill) {
  const int64_t n = xs.size(0), h = xs.size(1), we = xs.size(2);
  const int64_t heads = shape.lm.heads, kvh = shape.lm.kv_heads, hd = shape.lm.head_dim;
  const int64_t layers = shape.lm.layers;
  auto* lm = lm_layers[l]->as<TowerLayerImpl>();
  auto* ex = expert_layers[l]->as<TowerLayerImpl>();
  JointQKV qkv;
  if (xp.defined()) {
    auto y = lm->norm1->forward(xp);
    // the last layer's prefix queries would only produce the unused prefix output
    if (l + 1 < layers) qkv.q_prefix = apply_rope(heads_view(lm->q->forward(y), heads, hd), rope_p);
    qkv.k_prefix = apply_rope(heads_view(lm->k->forward(y), kvh, hd), rope_p);
    qkv.v_prefix = heads_view(lm->v->forward(y), kvh, hd);
    if (fill) {  // with gradients only for prefix_cache() under grad mode
      const bool keep = at::GradMode::is_enabled();
      fill->keys.push_back(keep ? qkv.k_prefix : qkv.k_prefix.detach());
      fill->values.push_back(keep ? qkv.v_prefix : qkv.v_prefix.detach());
    }
  } else {
    qkv.k_prefix = cache->keys[l];
    qkv.v_prefix = cache->values[l];
  }
  auto a1 = ex->ada1->forward(xs, cond);
  auto ys = a1.y.reshape({n * h, we});
  qkv.q_suffix = apply_rope(heads_view(ex->q->forward(ys), heads, hd), rope_s);
  qkv.k_suffix = apply_rope(heads_view(ex->k->forward(ys), kvh, hd), rope_s);
  qkv.v_suffix = heads_view(ex->v->forward(ys), kvh, hd);
  // under autocast the two towers' projections share a dtype; without it they already do
  auto out = joint_attention(plan, qkv);
  // suffix stream: gated residuals, one kernel each: xs + gate * f(...)
  xs = at::addcmul(xs, a1.gate, ex->o->forward(out.suffix.reshape({n * h, heads * hd})).view({n, h, we}));
  auto a2 = ex->ada2->forward(xs, cond);
  xs = at::addcmul(xs, a2.gate, ex->mlp->forward(a2.y));
  // prefix stream (its output after the last layer is unused)
  if (!out.prefix.defined()) return {at::Tensor(), xs};
  xp = xp + lm->o->forward(out.prefix.reshape({-1, heads * hd}));
  xp = xp + lm->mlp->forward(lm->norm2->forward(xp));
  return {xp, xs};
}

at::Tensor Pi05PolicyImpl::velocity(const PolicyInputs& in, const at::Tensor& prefix, const at::Tensor& x_t,
                                    const at::Tensor& t, const PrefixCache* cache, PrefixCache* fill, at::Tensor* hidden) {
  const int64_t we = shape.expert.width;
  auto temb = time_embedding(t, we).to(x_t.device());
  auto cond = at::silu(time_out->forward(at::silu(time_in->forward(temb))));  // [n, De]
  auto xs = action_in->forward(x_t);                                         // [n, H, De]
  auto out = run_layers(in, prefix, xs, cond, cache, fill);
  if (hidden) *hidden = out;
  return action_out->forward(out);  // [n, H, A]
}

LossOut Pi05PolicyImpl::loss(const PolicyInputs& in, std::optional<at::Tensor> noise, std::optional<at::Tensor> time) {
  const auto& actions = in.actions;  // [n, H, A]
  auto opts = actions.options();
  at::Tensor eps = noise ? *noise : at::randn(actions.sizes(), opts);
  at::Tensor t = time ? *time : flow_time(at::rand({in.samples}, opts));
  auto tt = t.view({-1, 1, 1});
  auto x_t = tt * eps + (1 - tt) * actions;
  auto target = eps - actions;
  auto v = velocity(in, embed_prefix(in), x_t, t, nullptr, nullptr);
  auto err = (v.to(at::kFloat) - target).square() * in.action_mask;
  LossOut out;
  out.loss_sum = err.sum();
  out.count = in.action_mask.sum();
  out.loss = out.loss_sum / out.count.clamp_min(1);
  return out;
}

at::Tensor Pi05PolicyImpl::sample_actions(const PolicyInputs& inputs, std::optional<at::Tensor> noise) {
  at::NoGradGuard no_grad;
  PolicyInputs in = inputs;
  in.plan = inputs.plan.with_mask();  // once, not at every integration step
  auto opts = in.actions.defined() ? in.actions.options() : at::TensorOptions().device(in.images.device());
  at::Tensor x = noise ? *noise : at::randn({in.samples, shape.horizon, shape.max_action_dim}, opts.dtype(at::kFloat));
  const int steps = shape.flow_steps;
  const double dt = -1.0 / steps;
  PrefixCache cache;
  for (int i = 0; i < steps; ++i) {
    double time = 1.0 + i * dt;
    auto t = at::full({in.samples}, time, x.options());
    at::Tensor v = i == 0 ? velocity(in, embed_prefix(in), x, t, nullptr, &cache)
                          : velocity(in, at::Tensor(), x, t, &cache, nullptr);
    x = x + dt * v.to(at::kFloat);
  }
  return x;
}

PrefixCache Pi05PolicyImpl::prefix_cache(const PolicyInputs& in) {
  // one suffix pass at t = 1 fills the cache; its output is dropped
  PrefixCache cache;
  auto opts = at::TensorOptions().device(in.prefix_gather.device()).dtype(at::kFloat);
  auto x = at::zeros({in.samples, shape.horizon, shape.max_action_dim}, opts);
  velocity(in, embed_prefix(in), x, at::ones({in.samples}, opts), nullptr, &cache);
  return cache;
}

int64_t PrefixCache::bytes() const {
  int64_t b = 0;
  for (const auto* part : {&keys, &values})
    for (const auto& t : *part) b += int64_t(t.nbytes());
  return b;
}

std::shared_ptr<const PrefixState> Pi05PolicyImpl::encode_prefix(const PolicyInputs& in) {
  return std::make_shared<PrefixCache>(prefix_cache(in));
}

namespace {

const PrefixCache& as_cache(const PrefixState& prefix) {
  const auto* cache = dynamic_cast<const PrefixCache*>(&prefix);
  if (!cache) throw Error(ErrorKind::kInternal, "pi05: a prefix state of another policy type");
  return *cache;
}

}  // namespace

at::Tensor Pi05PolicyImpl::prefix_velocity(const PolicyInputs& in, const PrefixState& prefix, const at::Tensor& x_t,
                                           const at::Tensor& t) {
  const int64_t copies = x_t.size(0) / std::max<int64_t>(in.samples, 1);
  if (copies * in.samples != x_t.size(0)) throw Error(ErrorKind::kInternal, "pi05 prefix_velocity: rows not a multiple of the samples");
  if (copies == 1) return velocity_cached(in, as_cache(prefix), x_t, t);
  return velocity_cached(with_suffix_copies(in, copies), as_cache(prefix), x_t, t);
}

at::Tensor Pi05PolicyImpl::prefix_velocity_hidden(const PolicyInputs& in, const PrefixState& prefix, const at::Tensor& x_t,
                                                  const at::Tensor& t, at::Tensor& hidden) {
  const int64_t copies = x_t.size(0) / std::max<int64_t>(in.samples, 1);
  if (copies * in.samples != x_t.size(0)) throw Error(ErrorKind::kInternal, "pi05 prefix_velocity_hidden: rows not a multiple of the samples");
  if (copies == 1) return velocity_cached(in, as_cache(prefix), x_t, t, &hidden);
  return velocity_cached(with_suffix_copies(in, copies), as_cache(prefix), x_t, t, &hidden);
}

at::Tensor Pi05PolicyImpl::prefix_features(const PolicyInputs& in, const PrefixState& prefix) {
  const auto& cache = as_cache(prefix);
  if (cache.values.empty()) throw Error(ErrorKind::kInternal, "pi05 prefix_features: empty prefix cache");
  if (in.plan.backend != AttentionBackend::kVarlen) throw Error(ErrorKind::kInternal, "pi05 prefix_features: needs the varlen layout");
  at::NoGradGuard no_grad;
  const auto& v = cache.values.back();  // [Tp, kv_heads, head_dim]
  return segment_means(v.reshape({v.size(0), -1}).to(at::kFloat), in.plan.cu_prefix, in.samples);
}

bool Pi05PolicyImpl::is_prefix_parameter(const std::string& name) const { return model::is_prefix_parameter(name); }


bool keeps_fp32(const std::string& name) {
  for (const char* part : {"norm", "ada1.", "ada2.", "vision.patch_", "vision.position_embed"})
    if (name.find(part) != std::string::npos) return true;
  return false;
}

std::vector<std::string> Pi05PolicyImpl::fp8_layer_names() {
  std::vector<std::string> names;
  for (const auto& m : named_modules("", /*include_self=*/false))
    if (auto* d = m.value()->as<DenseImpl>(); d && d->fp8) names.push_back(m.key());
  return names;
}

std::vector<std::string> fp8_layer_names(Pi05Policy& policy) { return policy->fp8_layer_names(); }

bool Pi05PolicyImpl::to_param_dtype(at::ScalarType dtype) {
  at::NoGradGuard no_grad;
  for (auto& p : named_parameters()) {
    auto target = keeps_fp32(p.key()) ? at::kFloat : dtype;
    if (p.value().scalar_type() != target) p.value().set_data(p.value().to(target));
  }
  return true;
}

void set_param_dtype(Pi05Policy& policy, at::ScalarType dtype) { policy->to_param_dtype(dtype); }

bool is_prefix_parameter(const std::string& name) {
  for (const char* p : {"vision.", "projector.", "lm."})
    if (name.rfind(p, 0) == 0) return true;
  return name == "embedding";
}

}  // namespace ember::model
