#include "ember/data/shard_order.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <string>

#include "ember/core/error.h"

namespace ember::data {

namespace {

[[noreturn]] void invalid(const std::string& message) {
  fail(ErrorKind::kInvalidArgument, "FrameSampler: " + message);
}

int64_t steps_for(const OrderLevel& l, bool drop_last) {
  if (l.total == 0) return 0;
  const auto [lo, hi] = std::minmax_element(l.sizes.begin(), l.sizes.end());
  return drop_last ? *lo / l.batch : (*hi + l.batch - 1) / l.batch;
}

// a rank's real frames read in a level: its frames or its steps' worth, whichever is fewer
int64_t read_of(const OrderLevel& l, size_t r) { return std::min(l.sizes[r], l.steps * l.batch); }

}  // namespace

ShardOrder::ShardOrder(uint64_t seed, int64_t window, bool drop_last, const std::vector<int64_t>& eligible,
                       std::vector<size_t> shard_begin)
    : seed_(seed), window_(std::max<int64_t>(1, window)), drop_last_(drop_last), eligible_(eligible), begin_(std::move(shard_begin)) {}

void ShardOrder::forget_before(int64_t epoch) const {
  std::erase_if(dealt_, [&](const auto& e) { return e.first.first < epoch; });
  std::erase_if(level0_, [&](const auto& e) { return std::get<0>(e.first) < epoch; });
  std::erase_if(ranks_, [&](const auto& e) { return std::get<0>(e.first) < epoch; });
}

std::shared_ptr<const ShardOrder::Dealt> ShardOrder::deal(int64_t epoch, int world) const {
  auto& cached = dealt_[{epoch, world}];
  if (cached) return cached;
  // the shards permuted
  std::vector<int64_t> perm(shards());
  for (size_t s = 0; s < perm.size(); ++s) perm[s] = int64_t(s);
  SplitMix64(mix64(seed_) ^ uint64_t(epoch)).permute(perm.data(), perm.size());
  // dealt: each to the rank with the fewest frames so far, the lowest on ties
  auto out = std::make_shared<Dealt>();
  out->shards.resize(size_t(world));
  out->frames.assign(size_t(world), 0);
  using Load = std::pair<int64_t, int>;  // (frames, rank)
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> ranks;
  for (int r = 0; r < world; ++r) ranks.push({0, r});
  for (int64_t s : perm) {
    auto [frames, r] = ranks.top();
    ranks.pop();
    out->shards[size_t(r)].push_back(int(s));
    out->frames[size_t(r)] = frames + frames_of(size_t(s));
    ranks.push({out->frames[size_t(r)], r});
  }
  cached = out;
  return cached;
}

std::shared_ptr<const std::vector<int64_t>> ShardOrder::level0_rank(int64_t epoch, int world, int rank) const {
  auto& cached = level0_[{epoch, world, rank}];
  if (cached) return cached;
  const auto& shards = deal(epoch, world)->shards[size_t(rank)];
  auto out = std::make_shared<std::vector<int64_t>>();
  SplitMix64 rng(mix64(mix64(seed_) ^ uint64_t(epoch)) + uint64_t(rank));
  for (size_t w = 0; w < shards.size(); w += size_t(window_)) {
    const size_t from = out->size();
    for (size_t k = w; k < std::min(shards.size(), w + size_t(window_)); ++k) {
      const size_t sh = size_t(shards[k]);
      out->insert(out->end(), eligible_.begin() + long(begin_[sh]), eligible_.begin() + long(begin_[sh + 1]));
    }
    rng.permute(out->data() + from, out->size() - from);
  }
  cached = out;
  return cached;
}

std::vector<int> ShardOrder::owned_shards(int64_t epoch, int world, int rank) const {
  std::lock_guard<std::mutex> lock(mu_);
  return deal(epoch, world)->shards[size_t(rank)];
}

std::vector<OrderLevel> ShardOrder::plan(int64_t epoch, const std::vector<LayoutSegment>& layout) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<OrderLevel> levels;
  for (size_t k = 0; k < layout.size(); ++k) {
    OrderLevel l;
    l.world = layout[k].world, l.batch = layout[k].batch, l.steps = layout[k].steps;
    l.sizes.assign(size_t(l.world), 0);
    if (k == 0) {
      // level 0: each rank's dealt shards
      l.sizes = deal(epoch, int(l.world))->frames;
      const auto owning = std::count_if(l.sizes.begin(), l.sizes.end(), [](int64_t n) { return n > 0; });
      if (owning < l.world)
        invalid(std::to_string(l.world) + " ranks, but only " + std::to_string(owning) +
                " shards with frames to deal: each rank needs one (pack smaller shards with --shard_mb, "
                "or order globally with --dataset.shard_window=0)");
    } else {
      // a later level: what the previous one left, split into nearly equal contiguous parts
      const OrderLevel& prev = levels.back();
      int64_t left = 0;
      for (size_t r = 0; r < prev.sizes.size(); ++r) left += prev.sizes[r] - read_of(prev, r);
      for (size_t r = 0; r < l.sizes.size(); ++r) l.sizes[r] = left / l.world + (int64_t(r) < left % l.world ? 1 : 0);
    }
    l.offsets.assign(l.sizes.size(), 0);
    for (size_t r = 1; r < l.sizes.size(); ++r) l.offsets[r] = l.offsets[r - 1] + l.sizes[r - 1];
    l.total = l.offsets.back() + l.sizes.back();
    l.steps_per_epoch = steps_for(l, drop_last_);
    if (k + 1 < layout.size() && l.steps > l.steps_per_epoch)
      invalid("loader position: layout segment " + std::to_string(k) + " has " + std::to_string(l.steps) +
              " steps, but that stretch of epoch " + std::to_string(epoch) + " has " + std::to_string(l.steps_per_epoch));
    levels.push_back(std::move(l));
  }
  forget_before(epoch - 1);
  return levels;
}

