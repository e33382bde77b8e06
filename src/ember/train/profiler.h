// PyTorch's profiler (Kineto) around a stretch of work, saved as a Chrome trace: CPU operators
// and, on CUDA, the GPU kernels and memory copies. bench/trace_summary.py summarises a trace.
//
//   start_profiler(/*cuda=*/true);
//   ... steps ...
//   stop_profiler("trace.json");   // throws Error (kIO) naming the file when it cannot be written
#pragma once

#include <string>

namespace ember::train {

// shapes: also record each operator's input sizes ("Input Dims"; more host time per operator)
void start_profiler(bool cuda, bool shapes = false);
void stop_profiler(const std::string& path);

}  // namespace ember::train
