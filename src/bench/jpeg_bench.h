// `ember bench jpeg`: what JPEG quality costs and gives on a dataset's own frames, resized as
// the policy reads them: bytes per frame, encode and decode time per frame (one thread), and
// the pixel error (mean absolute error, PSNR) at each quality, beside PNG's bytes and decode
// time. The measurement behind `ember data pack`'s default --jpeg_quality (docs/shards.md).
#pragma once

#include <string>
#include <vector>

namespace ember::bench {

struct JpegBenchOptions {
  std::string root;                                  // a LeRobot dataset
  int image_size = 224;
  std::vector<int> qualities = {50, 75, 85, 90, 95, 98, 100};
  int frames = 64;                                   // frames spread over the dataset
};

// Prints one JSON line for PNG and one per quality; returns them.
std::vector<std::string> run_jpeg_bench(const JpegBenchOptions& options);

}  // namespace ember::bench
