#include "ember/data/packer.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "ember/core/error.h"

namespace ember::data {
namespace {

std::string describe(const PackSample& s, int64_t index) {
  return "sample " + std::to_string(index) + " (id " + std::to_string(s.id) + ", prefix " +
         std::to_string(s.prefix_len) + " + suffix " + std::to_string(s.suffix_len) + " tokens)";
}

void check_sample(const PackSample& s, int64_t index) {
  if (s.prefix_len < 0 || s.suffix_len < 0 || s.length() < 1)
    fail(ErrorKind::kInvalidArgument,
         "packer: " + describe(s, index) + ": lengths must be >= 0 with at least one token");
}

const PackSample& sample_at(std::span<const PackSample> samples, int64_t index) {
  if (index < 0 || index >= int64_t(samples.size()))
    fail(ErrorKind::kInvalidArgument, "packer: batch index " + std::to_string(index) +
                                          " out of range [0, " + std::to_string(samples.size()) + ")");
  const PackSample& s = samples[size_t(index)];
  check_sample(s, index);
  return s;
}

// First-fit decreasing over samples [begin, end); appends this window's batches to out.
void pack_window(std::span<const PackSample> samples, int64_t begin, int64_t end,
                 int64_t token_budget, int64_t max_samples, std::vector<PackBatch>& out) {
  std::vector<int64_t> order(size_t(end - begin));
  std::iota(order.begin(), order.end(), begin);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return samples[size_t(a)].length() > samples[size_t(b)].length();
  });
  std::vector<PackBatch> bins;
  std::vector<int64_t> used;
  for (int64_t i : order) {
    const int64_t len = samples[size_t(i)].length();
    size_t b = 0;
    while (b < bins.size() &&
           (used[b] + len > token_budget || (max_samples > 0 && int64_t(bins[b].size()) >= max_samples)))
      ++b;
    if (b == bins.size()) {
      bins.emplace_back();
      used.push_back(0);
    }
    bins[b].push_back(i);
    used[b] += len;
  }
  // batches in the sampler's order: samples ascending, batches by their first sample
  for (PackBatch& bin : bins) std::sort(bin.begin(), bin.end());
  std::sort(bins.begin(), bins.end(), [](const PackBatch& a, const PackBatch& b) { return a[0] < b[0]; });
  for (PackBatch& bin : bins) out.push_back(std::move(bin));
}

}  // namespace

std::vector<PackBatch> pack(std::span<const PackSample> samples, int64_t token_budget,
                            const PackOptions& options) {
  if (token_budget < 1)
    fail(ErrorKind::kInvalidArgument, "packer: token_budget must be >= 1, got " + std::to_string(token_budget));
  if (options.window < 0 || options.max_samples_per_batch < 0)
    fail(ErrorKind::kInvalidArgument, "packer: window and max_samples_per_batch must be >= 0, got " +
                                          std::to_string(options.window) + " and " +
                                          std::to_string(options.max_samples_per_batch));
  // check every sample before packing, so the error does not depend on the window
  const int64_t n = int64_t(samples.size());
  for (int64_t i = 0; i < n; ++i) {
    check_sample(samples[size_t(i)], i);
    if (samples[size_t(i)].length() > token_budget)
      fail(ErrorKind::kInvalidArgument, "packer: " + describe(samples[size_t(i)], i) + " is " +
                                            std::to_string(samples[size_t(i)].length()) +
                                            " tokens, longer than the token budget " +
                                            std::to_string(token_budget));
  }
  std::vector<PackBatch> out;
  const int64_t window = options.window == 0 ? std::max<int64_t>(n, 1) : options.window;
  for (int64_t begin = 0; begin < n; begin += window)
    pack_window(samples, begin, std::min(n, begin + window), token_budget, options.max_samples_per_batch, out);
  return out;
}

std::vector<PackBatch> fixed_size_batches(int64_t num_samples, int64_t batch_size) {
  if (batch_size < 1)
    fail(ErrorKind::kInvalidArgument, "packer: batch_size must be >= 1, got " + std::to_string(batch_size));
  std::vector<PackBatch> out;
  for (int64_t begin = 0; begin < num_samples; begin += batch_size) {
    PackBatch b(size_t(std::min(batch_size, num_samples - begin)));
    std::iota(b.begin(), b.end(), begin);
    out.push_back(std::move(b));
  }
  return out;
}

