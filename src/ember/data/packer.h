// Packing of variable-length VLA samples into token-budgeted batches, and the two layouts a
// batch can take on the device:
//
//   packed   tokens of all samples back to back, [total_tokens, ...], with cu_seqlens (int32,
//            [n+1]) and a host-side max_seqlen: FlashAttention varlen's layout.
//   padded   [batch, max_len, ...] with a mask: the baseline benchmarks compare against.
//
// A sample is a prefix (image tokens of the cameras present, then prompt tokens; absent cameras
// contribute none) followed by a suffix (the action horizon H). Within a sample, tokens are laid
// out prefix first, then suffix. The attention rule is pi0.5's:
//   - prefix tokens attend bidirectionally to the prefix of their own sample, never to actions;
//   - action (suffix) tokens attend to the prefix and the actions of their own sample;
//   - no token attends across samples, and padding neither attends nor is attended to.
// The dense masks below materialise that rule for tests and CPU references; they are
// O(total_tokens^2) and not meant for training.
//
// Everything here is a pure function of its arguments: deterministic and thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ember::data {

// One sample to pack. length() = prefix_len + suffix_len tokens.
struct PackSample {
  int64_t id = 0;          // the caller's id (e.g. the frame index); only used in messages
  int32_t prefix_len = 0;  // image tokens of present cameras + prompt tokens
  int32_t suffix_len = 0;  // action tokens (the horizon H)
  int64_t length() const { return int64_t(prefix_len) + suffix_len; }
};

struct PackOptions {
  // Samples are packed in consecutive windows of this many samples of the sampler's order;
  // 0 packs the whole input as one window (best fill, order not kept).
  int64_t window = 64;
  // At most this many samples per batch; 0 = no limit.
  int64_t max_samples_per_batch = 0;
};

// A batch: indices into the samples given to pack(), ascending (the sampler's order).
using PackBatch = std::vector<int64_t>;

// Bin-packs samples (in the sampler's order) into batches of at most token_budget tokens each,
// never splitting a sample.
//
// Algorithm: first-fit decreasing within windows. The input is cut into consecutive windows
// of options.window samples. Within a window, samples are taken longest first (ties: earlier
// first) and each goes into the first batch opened in this window that still has room, else
// into a new batch. Batches never mix windows, so every batch holds samples of one window and
// the batches of window w all come before those of window w+1: the output stays within one
// window of the sampler's order. Within a window, batches are ordered by their first sample.
// The result is a deterministic function of the arguments; every sample appears exactly once.
//
// Throws Error kInvalidArgument when token_budget < 1, a length is negative or zero, or a
// sample is longer than token_budget (naming its index, id and lengths), or options are
// negative.
std::vector<PackBatch> pack(std::span<const PackSample> samples, int64_t token_budget,
                            const PackOptions& options = {});

// Consecutive batches of batch_size samples in order (the last may be shorter): the fixed-size
// batching the padded baseline uses. Throws kInvalidArgument if batch_size < 1.
std::vector<PackBatch> fixed_size_batches(int64_t num_samples, int64_t batch_size);

// The packed layout of one batch. n = batch size, T = total_tokens.
struct PackedLayout {
  std::vector<int64_t> sample_indices;     // [n] indices into the samples, as given
  std::vector<int32_t> cu_seqlens;         // [n+1] whole samples (prefix + suffix)
  int32_t max_seqlen = 0;                  // max over samples of prefix + suffix
  // Prefix-only and suffix-only offsets, for pi0.5's attention as two varlen calls:
  //   prefix queries (gathered by prefix_token_index) against prefix keys, both cu_seqlens_prefix;
  //   suffix queries (gathered by suffix_token_index, cu_seqlens_q = cu_seqlens_suffix) against
  //   all keys of the packed batch (cu_seqlens_k = cu_seqlens), non-causal.
  std::vector<int32_t> cu_seqlens_prefix;  // [n+1]
  int32_t max_seqlen_prefix = 0;
  std::vector<int32_t> cu_seqlens_suffix;  // [n+1]
  int32_t max_seqlen_suffix = 0;
  std::vector<int32_t> prefix_token_index; // [total_prefix] packed token of each prefix token
  std::vector<int32_t> suffix_token_index; // [total_suffix] packed token of each action token
  std::vector<int32_t> positions;          // [T] position within its own sample, from 0
  std::vector<int32_t> segment_ids;        // [T] sample's index within the batch, 0..n-1
  std::vector<uint8_t> is_suffix;          // [T] 1 for action tokens

  int64_t batch_size() const { return int64_t(sample_indices.size()); }
  int64_t total_tokens() const { return int64_t(positions.size()); }
};

// Lays out one batch (indices into samples, e.g. one result of pack()). Throws kInvalidArgument
// for an index out of range, an invalid sample, or more than INT32_MAX tokens.
PackedLayout make_packed_layout(std::span<const PackSample> samples, std::span<const int64_t> batch);

// The padded layout of one batch: sample b occupies row b, columns [0, length_b), padding after.
struct PaddedLayout {
  int64_t batch = 0;
  int64_t max_len = 0;
  std::vector<int64_t> sample_indices;     // [batch]
  std::vector<int32_t> lengths;            // [batch] real tokens per row
  std::vector<uint8_t> valid;              // [batch, max_len] 1 = real token
  std::vector<int32_t> positions;          // [batch, max_len] position in the sample; 0 at padding
  std::vector<uint8_t> is_suffix;          // [batch, max_len] 1 = action token; 0 at padding
  // [batch, max_len (query), max_len (key)] 1 = may attend. Padding rows are all 0: a kernel
  // must treat fully masked rows as zero output, not NaN.
  std::vector<uint8_t> attention_mask;
};

PaddedLayout make_padded_layout(std::span<const PackSample> samples, std::span<const int64_t> batch);

// pi0.5's rule for two tokens of the same sample.
inline bool may_attend(bool query_is_suffix, bool key_is_suffix) {
  return query_is_suffix || !key_is_suffix;
}

// The mask of one sample alone: [L, L] row-major (query, key), L = prefix_len + suffix_len.
std::vector<uint8_t> sample_attention_mask(const PackSample& sample);

// The dense mask of a packed batch: [T, T] row-major (query, key), 1 = may attend.
std::vector<uint8_t> packed_attention_mask(const PackedLayout& layout);

// Tokens and attention work of a set of batches, packed vs padded.
struct PackingStats {
  int64_t batches = 0;
  int64_t samples = 0;
  int64_t real_tokens = 0;        // sum of sample lengths
  int64_t padded_tokens = 0;      // sum over batches of batch * max_len (computed when padded)
  int64_t packed_tokens = 0;      // sum over batches of total_tokens (= real_tokens)
  int64_t real_attention = 0;     // (query, key) pairs the rule allows
  int64_t padded_attention = 0;   // sum over batches of batch * max_len^2
  int64_t packed_attention = 0;   // sum over samples of length^2 (varlen's per-sample blocks)
  double padded_padding_fraction() const;  // 1 - real_tokens / padded_tokens
  double packed_padding_fraction() const;  // 1 - real_tokens / packed_tokens (0)
  // Fill of the token budget: real_tokens / (batches * token_budget).
  double budget_fill(int64_t token_budget) const;
};

// Throws kInvalidArgument like make_packed_layout.
PackingStats packing_stats(std::span<const PackSample> samples, std::span<const PackBatch> batches);

}  // namespace ember::data
