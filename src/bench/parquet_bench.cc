#include "bench/parquet_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "bench/host.h"
#include "ember/core/file.h"
#include "ember/io/json.h"
#include "ember/io/parquet/reader.h"

namespace ember::bench {

namespace {

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

}  // namespace

std::string run_parquet_bench(const ParquetBenchOptions& o, const std::string& commit) {
  const auto& files = o.files;
  const double min_seconds = o.min_seconds;
  const int min_repeats = o.min_repeats;
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
  out += ",\"commit\":";
  io::append_json_string(out, commit);
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
  return out;
}


}  // namespace ember::bench
