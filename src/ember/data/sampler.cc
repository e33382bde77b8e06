#include "ember/data/sampler.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "ember/core/error.h"
#include "ember/data/shard_order.h"

namespace ember::data {

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

namespace {

[[noreturn]] void invalid(const std::string& message) {
  fail(ErrorKind::kInvalidArgument, "FrameSampler: " + message);
}

int64_t field(const nlohmann::json& j, const char* name, const std::string& where = "loader position", int64_t least = 0) {
  const std::string what = where + ": \"" + name + "\"";
  if (!j.is_object() || !j.contains(name)) invalid(what + " is missing");
  const nlohmann::json& v = j.at(name);
  if (!v.is_number_integer()) invalid(what + " must be an integer, got " + v.dump());
  const int64_t x = v.get<int64_t>();
  if (x < least) invalid(what + " must be >= " + std::to_string(least) + ", got " + std::to_string(x));
  return x;
}

}  // namespace

void to_json(nlohmann::json& j, const LoaderPosition& p) {
  j = nlohmann::json{{"epoch", p.epoch}, {"consumed", p.consumed}};
  for (const LayoutSegment& s : p.layout) j["layout"].push_back({{"world", s.world}, {"batch", s.batch}, {"steps", s.steps}});
}

void from_json(const nlohmann::json& j, LoaderPosition& p) {
  p.epoch = field(j, "epoch");
  p.consumed = field(j, "consumed");
  p.layout.clear();
  if (!j.contains("layout")) return;
  if (!j.at("layout").is_array()) invalid("loader position: \"layout\" must be an array, got " + j.at("layout").dump());
  for (size_t k = 0; k < j.at("layout").size(); ++k) {
    const std::string where = "loader position: \"layout\"[" + std::to_string(k) + "]";
    const nlohmann::json& s = j.at("layout")[k];
    p.layout.push_back({field(s, "world", where, 1), field(s, "batch", where, 1), field(s, "steps", where)});
  }
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
  // the owned-shard order: each shard's eligible frames
  if (options_.shuffle && options_.shard_window > 0 && !options_.shard_starts.empty()) {
    const std::vector<int64_t>& starts = options_.shard_starts;
    std::vector<size_t> begin(starts.size() + 1, eligible_.size());
    for (size_t s = 0; s < starts.size(); ++s)
      begin[s] = size_t(std::lower_bound(eligible_.begin(), eligible_.end(), starts[s]) - eligible_.begin());
    owned_ = std::make_shared<ShardOrder>(options_.seed, options_.shard_window, options_.drop_last_batch, eligible_, std::move(begin));
  }
}

std::vector<int64_t> FrameSampler::order(int64_t epoch) const {
  if (epoch < 0) invalid("epoch must be >= 0, got " + std::to_string(epoch));
  std::vector<int64_t> out = eligible_;
  if (!options_.shuffle || out.empty()) return out;
  if (owned_) return owned_->step_frames(epoch, owned_->plan(epoch, {{1, size(), 0}}), 0, 0);
  SplitMix64(mix64(options_.seed) ^ static_cast<uint64_t>(epoch)).permute(out.data(), out.size());
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
  if (position.epoch < 0 || position.consumed < 0) {
    invalid("position must be >= 0, got epoch " + std::to_string(position.epoch) +
            ", consumed " + std::to_string(position.consumed));
  }
  if (owned_) return owned_batch(position, global_batch, rank, world_size);
  if (options_.drop_last_batch && global_batch > n) {
    invalid("drop_last_batch with global batch " + std::to_string(global_batch) +
            " larger than the epoch (" + std::to_string(n) + " frames) yields no batch");
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

std::pair<LoaderPosition, std::vector<OrderLevel>> FrameSampler::owned_at(const LoaderPosition& position, int64_t global_batch,
                                                                          int world_size) const {
  const int64_t b = global_batch / world_size;
  const LayoutSegment now{world_size, b, 0};
  // the epoch's layout: the last segment continued, or a new one for another (world, batch)
  LoaderPosition at = position;
  if (at.layout.empty()) {
    at.layout.push_back({world_size, b, at.consumed / global_batch});  // a position without one: its steps so far
  } else if (at.layout.back().world != world_size || at.layout.back().batch != b) {
    if (at.layout.back().steps == 0) at.layout.back() = now;
    else at.layout.push_back(now);
  }
  auto plan = owned_->plan(at.epoch, at.layout);
  if (at.layout.back().steps >= plan.back().steps_per_epoch) {  // the epoch is done: the next one
    at = {at.epoch + 1, 0, {now}};
    plan = owned_->plan(at.epoch, at.layout);
    if (plan.back().steps_per_epoch == 0)
      invalid("drop_last_batch: the smallest rank's shards hold fewer than its batch of " + std::to_string(b) +
              " frames on " + std::to_string(world_size) + " ranks: no step");
  }
  return {std::move(at), std::move(plan)};
}

SamplerBatch FrameSampler::owned_batch(const LoaderPosition& position, int64_t global_batch, int rank, int world_size) const {
  auto [at, plan] = owned_at(position, global_batch, world_size);
  SamplerBatch batch;
  batch.frames = owned_->step_frames(at.epoch, plan, rank, at.layout.back().steps);
  batch.next = at;
  batch.next.consumed += global_batch;
  if (++batch.next.layout.back().steps == plan.back().steps_per_epoch) batch.next = {at.epoch + 1, 0, {}};
  return batch;
}

std::vector<int64_t> FrameSampler::ahead(const LoaderPosition& position, int64_t global_batch, int rank, int world_size,
                                         int64_t count) const {
  if (!owned_) return {};
  next_batch(position, global_batch, rank, world_size);  // the request's checks
  auto [at, plan] = owned_at(position, global_batch, world_size);
  return owned_->ahead(at.epoch, plan, rank, at.layout.back().steps, count);
}

int64_t FrameSampler::window_frames() const { return owned_ ? owned_->window_frames() : 0; }

}  // namespace ember::data
