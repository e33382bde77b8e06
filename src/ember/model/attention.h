// pi0.5's attention over a batch of samples, each a prefix (image + prompt tokens) and a
// suffix (H action tokens), in one of two layouts (see src/ember/data/packer.h for the rule):
//
//   varlen   samples back to back, no padding. Two variable-length calls per layer:
//              prefix queries x prefix keys           (cu_prefix, cu_prefix)
//              suffix queries x [prefix ; suffix] keys (cu_suffix, cu_joint)
//            On CUDA (bf16/fp16) FlashAttention's varlen kernel (at::_flash_attention_forward,
//            differentiable); elsewhere a reference that loops over samples.
//   padded   every sample padded to the same [prefix_len ; suffix_len] and one masked
//            scaled_dot_product_attention call (the baseline as LeRobot runs pi0.5).
//
// Both compute the same function on the real tokens.
#pragma once

#include <ATen/ATen.h>

#include <string_view>

namespace ember::model {

enum class AttentionBackend { kVarlen, kPadded };

AttentionBackend parse_attention_backend(std::string_view name);  // "varlen" | "padded"
const char* attention_backend_name(AttentionBackend backend);

// Describes one batch's attention. Tensors live on the batch's device.
struct AttentionPlan {
  AttentionBackend backend = AttentionBackend::kVarlen;
  int64_t samples = 0;
  // varlen
  at::Tensor cu_prefix;    // [n+1] int32: prefix tokens of sample i are [cu_prefix[i], cu_prefix[i+1])
  at::Tensor cu_suffix;    // [n+1] int32
  at::Tensor cu_joint;     // [n+1] int32: keys of sample i's action queries (its prefix + suffix)
  at::Tensor joint_index;  // [Tp + Ts] int64: row of each joint key in cat(prefix, suffix)
  int64_t max_prefix = 0, max_suffix = 0, max_joint = 0;
  std::vector<int64_t> prefix_lens, suffix_lens;  // host copies, for the reference path
  // filler tokens after the samples' prefixes (CollateOptions::prefix_multiple): one more
  // segment in cu_prefix (then [n+2]), attending to itself only, in no sample's joint keys, so
  // nothing real depends on them and their gradients are zero
  int64_t prefix_pad = 0;
  // padded: prefix rows are [n, prefix_len], suffix rows [n, suffix_len]
  int64_t prefix_len = 0, suffix_len = 0;
  at::Tensor valid;  // [n, prefix_len + suffix_len] bool: true = a real token
  // [n, 1, L, L] bool, true = attend: made from `valid` by with_mask(), on valid's device (on a
  // GPU, not on the loader's thread: for 128 samples it is 132 MB)
  at::Tensor mask;

  AttentionPlan to(const at::Device& device) const;
  // This plan with the padded layout's mask made (once per forward pass); any other plan as is.
  AttentionPlan with_mask() const;
};

// Queries [T, heads, head_dim]; keys and values [T, kv_heads, head_dim] (heads a multiple of
// kv_heads). Prefix tensors hold Tp rows, suffix tensors Ts rows, in the plan's layout.
struct JointQKV {
  at::Tensor q_prefix, k_prefix, v_prefix;
  at::Tensor q_suffix, k_suffix, v_suffix;
};

struct JointOut {
  at::Tensor prefix;  // [Tp, heads, head_dim]; undefined when the prefix was not given
  at::Tensor suffix;  // [Ts, heads, head_dim]
};

// The layer's attention. With q_prefix undefined (inference with cached prefix keys/values),
// only the suffix queries are computed. Scale 1/sqrt(head_dim).
JointOut joint_attention(const AttentionPlan& plan, const JointQKV& qkv);

// Attention within segments of packed rows: the queries of segment i, q[cu_q[i], cu_q[i+1]), attend
// to its keys k[cu_k[i], cu_k[i+1]) (lens_* are the host copies of the segment lengths, max_* their
// maxima; rows past the last segment are read by nobody). q [Tq, heads, d], k and v [Tk, kv_heads,
// d]; returns [Tq, heads, d]. causal: query j of a segment sees its keys 0..j only (equal query and
// key lengths). On CUDA in bf16/fp16 FlashAttention's varlen kernel, elsewhere a loop over segments.
at::Tensor segment_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& cu_q,
                             const at::Tensor& cu_k, int64_t max_q, int64_t max_k, const std::vector<int64_t>& lens_q,
                             const std::vector<int64_t>& lens_k, bool causal = false);

// Bidirectional attention within each of n images (the vision tower): q, k, v [n, heads, P, d].
at::Tensor image_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

}  // namespace ember::model
