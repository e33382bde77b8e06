// Decode throughput of a set of video files, for `ember bench decode`: sequential (every frame
// of each file in order, as the continue-forward path serves neighbouring samples) and random
// access (frames at random times, each a seek, as a shuffled loader asks for them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember::bench {

struct DecodeBenchOptions {
  int threads = 1;            // decoder threads per file (FFmpeg's thread_count; 0: auto)
  int workers = 1;            // files decoded in parallel, one decoder each
  int random_per_file = 64;   // random-access decodes per file
  int width = 0, height = 0;  // resize the output (both 0: the video's size)
  uint64_t seed = 0;          // for the random times
  std::string av1_decoder;    // DecoderOptions::av1_decoder ("": libaom-av1 where present)
};

struct DecodeBenchResult {
  int files = 0;
  int64_t sequential_frames = 0;
  double sequential_seconds = 0;  // wall time, opening the files included
  double sequential_fps = 0;      // frames per second over all workers
  int64_t random_frames = 0;
  double random_seconds = 0;
  double random_fps = 0;
  int64_t random_seeks = 0;  // demuxer seeks during the random phase
  std::vector<std::string> decoders;  // the FFmpeg decoders used, each once
};

// Decodes every frame of every file, then random_per_file frames of each at random frame
// times (new decoders, so no state carries over from the sequential pass). Throws the first
// error of any worker (Error naming the file); kInvalidArgument for bad options.
DecodeBenchResult bench_decode(const std::vector<std::string>& files,
                               const DecodeBenchOptions& options = {});

}  // namespace ember::bench
