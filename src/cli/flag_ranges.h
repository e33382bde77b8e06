// Ranges of numeric flags, checked by CLI11 before any work: a value outside (NaN, inf, a
// saturated 99999999999999999999, a thread count no machine has) is refused naming the flag,
// exit status 2. CLI11's own Range lets NaN through (every comparison with it is false).
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <string>

namespace ember::cli {

// A finite number in [lo, hi] (CLI11 applies it to each value of a list flag).
inline CLI::Validator in_range(double lo, double hi) {
  auto text = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", v);
    return std::string(b);
  };
  const std::string range = "[" + text(lo) + ", " + text(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(s, v) || !std::isfinite(v) || v < lo || v > hi) return "must be a number in " + range + ", got " + s;
        return "";
      },
      "in " + range);
}

// Sizes a benchmark may ask for: more is a typo, not a measurement
inline constexpr double kMaxThreads = 1024;      // worker and decoder threads
inline constexpr double kMaxBatch = 65536;       // samples or images a batch
inline constexpr double kMaxImageSize = 4096;    // pixels a side
inline constexpr double kMaxRepeats = 1e7;       // steps, batches, repeats, frames
inline constexpr double kMaxSeconds = 86400;     // seconds a measurement

}  // namespace ember::cli
