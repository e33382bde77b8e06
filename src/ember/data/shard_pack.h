// `ember data pack`: ember's training shards from any LeRobot dataset ember reads
// (docs/shards.md). Every camera frame is decoded once (PNG, or video where ember has FFmpeg),
// resized to image_size x image_size as the policy's processor resizes it, and stored as JPEG
// bytes in a LeRobot v3.0 image cell; the other features, tasks, episodes and the source's
// statistics are kept as they are. Data files ("shards") roll over at shard_mb, an episode's
// rows sit in row groups of rows_per_group, and meta/shards.json indexes every file with its
// CRC-32 (shard_index.h). The output appears whole or not at all (AtomicDir).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "ember/data/shard_index.h"

namespace ember::data {

// --threads beyond this is refused (a pool of 100000 threads aborts the process)
inline constexpr size_t kMaxThreads = 1024;

struct PackOptions {
  int image_size = 224;        // pi0.5's input size
  int jpeg_quality = 95;       // chosen by measurement (docs/shards.md, bench/results/shards_*)
  double shard_mb = 256;       // data file size at which the next shard starts
  int64_t rows_per_group = 32; // rows per Parquet row group (one group's images are read at once)
  uint64_t piece_bytes = uint64_t(4) << 20;  // CRC-32 granularity of ranged reads
  size_t threads = 0;          // decode and resize threads (0: one per core)
  int64_t error_every = 8;     // measure the JPEG error on every n-th frame
  bool overwrite = false;      // replace an existing dst
  std::function<void(int64_t, int64_t)> progress;  // (frames done, frames total)
};

// Packs src into dst and returns the index written. Throws kInvalidArgument naming the flag
// (bad option, dst exists), kUnsupported (video source without FFmpeg, string features),
// and whatever reading src throws (naming its file).
ShardIndex pack_shards(const std::string& src, const std::string& dst, const PackOptions& options);

}  // namespace ember::data
