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

// `ember bench jpeg_decode`: batches of JPEG frames (the dataset's, resized and encoded at
// `quality` as `ember data pack` stores them) decoded by libjpeg-turbo on 1..N threads and by
// nvJPEG in one batched call (host bytes in, host pixels out, as the loader uses it), with
// nvJPEG's pixels against libjpeg-turbo's. The measurement behind --dataset.jpeg_decoder's
// default (io::kDefaultJpegDecoder).
struct JpegDecodeBenchOptions {
  std::string root;                      // a LeRobot dataset
  int image_size = 224;
  int quality = 95;
  int batch_size = 32;                   // images a batch
  int batches = 20;                      // timed batches per line (after 3 untimed)
  std::vector<int> threads = {1, 8, 16}; // libjpeg-turbo: one line per count
  std::vector<std::string> decoders = {"cpu", "nvjpeg"};
};

// One JSON line per (decoder, threads); nvJPEG where it does not open: a line with "skipped"
// and the reason. Returns the lines.
std::vector<std::string> run_jpeg_decode_bench(const JpegDecodeBenchOptions& options);

}  // namespace ember::bench
