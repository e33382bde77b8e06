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

}  // namespace ember::data
