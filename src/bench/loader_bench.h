// `ember bench loader`: how fast the training loader turns a dataset into batches, with nothing
// consuming them, per number of sample-building threads. Tells a data-bound run (ember train's
// data_wait_frac) what its loader can give, and which stage bounds it: building samples on the
// pool (parquet rows, image decode, tokenising) or laying them out (pack, collate, pin).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/io/nvjpeg.h"

namespace ember::bench {

struct LoaderBenchOptions {
  std::string root;                 // a LeRobot dataset, training shards, or shards' URL
  int64_t shard_window = 4;         // shards: as --dataset.shard_window
  std::string cache_dir;            // remote shards: the local cache (empty: the default)
  std::string preset = "small";     // the policy whose shapes the samples take
  std::string attention = "varlen";
  int64_t batch_size = 128;         // samples per step
  std::vector<int> workers = {1};   // one measurement per entry
  int warmup = 2, steps = 10;       // untimed, then timed batches per measurement
  bool pin_memory = false;          // pin each batch as `ember train` does on CUDA
  std::string jpeg_decoder = io::kDefaultJpegDecoder;  // shards: as --dataset.jpeg_decoder
  double image_shift = 0;           // > 0: random image shifts, as --dataset.image_transforms
  uint64_t seed = 1000;
};

// Prints one JSON line per worker count (samples/s, seconds per batch, the producer's build and
// collate seconds per batch, the cores) and returns them. Throws Error kInvalidArgument naming
// the option for a bad value; the dataset's errors name its files.
std::vector<std::string> run_loader_bench(const LoaderBenchOptions& options);

}  // namespace ember::bench