void ShardOrder::slice(int64_t epoch, const std::vector<OrderLevel>& plan, size_t level, int64_t from, int64_t to,
                       std::vector<int64_t>& out) const {
  const OrderLevel& l = plan[level];
  if (level == 0) {
    // level 0's stream: the ranks' sequences one after another
    for (size_t r = 0; r < l.sizes.size(); ++r) {
      const int64_t a = std::max(from, l.offsets[r]), b = std::min(to, l.offsets[r] + l.sizes[r]);
      if (a >= b) continue;
      auto seq = level0_rank(epoch, int(l.world), int(r));
      out.insert(out.end(), seq->begin() + (a - l.offsets[r]), seq->begin() + (b - l.offsets[r]));
    }
    return;
  }
  // a later level's stream: each rank's unread frames of the previous level, one after another
  const OrderLevel& prev = plan[level - 1];
  int64_t at = 0;
  for (size_t r = 0; r < prev.sizes.size() && at < to; ++r) {
    const int64_t read = read_of(prev, r), len = prev.sizes[r] - read;
    const int64_t a = std::max(from, at), b = std::min(to, at + len);
    if (a < b) slice(epoch, plan, level - 1, prev.offsets[r] + read + (a - at), prev.offsets[r] + read + (b - at), out);
    at += len;
  }
}

std::shared_ptr<const std::vector<int64_t>> ShardOrder::sequence(int64_t epoch, const std::vector<OrderLevel>& plan, int rank) const {
  const OrderLevel& l = plan.back();
  std::vector<int64_t> key;  // the layout: (world, batch, steps) of the finished levels, (world, batch) of the last
  for (const OrderLevel& p : plan) key.insert(key.end(), {p.world, p.batch, &p == &l ? -1 : p.steps});
  auto& seq = ranks_[{epoch, key, rank}];
  if (seq) return seq;
  if (plan.size() == 1) {
    seq = level0_rank(epoch, int(l.world), rank);
  } else {
    auto s = std::make_shared<std::vector<int64_t>>();
    slice(epoch, plan, plan.size() - 1, l.offsets[size_t(rank)], l.offsets[size_t(rank)] + l.sizes[size_t(rank)], *s);
    seq = s;
  }
  return seq;
}

std::vector<int64_t> ShardOrder::ahead(int64_t epoch, const std::vector<OrderLevel>& plan, int rank, int64_t step, int64_t count) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto seq = sequence(epoch, plan, rank);
  const int64_t from = std::min<int64_t>(int64_t(seq->size()), step * plan.back().batch);
  const int64_t to = std::min<int64_t>(int64_t(seq->size()), from + std::max<int64_t>(0, count));
  return std::vector<int64_t>(seq->begin() + from, seq->begin() + to);
}

int64_t ShardOrder::window_frames() const {
  int64_t most = 0;
  for (size_t s = 0; s < shards(); ++s) most = std::max(most, frames_of(s));
  return window_ * most;
}

std::vector<int64_t> ShardOrder::step_frames(int64_t epoch, const std::vector<OrderLevel>& plan, int rank, int64_t step) const {
  std::lock_guard<std::mutex> lock(mu_);
  const OrderLevel& l = plan.back();
  auto seq = sequence(epoch, plan, rank);
  // b positions of the padded sequence: past the rank's frames, its own walked back from its last
  const int64_t n = l.sizes[size_t(rank)];
  std::vector<int64_t> frames;
  frames.reserve(size_t(l.batch));
  for (int64_t p = step * l.batch; p < (step + 1) * l.batch; ++p) {
    if (p < n) {
      frames.push_back((*seq)[size_t(p)]);
    } else if (n > 0) {
      frames.push_back((*seq)[size_t(n - 1 - (p - n) % n)]);
    } else {
      // a rank left nothing by a small remainder: the level's stream walked back from its offset
      std::vector<int64_t> one;
      const int64_t q = ((l.offsets[size_t(rank)] - 1 - (p - n)) % l.total + l.total) % l.total;
      slice(epoch, plan, plan.size() - 1, q, q + 1, one);
      frames.push_back(one.front());
    }
  }
  return frames;
}

}  // namespace ember::data
