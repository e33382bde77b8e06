#include <chrono>
#include <filesystem>
#include <set>
#include <cstdio>
#include <fstream>
#include <string>

#include "cli/commands.h"
#include "cli/flag_ranges.h"
#include "ember_version.h"
#include "ember/core/error.h"
#include "ember/io/json.h"
#include "ember/data/metadata.h"
#include "bench/decode_bench.h"
#include "bench/host.h"
#include "bench/parquet_bench.h"

namespace ember::cli {

namespace {

// A dataset root (all its video files) or a list of video files.
std::vector<std::string> video_files(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    if (!std::filesystem::is_directory(p)) {
      files.push_back(p);
      continue;
    }
    data::Metadata m = data::load_metadata(p);
    std::set<std::string> unique;
    for (const data::Episode& e : m.episodes)
      for (const auto& [camera, span] : e.videos) unique.insert(m.video_file(e, camera));
    if (unique.empty()) fail(ErrorKind::kInvalidArgument, p + ": the dataset has no video cameras");
    files.insert(files.end(), unique.begin(), unique.end());
  }
  return files;
}

int run_bench_decode(const std::vector<std::string>& paths, const bench::DecodeBenchOptions& o) {
  std::vector<std::string> files = video_files(paths);
  bench::DecodeBenchResult r = bench::bench_decode(files, o);
  std::string out = "{\"bench\":\"decode\",\"reader\":\"ember\",\"device\":";
  io::append_json_string(out, bench::cpu_model());
  out += ",\"commit\":\"" EMBER_GIT_COMMIT "\"";
  out += ",\"files\":" + std::to_string(r.files) + ",\"threads\":" + std::to_string(o.threads) +
         ",\"workers\":" + std::to_string(o.workers) + ",\"decoders\":[";
  for (size_t i = 0; i < r.decoders.size(); ++i) {
    if (i > 0) out += ",";
    io::append_json_string(out, r.decoders[i]);
  }
  out += "]";
  out += ",\"sequential_frames\":" + std::to_string(r.sequential_frames) + ",\"sequential_fps\":";
  io::append_double(out, r.sequential_fps);
  out += ",\"random_frames\":" + std::to_string(r.random_frames) + ",\"random_fps\":";
  io::append_double(out, r.random_fps);
  out += ",\"random_seeks\":" + std::to_string(r.random_seeks) + "}\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace

void add_bench_commands(CLI::App& app, Action& action) {
  CLI::App* bench = app.add_subcommand("bench", "benchmarks (one JSON line per result)");
  bench->require_subcommand(1);
  struct Args {
    std::vector<std::string> files;
    double min_seconds = 1.0;
    int min_repeats = 5;
  };
  auto args = std::make_shared<Args>();
  CLI::App* pq = bench->add_subcommand("parquet", "decode every column of Parquet files, single-threaded");
  pq->add_option("FILE", args->files, "Parquet files")->required();
  pq->add_option("--min_seconds", args->min_seconds, "time at least this long (default 1)")->check(in_range(1e-3, kMaxSeconds));
  pq->add_option("--min_repeats", args->min_repeats, "repeat at least this often (default 5)")->check(in_range(1, kMaxRepeats));
  pq->callback([args, &action] {
    action = [args] {
      bench::run_parquet_bench({args->files, args->min_seconds, args->min_repeats}, EMBER_GIT_COMMIT);
      return 0;
    };
  });

  struct DecodeArgs {
    std::vector<std::string> paths;
    bench::DecodeBenchOptions options;
  };
  auto d = std::make_shared<DecodeArgs>();
  CLI::App* dec = bench->add_subcommand("decode", "video decode frames/s: sequential and random access");
  dec->add_option("PATH", d->paths, "a LeRobot dataset root, or video files")->required();
  dec->add_option("--threads", d->options.threads, "decoder threads per file (0: FFmpeg chooses; default 1)")
      ->check(in_range(0, kMaxThreads));
  dec->add_option("--workers", d->options.workers, "files decoded in parallel (default 1)")->check(in_range(1, kMaxThreads));
  dec->add_option("--random_per_file", d->options.random_per_file, "random-access frames per file (default 64)")
      ->check(in_range(0, kMaxRepeats));
  dec->add_option("--width", d->options.width, "resize width (with --height)")->check(in_range(0, kMaxImageSize));
  dec->add_option("--height", d->options.height, "resize height (with --width)")->check(in_range(0, kMaxImageSize));
  dec->add_option("--av1_decoder", d->options.av1_decoder,
                  "FFmpeg's AV1 decoder: libaom-av1 (the default, refuses damaged data) or libdav1d (faster)")
      ->check(CLI::IsMember({"libaom-av1", "libdav1d"}));
  dec->callback([d, &action] { action = [d] { return run_bench_decode(d->paths, d->options); }; });
}

}  // namespace ember::cli
