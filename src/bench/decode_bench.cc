#include "bench/decode_bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <random>
#include <thread>

#include "ember/core/error.h"
#include "ember/io/video/video_decoder.h"

namespace ember::bench {

using namespace ember::io;

namespace {

using Clock = std::chrono::steady_clock;

// Runs work(file_index) for every file on `workers` threads; rethrows the first error.
template <typename Work>
double run_parallel(size_t files, int workers, Work work) {
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  auto start = Clock::now();
  auto loop = [&] {
    for (size_t i; (i = next.fetch_add(1)) < files;) {
      try {
        work(i);
      } catch (...) {
        std::lock_guard lock(error_mu);
        if (!error) error = std::current_exception();
        next = files;  // stop the others early
      }
    }
  };
  std::vector<std::thread> threads;
  for (int w = 1; w < workers; ++w) threads.emplace_back(loop);
  loop();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

DecodeBenchResult bench_decode(const std::vector<std::string>& files,
                               const DecodeBenchOptions& options) {
  if (options.workers < 1) {
    fail(ErrorKind::kInvalidArgument, "decode bench: workers must be >= 1");
  }
  if (options.random_per_file < 0) {
    fail(ErrorKind::kInvalidArgument, "decode bench: random_per_file must be >= 0");
  }
  DecoderOptions dopt;
  dopt.threads = options.threads;
  dopt.width = options.width;
  dopt.height = options.height;
  dopt.av1_decoder = options.av1_decoder;

  // the frame times of each file, read from the packets (not timed)
  std::vector<std::vector<double>> times(files.size());
  std::vector<std::string> names(files.size());
  run_parallel(files.size(), options.workers, [&](size_t i) {
    VideoDecoder d(files[i], dopt);
    times[i] = d.frame_timestamps();
    names[i] = d.decoder_name();
  });

  DecodeBenchResult r;
  for (const std::string& n : names)
    if (std::find(r.decoders.begin(), r.decoders.end(), n) == r.decoders.end()) r.decoders.push_back(n);
  r.files = static_cast<int>(files.size());
  std::atomic<int64_t> frames{0}, seeks{0};

  // sequential: every frame in order, through the continue-forward path
  r.sequential_seconds = run_parallel(files.size(), options.workers, [&](size_t i) {
    VideoDecoder d(files[i], dopt);
    std::vector<uint8_t> rgb(static_cast<size_t>(d.output_width()) * d.output_height() * 3);
    for (double t : times[i]) d.decode_into(t, rgb.data());
    frames += static_cast<int64_t>(times[i].size());
  });
  r.sequential_frames = frames.exchange(0);

  // random access: frame times drawn uniformly, in random order
  r.random_seconds = run_parallel(files.size(), options.workers, [&](size_t i) {
    if (times[i].empty() || options.random_per_file == 0) return;
    std::mt19937_64 rng(options.seed * 1000003 + i);
    std::uniform_int_distribution<size_t> pick(0, times[i].size() - 1);
    VideoDecoder d(files[i], dopt);
    std::vector<uint8_t> rgb(static_cast<size_t>(d.output_width()) * d.output_height() * 3);
    for (int k = 0; k < options.random_per_file; ++k)
      d.decode_into(times[i][pick(rng)], rgb.data());
    frames += options.random_per_file;
    seeks += d.stats().seeks;
  });
  r.random_frames = frames.load();
  r.random_seeks = seeks.load();

  if (r.sequential_seconds > 0) r.sequential_fps = r.sequential_frames / r.sequential_seconds;
  if (r.random_seconds > 0) r.random_fps = r.random_frames / r.random_seconds;
  return r;
}

}  // namespace ember::bench
