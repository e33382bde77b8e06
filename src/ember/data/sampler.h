// Which frames a training step reads: an episode-aware, seeded, shardable order of frames.
//
// Eligible frames are those of the chosen episodes less drop_n_first_frames at each episode's
// start and drop_n_last_frames at its end, as LeRobot's EpisodeAwareSampler drops them (so
// that delta_timestamps windows do not run past the episode; the sampler itself knows nothing
// of timestamps).
//
// The epoch's global order is a permutation of the eligible frames (ascending frame index
// when shuffle is false) that depends on (seed, epoch) only, never on rank or world size, and
// is the same on every compiler and machine:
//   - a splitmix64 generator (Steele et al. 2014) whose state starts at
//     mix64(seed) ^ epoch, where mix64 is splitmix64's finaliser;
//   - an unbiased draw of j in [0, bound): take the next output r, rejecting r below
//     2^64 mod bound, then j = r mod bound;
//   - Fisher-Yates from the back: for i = n-1 down to 1, swap(order[i], order[uniform(i+1)]),
//     starting from the eligible frames in ascending order.
// (std::shuffle and the std distributions are implementation-defined, so they are not used.)
//
// Over training shards (shard_starts given, shard_window > 0, shuffle) the order is owned-shard
// (data/shard_order.h, docs/shards.md): the shards are permuted and dealt whole to the ranks,
// each rank permutes its frames within windows of shard_window of its own shards and takes b =
// global_batch / world_size of them a step, every rank the same number of steps an epoch
// (padded, or dropped under drop_last_batch). Such an order depends on (seed, epoch, world size,
// per-rank batch); the position records the epoch's layout, so that a resume on the same world
// size continues bit-exactly and one on another world size continues the epoch reading each
// sample not yet read once. Everything below about strided shares and partial batches is the
// global order's (LeRobot datasets, or shards with shard_window 0).
//
// The loader's position is global: the epoch and how many samples of its global order have
// been consumed. A step of global batch B takes positions [consumed, consumed + B) of the
// order; rank r of W takes the positions consumed + r, consumed + r + W, ... within that range
// (strided, so each rank gets B / W samples and the ranks together take the batch exactly).
// Because the position does not depend on W, a job saved on 4 ranks resumes on 2 or 1 and
// continues the same epoch without repeating or skipping a sample.
//
// At the end of an epoch the last batch is partial (every remaining sample, strided over the
// ranks, so ranks may get unequal counts, some none), unless drop_last_batch is set, in which
// case a remainder smaller than B is skipped. A batch never spans two epochs.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <nlohmann/json.hpp>
#include <vector>

#include "ember/data/metadata.h"

namespace ember::data {

// splitmix64's output function (a 64-bit mixer), for deriving seeds.
uint64_t mix64(uint64_t z);

// The generator stated above: splitmix64, unbiased bounded draws, Fisher-Yates from the back.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t state) : state_(state) {}
  uint64_t next() { return mix64(state_ += 0x9E3779B97F4A7C15ull); }
  // Unbiased j in [0, bound), bound >= 1: reject r below 2^64 mod bound.
  uint64_t uniform(uint64_t bound) {
    const uint64_t threshold = (0 - bound) % bound;
    uint64_t r = next();
    while (r < threshold) r = next();
    return r % bound;
  }
  // Fisher-Yates over [first, first + n).
  void permute(int64_t* first, size_t n) {
    for (size_t i = n; i > 1; --i) std::swap(first[i - 1], first[uniform(i)]);
  }

 private:
  uint64_t state_;
};

class ShardOrder;
struct OrderLevel;

struct SamplerOptions {
  uint64_t seed = 0;
  bool shuffle = true;
  int64_t drop_n_first_frames = 0;  // per episode
  int64_t drop_n_last_frames = 0;   // per episode
  std::vector<int64_t> episodes;    // Episode::index values to use; empty: all episodes
  bool drop_last_batch = false;     // skip an epoch's final partial batch
  // training shards: the first global frame of each shard (ascending, the first 0 or below the
  // first frame), and how many shards a window mixes (0: one permutation of all frames)
  std::vector<int64_t> shard_starts;
  int64_t shard_window = 0;
};

