// `ember bench parquet`: ember's Parquet reader decoding every column of the files, one thread:
// the best and median of repeated passes, MB/s and rows/s (against pyarrow: bench/parquet_vs_pyarrow.py).
#pragma once

#include <string>
#include <vector>

namespace ember::bench {

struct ParquetBenchOptions {
  std::vector<std::string> files;
  double min_seconds = 1.0;  // time at least this long
  int min_repeats = 5;       // and repeat at least this often
};

// Prints one JSON line (`commit`: the build's git commit) and returns it. Throws Error naming
// the file that cannot be read.
std::string run_parquet_bench(const ParquetBenchOptions& options, const std::string& commit);

}  // namespace ember::bench
