// `ember bench sim`: env steps/s of N environments on N threads with random actions, without
// rendering and with each rendering layout of the workers' GL contexts (sim/vector_env.h).
#pragma once

#include <string>
#include <vector>

namespace ember::bench {

struct SimBenchOptions {
  std::string renderer = "auto";       // egl | osmesa | none | auto
  int image_size = 128;
  std::vector<int> n_envs;             // empty: 1 and the core count
  int threads = 0;                     // 0: one per env
  std::vector<std::string> layouts;    // empty: thread_per_view, thread, process
  double seconds = 3;                  // per measurement
};

// Prints one JSON line per (env count, layout) and returns them. Throws Error kInvalidArgument
// naming the flag for an unknown layout or renderer, a negative count.
std::vector<std::string> run_sim_bench(const SimBenchOptions& options, const std::string& commit);

}  // namespace ember::bench
