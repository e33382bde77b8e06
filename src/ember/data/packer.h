// Packing of variable-length VLA samples into token-budgeted batches (which samples go
// together); the policy's processor lays each batch out for the device (model/policy_inputs.h:
// the packed layout with cu_seqlens, or the padded baseline). A sample is a prefix (image tokens
// of the cameras present, then prompt tokens; absent cameras contribute none) followed by a
// suffix (the action horizon H).
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

}  // namespace ember::data
