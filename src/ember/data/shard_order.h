// The owned-shard training order (docs/shards.md, "Training order over shards"): each rank
// reads only the shards it owns.
//
// Level 0 of epoch e on W ranks of b samples a step:
//   - the shards are permuted by the sampler's generator started at mix64(seed) ^ e
//     (Fisher-Yates as data/sampler.h states);
//   - the permuted shards are dealt, in that order, each to the rank owning the fewest eligible
//     frames so far (the lowest rank on ties): whole shards, ranks within one shard of each other;
//   - rank r takes its shards `window` at a time, in the order dealt, and permutes each window's
//     eligible frames (in shard order, ascending within a shard) with its own generator, started
//     at mix64(mix64(seed) ^ e) + r; its sequence is those windows one after another.
// A rank holds at most one window of shards at a time and reads each of its shards in one stretch.
//
// Every rank takes b samples a step and the same number of steps an epoch:
//   - pad (the default): ceil(n_max / b) steps, n_max the largest rank's frames; a rank whose
//     frames run out repeats its own, walking back from its last (still in memory);
//   - drop (drop_last_batch): floor(n_min / b) steps; each rank leaves its sequence's tail.
//
// Resuming: the position records the epoch's layout, a list of segments (world, batch, steps).
// The same (world, batch) continues the last segment: bit-exact. Another one starts a new level:
// the samples the epoch has not yet read (each rank's unread real frames, rank by rank, in
// sequence order: level k's remainder) are split into W' contiguous, nearly equal parts, one
// per new rank, each padded or dropped to the same number of steps as above. So a changed world
// size continues the epoch reading every unread sample once (less the drop, plus the padding),
// none read before; each new rank reads a contiguous run of the old ranks' shards. The next
// epoch is laid out afresh on the new world size.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "ember/data/sampler.h"

namespace ember::data {

// One epoch's plan for a chain of segments (the last one is the one running).
struct OrderLevel {
  int64_t world = 0, batch = 0, steps = 0;  // steps: done (the last level: done so far)
  int64_t steps_per_epoch = 0;              // what this level takes to finish the epoch
  std::vector<int64_t> sizes, offsets;      // [world] each rank's real frames in this level's stream
  int64_t total = 0;                        // the stream's length
};

class ShardOrder {
 public:
  // eligible: every eligible frame, ascending (not copied: it must outlive the order); shard s
  // holds eligible[shard_begin[s], shard_begin[s + 1]) ([S + 1], the last = eligible.size()).
  ShardOrder(uint64_t seed, int64_t window, bool drop_last, const std::vector<int64_t>& eligible,
             std::vector<size_t> shard_begin);

  // The plan of `epoch` for `layout` (non-empty; its last segment is the current one). Throws
  // kInvalidArgument when level 0 leaves a rank without frames (fewer shards than ranks), or when
  // a finished segment claims more steps than it had.
  std::vector<OrderLevel> plan(int64_t epoch, const std::vector<LayoutSegment>& layout) const;

  // Rank `rank`'s frames for step `step` of the plan's last level (b of them, padded as above).
  // Thread-safe; the rank's sequence is cached for its (epoch, layout).
  std::vector<int64_t> step_frames(int64_t epoch, const std::vector<OrderLevel>& plan, int rank, int64_t step) const;

  // Up to `count` of rank `rank`'s real frames from step `step` of the plan's last level on, in
  // the order it reads them (no padding): what it reads next, for prefetching. Thread-safe.
  std::vector<int64_t> ahead(int64_t epoch, const std::vector<OrderLevel>& plan, int rank, int64_t step, int64_t count) const;
  // shard_window x the most eligible frames of a shard: a window's frames at most.
  int64_t window_frames() const;

  // The shards of level 0 that rank `rank` owns, in the order dealt (for tests and benches).
  std::vector<int> owned_shards(int64_t epoch, int world, int rank) const;

 private:
  struct Dealt {
    std::vector<std::vector<int>> shards;  // [world] each rank's shards in the order dealt
    std::vector<int64_t> frames;           // [world] their eligible frames
  };
  std::shared_ptr<const Dealt> deal(int64_t epoch, int world) const;  // cached; with mu_ held
  // the rank's sequence in the plan's last level (cached; with mu_ held)
  std::shared_ptr<const std::vector<int64_t>> sequence(int64_t epoch, const std::vector<OrderLevel>& plan, int rank) const;
  // level 0's sequence of `rank` (cached; with mu_ held)
  std::shared_ptr<const std::vector<int64_t>> level0_rank(int64_t epoch, int world, int rank) const;
  // appends positions [from, to) of level `level`'s stream (with mu_ held)
  void slice(int64_t epoch, const std::vector<OrderLevel>& plan, size_t level, int64_t from, int64_t to,
             std::vector<int64_t>& out) const;

  uint64_t seed_;
  int64_t window_;
  bool drop_last_;
  const std::vector<int64_t>& eligible_;
  std::vector<size_t> begin_;  // [S + 1]
  size_t shards() const { return begin_.size() - 1; }
  int64_t frames_of(size_t s) const { return int64_t(begin_[s + 1] - begin_[s]); }

  // caches, of the two newest epochs asked for (the loader looks ahead across an epoch's end)
  void forget_before(int64_t epoch) const;  // with mu_ held
  mutable std::mutex mu_;
  mutable std::map<std::pair<int64_t, int>, std::shared_ptr<const Dealt>> dealt_;  // (epoch, world)
  mutable std::map<std::tuple<int64_t, int, int>, std::shared_ptr<const std::vector<int64_t>>> level0_;     // (epoch, world, rank)
  mutable std::map<std::tuple<int64_t, std::vector<int64_t>, int>, std::shared_ptr<const std::vector<int64_t>>> ranks_;
};

}  // namespace ember::data
