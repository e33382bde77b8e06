#include "ember/model/attention.h"

#include <cmath>
#include <string>

#include "ember/core/error.h"

namespace ember::model {

AttentionBackend parse_attention_backend(std::string_view name) {
  if (name == "varlen") return AttentionBackend::kVarlen;
  if (name == "padded") return AttentionBackend::kPadded;
  throw Error(ErrorKind::kInvalidArgument,
              "unknown attention backend '" + std::string(name) + "' (expected varlen or padded)");
}

const char* attention_backend_name(AttentionBackend backend) {
  return backend == AttentionBackend::kVarlen ? "varlen" : "padded";
}

AttentionPlan AttentionPlan::to(const at::Device& device) const {
  AttentionPlan p = *this;
  auto move = [&](at::Tensor& t) {
    if (t.defined()) t = t.to(device, /*non_blocking=*/true);
  };
  move(p.cu_prefix);
  move(p.cu_suffix);
  move(p.cu_joint);
  move(p.joint_index);
  move(p.valid);
  move(p.mask);
  return p;
}

AttentionPlan AttentionPlan::with_mask() const {
  if (backend != AttentionBackend::kPadded || mask.defined() || !valid.defined()) return *this;
  AttentionPlan p = *this;
  const int64_t lp = prefix_len, h = suffix_len, l = lp + h;
  // pi0.5's rule on real keys; a padding query attends to its sample's real prefix (its
  // output is never used; a fully masked row would give NaN in the fused kernels)
  auto is_suffix = at::zeros({l}, valid.options());
  is_suffix.narrow(0, lp, h).fill_(true);
  auto key_ok = valid.unsqueeze(1);                                                      // [n, 1, L]
  auto rule = is_suffix.unsqueeze(1).logical_or(is_suffix.logical_not().unsqueeze(0));  // [L(q), L(k)]
  auto prefix_key = valid.logical_and(is_suffix.logical_not().unsqueeze(0)).unsqueeze(1);  // [n, 1, L]
  auto query_ok = valid.unsqueeze(2);                                                     // [n, L, 1]
  p.mask = at::where(query_ok, key_ok.logical_and(rule.unsqueeze(0)), prefix_key).unsqueeze(1).contiguous();
  return p;
}

namespace {

// [T, kv_heads, d] -> [T, heads, d] by repeating each key/value head
at::Tensor repeat_kv(const at::Tensor& x, int64_t heads) {
  int64_t kv = x.size(-2);
  if (kv == heads) return x;
  return x.repeat_interleave(heads / kv, -2);
}

bool use_flash(const at::Tensor& q) {
  return q.is_cuda() && (q.scalar_type() == at::kBFloat16 || q.scalar_type() == at::kHalf);
}

}  // namespace

at::Tensor segment_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& cu_q,
                             const at::Tensor& cu_k, int64_t max_q, int64_t max_k, const std::vector<int64_t>& lens_q,
                             const std::vector<int64_t>& lens_k, bool causal) {
  if (use_flash(q)) {
    auto out = at::_flash_attention_forward(q, k, v, cu_q, cu_k, max_q, max_k, 0.0, causal,
                                            /*return_debug_mask=*/false);
    return std::get<0>(out);
  }
  // reference: one dense call per sample. The segments are taken by one split (its backward is
  // one concatenation), not a narrow each (each narrow's backward fills a gradient the size of
  // the whole tensor: quadratic in the number of segments)
  const int64_t heads = q.size(1);
  auto segments = [](const at::Tensor& t, const std::vector<int64_t>& lens) {
    std::vector<int64_t> sizes = lens;
    int64_t used = 0;
    for (int64_t l : lens) used += l;
    sizes.push_back(t.size(0) - used);  // rows past the last segment, read by nobody
    return t.split_with_sizes(sizes, 0);
  };
  auto qs = segments(q, lens_q), ks = segments(k, lens_k), vs = segments(v, lens_k);
  std::vector<at::Tensor> outs;
  outs.reserve(lens_q.size());
  for (size_t i = 0; i < lens_q.size(); ++i) {
    auto qi = qs[i].transpose(0, 1).unsqueeze(0);  // [1, h, Lq, d]
    auto ki = repeat_kv(ks[i], heads).transpose(0, 1).unsqueeze(0);
    auto vi = repeat_kv(vs[i], heads).transpose(0, 1).unsqueeze(0);
    outs.push_back(at::scaled_dot_product_attention(qi, ki, vi, {}, 0.0, causal).squeeze(0).transpose(0, 1));
  }
  return at::cat(outs, 0);
}