// A stretch of an epoch in the owned-shard order: `steps` steps on `world` ranks of `batch`
// samples each (the last segment of a position: the steps done so far).
struct LayoutSegment {
  int64_t world = 1, batch = 1, steps = 0;
  bool operator==(const LayoutSegment&) const = default;
};

// Where the data loader stands: `consumed` samples of epoch `epoch`'s global order are done
// (the owned-shard order: samples taken this epoch, padding included, and the epoch's layout so
// far; empty at an epoch's start and for the global order).
struct LoaderPosition {
  LoaderPosition(int64_t epoch = 0, int64_t consumed = 0, std::vector<LayoutSegment> layout = {})
      : epoch(epoch), consumed(consumed), layout(std::move(layout)) {}
  int64_t epoch;
  int64_t consumed;
  std::vector<LayoutSegment> layout;
  bool operator==(const LoaderPosition&) const = default;
};

// {"epoch": E, "consumed": C[, "layout": [{"world": W, "batch": b, "steps": s}, ...]]}.
// from_json throws kInvalidArgument naming the field when a field is missing, not an integer,
// or negative (a segment's world and batch: below 1).
void to_json(nlohmann::json& j, const LoaderPosition& p);
void from_json(const nlohmann::json& j, LoaderPosition& p);

// One rank's share of a step and the global position after the step.
struct SamplerBatch {
  std::vector<int64_t> frames;  // global frame indices, in the order the rank should read them
  LoaderPosition next;          // the position after the whole global batch (same on every rank)
};

class FrameSampler {
 public:
  // Throws kInvalidArgument when a drop count is negative or a chosen episode does not exist
  // (naming it). Episodes whose length is at most the frames dropped contribute nothing.
  FrameSampler(const std::vector<Episode>& episodes, SamplerOptions options = {});

  // Eligible frames per epoch.
  int64_t size() const { return static_cast<int64_t>(eligible_.size()); }
  // The eligible frames in ascending order.
  const std::vector<int64_t>& eligible() const { return eligible_; }
  const SamplerOptions& options() const { return options_; }

  // The epoch's global order: [size()] global frame indices (the owned-shard order: the order
  // of one rank alone). Throws kInvalidArgument when epoch < 0. Thread-safe.
  std::vector<int64_t> order(int64_t epoch) const;

  // Rank `rank`'s frames for the global batch at `position`, and the position after it (the
  // next epoch's start when this batch ends the epoch). The owned-shard order also throws when
  // level 0 leaves a rank without a shard, or when drop_last_batch leaves an epoch no step. A position at or past the end of its
  // epoch (e.g. saved right at the end) starts the next epoch. Throws kInvalidArgument when
  // size() is 0, global_batch < 1, world_size < 1, rank is outside [0, world_size),
  // global_batch is not a multiple of world_size, or the position is negative. Thread-safe;
  // the last epoch's order is cached, so a step costs O(global_batch / world_size).
  SamplerBatch next_batch(const LoaderPosition& position, int64_t global_batch, int rank,
                          int world_size) const;

  // The owned-shard order only (empty otherwise): up to `count` of rank `rank`'s frames from
  // `position` on, in the order it reads them, to the end of the epoch (what its store should
  // fetch next), and window_frames(), the most frames a window of shards holds. Thread-safe.
  std::vector<int64_t> ahead(const LoaderPosition& position, int64_t global_batch, int rank, int world_size,
                             int64_t count) const;
  int64_t window_frames() const;

 private:
  std::shared_ptr<const std::vector<int64_t>> cached_order(int64_t epoch) const;

  SamplerBatch owned_batch(const LoaderPosition& position, int64_t global_batch, int rank, int world_size) const;
  // the position's epoch and layout on (world_size, global_batch / world_size), and its plan
  std::pair<LoaderPosition, std::vector<OrderLevel>> owned_at(const LoaderPosition& position, int64_t global_batch,
                                                              int world_size) const;

  SamplerOptions options_;
  std::vector<int64_t> eligible_;  // [size()] ascending
  std::shared_ptr<const ShardOrder> owned_;  // the owned-shard order, when it applies

  mutable std::mutex mutex_;  // guards the cache below
  mutable int64_t cached_epoch_ = -1;
  mutable std::shared_ptr<const std::vector<int64_t>> cached_;
};

}  // namespace ember::data
