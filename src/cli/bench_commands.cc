#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "cli/commands.h"
#include "ember_version.h"
#include "ember/core/error.h"
#include "ember/io/json.h"
#include "ember/io/parquet/reader.h"

namespace ember::cli {

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

struct Sample {
  double seconds = 0;
  int64_t rows = 0;
};

// Opens and decodes every column of every file once.
Sample decode_all(const std::vector<std::string>& files) {
  Sample s;
  auto t0 = std::chrono::steady_clock::now();
  for (const std::string& f : files) {
    auto reader = io::parquet::FileReader::open(f);
    for (int g = 0; g < reader->num_row_groups(); ++g) s.rows += reader->read_row_group(g).num_rows();
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

int bench_parquet(const std::vector<std::string>& files, double min_seconds, int min_repeats) {
  int64_t bytes = 0;
  for (const std::string& f : files) bytes += int64_t(open_file(f)->size());
  decode_all(files);  // warm the page cache and the allocator
  std::vector<double> times;
  int64_t rows = 0;
  double total = 0;
  while (int(times.size()) < min_repeats || total < min_seconds) {
    Sample s = decode_all(files);
    times.push_back(s.seconds);
    rows = s.rows;
    total += s.seconds;
  }
  std::sort(times.begin(), times.end());
  double best = times.front(), median = times[times.size() / 2];
  std::string out = "{\"bench\":\"parquet\",\"reader\":\"ember\",\"threads\":1";
  out += ",\"device\":";
  io::append_json_string(out, cpu_model());
  out += ",\"commit\":\"" EMBER_GIT_COMMIT "\"";
  out += ",\"files\":" + std::to_string(files.size());
  out += ",\"bytes\":" + std::to_string(bytes);
  out += ",\"rows\":" + std::to_string(rows);
  out += ",\"repeats\":" + std::to_string(times.size());
  out += ",\"median_s\":";
  io::append_double(out, median);
  out += ",\"best_s\":";
  io::append_double(out, best);
  out += ",\"mb_per_s\":";
  io::append_double(out, double(bytes) / 1e6 / median);
  out += ",\"rows_per_s\":";
  io::append_double(out, double(rows) / median);
  out += "}\n";
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
  pq->add_option("--min_seconds", args->min_seconds, "time at least this long (default 1)")->check(CLI::PositiveNumber);
  pq->add_option("--min_repeats", args->min_repeats, "repeat at least this often (default 5)")->check(CLI::PositiveNumber);
  pq->callback([args, &action] {
    action = [args] { return bench_parquet(args->files, args->min_seconds, args->min_repeats); };
  });
}

}  // namespace ember::cli