namespace {

JointOut varlen_attention(const AttentionPlan& p, const JointQKV& x) {
  JointOut out;
  if (x.q_prefix.defined()) {
    auto lens = p.prefix_lens;  // the filler's segment last, where there is one
    if (p.prefix_pad > 0) lens.push_back(p.prefix_pad);
    out.prefix = segment_attention(x.q_prefix, x.k_prefix, x.v_prefix, p.cu_prefix, p.cu_prefix, p.max_prefix,
                             p.max_prefix, lens, lens, false);
  }
  auto k = at::cat({x.k_prefix, x.k_suffix}, 0).index_select(0, p.joint_index);
  auto v = at::cat({x.v_prefix, x.v_suffix}, 0).index_select(0, p.joint_index);
  std::vector<int64_t> joint(p.prefix_lens.size());
  for (size_t i = 0; i < joint.size(); ++i) joint[i] = p.prefix_lens[i] + p.suffix_lens[i];
  out.suffix = segment_attention(x.q_suffix, k, v, p.cu_suffix, p.cu_joint, p.max_suffix, p.max_joint, p.suffix_lens, joint, false);
  return out;
}

JointOut padded_attention(const AttentionPlan& p, const JointQKV& x) {
  const int64_t n = p.samples, lp = p.prefix_len, ls = p.suffix_len;
  const int64_t heads = x.q_suffix.size(1), d = x.q_suffix.size(2);
  const bool with_prefix = x.q_prefix.defined();
  // [n, L, h, d] -> [n, h, L, d]
  auto rows = [&](const at::Tensor& t, int64_t len) { return t.view({n, len, t.size(1), d}); };
  auto k = repeat_kv(at::cat({rows(x.k_prefix, lp), rows(x.k_suffix, ls)}, 1), heads).transpose(1, 2);
  auto v = repeat_kv(at::cat({rows(x.v_prefix, lp), rows(x.v_suffix, ls)}, 1), heads).transpose(1, 2);
  at::Tensor q, mask;
  if (with_prefix) {
    q = at::cat({rows(x.q_prefix, lp), rows(x.q_suffix, ls)}, 1).transpose(1, 2);
    mask = p.mask;
  } else {
    q = rows(x.q_suffix, ls).transpose(1, 2);
    mask = p.mask.narrow(2, lp, ls);
  }
  auto o = at::scaled_dot_product_attention(q, k, v, mask).transpose(1, 2);  // [n, Lq, h, d]
  JointOut out;
  if (with_prefix) {
    out.prefix = o.narrow(1, 0, lp).reshape({n * lp, heads, d});
    out.suffix = o.narrow(1, lp, ls).reshape({n * ls, heads, d});
  } else {
    out.suffix = o.reshape({n * ls, heads, d});
  }
  return out;
}

}  // namespace

JointOut joint_attention(const AttentionPlan& plan, const JointQKV& qkv) {
  if (plan.backend == AttentionBackend::kVarlen) return varlen_attention(plan, qkv);
  // callers make the mask once per forward pass (with_mask); one that did not gets it here
  return plan.mask.defined() ? padded_attention(plan, qkv) : padded_attention(plan.with_mask(), qkv);
}

at::Tensor image_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  // On CUDA in 16-bit: FlashAttention itself. SDPA would pick cuDNN's kernels there, whose plans
  // are built for each new shape, and the number of images changes from batch to batch when
  // cameras are missing. FlashAttention takes the strided q, k, v views as they are.
  const auto dtype = q.scalar_type();
  if (q.is_cuda() && (dtype == at::kBFloat16 || dtype == at::kHalf) && q.size(-1) % 8 == 0 && q.size(-1) <= 256)
    return std::get<0>(at::_scaled_dot_product_flash_attention(q, k, v));
  return at::scaled_dot_product_attention(q, k, v);
}

}  // namespace ember::model
