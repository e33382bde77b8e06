#include "ember/data/sampler.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "ember/core/error.h"

namespace ember::data {

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t state) : state_(state) {}
  uint64_t next() { return mix64(state_ += kGolden); }
  // Unbiased j in [0, bound), bound >= 1: reject r below 2^64 mod bound.
  uint64_t uniform(uint64_t bound) {
    const uint64_t threshold = (0 - bound) % bound;
    uint64_t r = next();
    while (r < threshold) r = next();
    return r % bound;
  }

 private:
  uint64_t state_;
};

[[noreturn]] void invalid(const std::string& message) {
  fail(ErrorKind::kInvalidArgument, "FrameSampler: " + message);
}

int64_t field(const nlohmann::json& j, const char* name) {
  const std::string what = std::string("loader position: \"") + name + "\"";
  if (!j.is_object() || !j.contains(name)) invalid(what + " is missing");
  const nlohmann::json& v = j.at(name);
  if (!v.is_number_integer()) invalid(what + " must be an integer, got " + v.dump());
  const int64_t x = v.get<int64_t>();
  if (x < 0) invalid(what + " must be >= 0, got " + std::to_string(x));
  return x;
}

}  // namespace

void to_json(nlohmann::json& j, const LoaderPosition& p) {
  j = nlohmann::json{{"epoch", p.epoch}, {"consumed", p.consumed}};
}

void from_json(const nlohmann::json& j, LoaderPosition& p) {
  p.epoch = field(j, "epoch");
  p.consumed = field(j, "consumed");
}

FrameSampler::FrameSampler(const std::vector<Episode>& episodes, SamplerOptions options)
    : options_(std::move(options)) {
  if (options_.drop_n_first_frames < 0 || options_.drop_n_last_frames < 0) {
    invalid("drop_n_first_frames and drop_n_last_frames must be >= 0, got " +
            std::to_string(options_.drop_n_first_frames) + " and " +
            std::to_string(options_.drop_n_last_frames));
  }
  // the chosen episodes, each checked to exist
  std::set<int64_t> chosen(options_.episodes.begin(), options_.episodes.end());
  for (int64_t index : chosen) {
    bool found = std::any_of(episodes.begin(), episodes.end(),
                             [&](const Episode& e) { return e.index == index; });
    if (!found) invalid("episode " + std::to_string(index) + " is not in the dataset");
  }
  // each episode's frames less those dropped at either end
  for (const Episode& e : episodes) {
    if (!chosen.empty() && !chosen.count(e.index)) continue;
    const int64_t from = e.from_index + options_.drop_n_first_frames;
    const int64_t to = e.to_index - options_.drop_n_last_frames;
    for (int64_t f = from; f < to; ++f) eligible_.push_back(f);
  }
  std::sort(eligible_.begin(), eligible_.end());
  if (options_.shard_window < 0) invalid("shard_window must be >= 0, got " + std::to_string(options_.shard_window));
  if (!std::is_sorted(options_.shard_starts.begin(), options_.shard_starts.end()) ||
      (!options_.shard_starts.empty() && !eligible_.empty() && options_.shard_starts.front() > eligible_.front()))
    invalid("shard_starts must ascend from at most the first frame");
}

std::vector<int64_t> FrameSampler::order(int64_t epoch) const {
  if (epoch < 0) invalid("epoch must be >= 0, got " + std::to_string(epoch));
  std::vector<int64_t> out = eligible_;
  if (!options_.shuffle) return out;
  SplitMix64 rng(mix64(options_.seed) ^ static_cast<uint64_t>(epoch));
  auto permute = [&rng](int64_t* first, size_t n) {
    for (size_t i = n; i > 1; --i) std::swap(first[i - 1], first[rng.uniform(i)]);
  };
  if (options_.shard_window <= 0 || options_.shard_starts.empty()) {
    permute(out.data(), out.size());
    return out;
  }
  // the shards permuted, then each window of them permuted within
  const std::vector<int64_t>& starts = options_.shard_starts;
  std::vector<int64_t> shards(starts.size());
  for (size_t s = 0; s < shards.size(); ++s) shards[s] = int64_t(s);
  permute(shards.data(), shards.size());
  auto frames_of = [&](int64_t s) {  // eligible frames of shard s: [begin, end) of eligible_
    auto begin = std::lower_bound(eligible_.begin(), eligible_.end(), starts[size_t(s)]);
    auto end = size_t(s) + 1 < starts.size() ? std::lower_bound(begin, eligible_.end(), starts[size_t(s) + 1]) : eligible_.end();
    return std::make_pair(begin, end);
  };
  out.clear();
  for (size_t w = 0; w < shards.size(); w += size_t(options_.shard_window)) {
    const size_t from = out.size();
    for (size_t k = w; k < std::min(shards.size(), w + size_t(options_.shard_window)); ++k) {
      auto [begin, end] = frames_of(shards[k]);
      out.insert(out.end(), begin, end);
    }
    permute(out.data() + from, out.size() - from);
  }
  return out;
}

std::shared_ptr<const std::vector<int64_t>> FrameSampler::cached_order(int64_t epoch) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cached_epoch_ != epoch || !cached_) {
    cached_ = std::make_shared<const std::vector<int64_t>>(order(epoch));
    cached_epoch_ = epoch;
  }
  return cached_;
}

SamplerBatch FrameSampler::next_batch(const LoaderPosition& position, int64_t global_batch,
                                      int rank, int world_size) const {
  // check the request
  const int64_t n = size();
  if (n == 0) invalid("no eligible frames (every episode is shorter than the frames dropped)");
  if (global_batch < 1) invalid("global batch must be >= 1, got " + std::to_string(global_batch));
  if (world_size < 1) invalid("world size must be >= 1, got " + std::to_string(world_size));
  if (rank < 0 || rank >= world_size) {
    invalid("rank " + std::to_string(rank) + " is outside [0, " + std::to_string(world_size) + ")");
  }
  if (global_batch % world_size != 0) {
    invalid("global batch " + std::to_string(global_batch) + " is not a multiple of world size " +
            std::to_string(world_size));
  }
  if (options_.drop_last_batch && global_batch > n) {
    invalid("drop_last_batch with global batch " + std::to_string(global_batch) +
            " larger than the epoch (" + std::to_string(n) + " frames) yields no batch");
  }
  if (position.epoch < 0 || position.consumed < 0) {
    invalid("position must be >= 0, got epoch " + std::to_string(position.epoch) +
            ", consumed " + std::to_string(position.consumed));
  }

  // a finished epoch (or a too-short remainder under drop_last_batch) starts the next one
  LoaderPosition at = position;
  const bool short_tail = options_.drop_last_batch && n - at.consumed < global_batch;
  if (at.consumed >= n || short_tail) at = {at.epoch + 1, 0};

  // this rank's strided share of positions [consumed, end)
  const int64_t end = std::min(n, at.consumed + global_batch);
  auto order = cached_order(at.epoch);
  SamplerBatch batch;
  batch.frames.reserve(static_cast<size_t>(global_batch / world_size));
  for (int64_t p = at.consumed + rank; p < end; p += world_size) {
    batch.frames.push_back((*order)[static_cast<size_t>(p)]);
  }
  batch.next = end == n ? LoaderPosition{at.epoch + 1, 0} : LoaderPosition{at.epoch, end};
  return batch;
}

}  // namespace ember::data
