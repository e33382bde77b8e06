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
// Over training shards (shard_starts given, shard_window > 0) the order is shard-aware, as
// MosaicML Streaming's: the same generator first permutes the shards (Fisher-Yates as above),
// then, taking the permuted shards shard_window at a time, permutes the eligible frames of each
// window among themselves (from the window's frames in shard order, ascending within a shard).
// A window's frames are consumed before the next window's, so a reader holds at most
// shard_window shards at once and reads each shard in one stretch of the epoch.
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
#include <nlohmann/json.hpp>
#include <vector>

#include "ember/data/metadata.h"

namespace ember::data {

// splitmix64's output function (a 64-bit mixer), for deriving seeds.
uint64_t mix64(uint64_t z);

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

// Where the data loader stands: `consumed` samples of epoch `epoch`'s global order are done.
struct LoaderPosition {
  int64_t epoch = 0;
  int64_t consumed = 0;
  bool operator==(const LoaderPosition&) const = default;
};

// {"epoch": E, "consumed": C}. from_json throws kInvalidArgument naming the field when a field
// is missing, not an integer, or negative.
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

  // The epoch's global order: [size()] global frame indices. Throws kInvalidArgument when
  // epoch < 0. Thread-safe.
  std::vector<int64_t> order(int64_t epoch) const;

  // Rank `rank`'s frames for the global batch at `position`, and the position after it (the
  // next epoch's start when this batch ends the epoch). A position at or past the end of its
  // epoch (e.g. saved right at the end) starts the next epoch. Throws kInvalidArgument when
  // size() is 0, global_batch < 1, world_size < 1, rank is outside [0, world_size),
  // global_batch is not a multiple of world_size, or the position is negative. Thread-safe;
  // the last epoch's order is cached, so a step costs O(global_batch / world_size).
  SamplerBatch next_batch(const LoaderPosition& position, int64_t global_batch, int rank,
                          int world_size) const;

 private:
  std::shared_ptr<const std::vector<int64_t>> cached_order(int64_t epoch) const;

  SamplerOptions options_;
  std::vector<int64_t> eligible_;  // [size()] ascending

  mutable std::mutex mutex_;  // guards the cache below
  mutable int64_t cached_epoch_ = -1;
  mutable std::shared_ptr<const std::vector<int64_t>> cached_;
};

}  // namespace ember::data