PackedLayout make_packed_layout(std::span<const PackSample> samples, std::span<const int64_t> batch) {
  // offsets first, so overflow is caught before anything is allocated
  int64_t total = 0;
  for (int64_t index : batch) total += sample_at(samples, index).length();
  if (total > std::numeric_limits<int32_t>::max())
    fail(ErrorKind::kInvalidArgument, "packer: batch of " + std::to_string(total) +
                                          " tokens does not fit int32 cu_seqlens");

  PackedLayout l;
  l.sample_indices.assign(batch.begin(), batch.end());
  l.cu_seqlens.assign(1, 0);
  l.cu_seqlens_prefix.assign(1, 0);
  l.cu_seqlens_suffix.assign(1, 0);
  l.positions.reserve(size_t(total));
  l.segment_ids.reserve(size_t(total));
  l.is_suffix.reserve(size_t(total));
  for (size_t seg = 0; seg < batch.size(); ++seg) {
    const PackSample& s = samples[size_t(batch[seg])];
    const int32_t len = int32_t(s.length());
    const int32_t start = l.cu_seqlens.back();
    for (int32_t t = 0; t < len; ++t) {
      const bool suffix = t >= s.prefix_len;
      l.positions.push_back(t);
      l.segment_ids.push_back(int32_t(seg));
      l.is_suffix.push_back(suffix ? 1 : 0);
      (suffix ? l.suffix_token_index : l.prefix_token_index).push_back(start + t);
    }
    l.cu_seqlens.push_back(start + len);
    l.cu_seqlens_prefix.push_back(l.cu_seqlens_prefix.back() + s.prefix_len);
    l.cu_seqlens_suffix.push_back(l.cu_seqlens_suffix.back() + s.suffix_len);
    l.max_seqlen = std::max(l.max_seqlen, len);
    l.max_seqlen_prefix = std::max(l.max_seqlen_prefix, s.prefix_len);
    l.max_seqlen_suffix = std::max(l.max_seqlen_suffix, s.suffix_len);
  }
  return l;
}

PaddedLayout make_padded_layout(std::span<const PackSample> samples, std::span<const int64_t> batch) {
  PaddedLayout p;
  p.batch = int64_t(batch.size());
  for (int64_t index : batch) {
    const PackSample& s = sample_at(samples, index);
    p.sample_indices.push_back(index);
    p.lengths.push_back(int32_t(s.length()));
    p.max_len = std::max(p.max_len, s.length());
  }
  const size_t L = size_t(p.max_len);
  p.valid.assign(size_t(p.batch) * L, 0);
  p.positions.assign(size_t(p.batch) * L, 0);
  p.is_suffix.assign(size_t(p.batch) * L, 0);
  p.attention_mask.assign(size_t(p.batch) * L * L, 0);
  for (size_t b = 0; b < batch.size(); ++b) {
    const PackSample& s = samples[size_t(batch[b])];
    const size_t len = size_t(p.lengths[b]);
    for (size_t t = 0; t < len; ++t) {
      p.valid[b * L + t] = 1;
      p.positions[b * L + t] = int32_t(t);
      p.is_suffix[b * L + t] = t >= size_t(s.prefix_len) ? 1 : 0;
    }
    uint8_t* mask = p.attention_mask.data() + b * L * L;
    for (size_t q = 0; q < len; ++q)
      for (size_t k = 0; k < len; ++k)
        mask[q * L + k] = may_attend(p.is_suffix[b * L + q], p.is_suffix[b * L + k]) ? 1 : 0;
  }
  return p;
}

std::vector<uint8_t> sample_attention_mask(const PackSample& s) {
  check_sample(s, 0);
  const size_t L = size_t(s.length());
  const size_t P = size_t(s.prefix_len);
  std::vector<uint8_t> mask(L * L);
  for (size_t q = 0; q < L; ++q)
    for (size_t k = 0; k < L; ++k) mask[q * L + k] = may_attend(q >= P, k >= P) ? 1 : 0;
  return mask;
}

std::vector<uint8_t> packed_attention_mask(const PackedLayout& l) {
  const size_t T = size_t(l.total_tokens());
  std::vector<uint8_t> mask(T * T, 0);
  for (size_t q = 0; q < T; ++q)
    for (size_t k = 0; k < T; ++k)
      mask[q * T + k] = l.segment_ids[q] == l.segment_ids[k] && may_attend(l.is_suffix[q], l.is_suffix[k]);
  return mask;
}

double PackingStats::padded_padding_fraction() const {
  return padded_tokens == 0 ? 0.0 : 1.0 - double(real_tokens) / double(padded_tokens);
}
double PackingStats::packed_padding_fraction() const {
  return packed_tokens == 0 ? 0.0 : 1.0 - double(real_tokens) / double(packed_tokens);
}
double PackingStats::budget_fill(int64_t token_budget) const {
  return batches == 0 || token_budget <= 0 ? 0.0 : double(real_tokens) / double(batches * token_budget);
}

PackingStats packing_stats(std::span<const PackSample> samples, std::span<const PackBatch> batches) {
  PackingStats st;
  st.batches = int64_t(batches.size());
  for (const PackBatch& batch : batches) {
    int64_t max_len = 0;
    for (int64_t index : batch) {
      const PackSample& s = sample_at(samples, index);
      const int64_t len = s.length();
      st.samples += 1;
      st.real_tokens += len;
      st.packed_tokens += len;
      st.packed_attention += len * len;
      // prefix rows see the prefix, suffix rows see the whole sample
      st.real_attention += int64_t(s.prefix_len) * s.prefix_len + int64_t(s.suffix_len) * len;
      max_len = std::max(max_len, len);
    }
    st.padded_tokens += int64_t(batch.size()) * max_len;
    st.padded_attention += int64_t(batch.size()) * max_len * max_len;
  }
  return st;
}

}  // namespace ember::data
