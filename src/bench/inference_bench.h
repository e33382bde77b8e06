// `ember bench inference`: how fast a policy answers, as `ember serve` runs it. Per batch size B:
//   eager       B requests' samples through train::sample_chunks at once, the weights as loaded
//               (collation, the copy to the device and back included): latency per batch,
//               chunks/s = B / mean latency
//   engine      the same batches through train::Sampler as ember serve runs it (bf16 weights,
//               one CUDA graph per batch shape where it can), with the largest difference to
//               eager's chunks (the same samples and noise)
//   socket      (--socket) a loopback ember serve (its Server and Engine in this process, B_max =
//               B) driven by B websocket clients at once, each sending its next observation when
//               its reply arrives: latency per request as a client sees it, chunks/s overall
// Observations are synthetic (random camera images of --image_size px, random state, a fixed
// instruction), built into samples by the policy's processor exactly as serve builds them.
// Prints one JSON line per mode and batch size; p99 means something from ~100 --iters on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember::bench {

struct InferenceBenchOptions {
  std::string checkpoint;      // a checkpoint / run directory / LeRobot directory, or empty: a fresh policy of
  std::string policy_type = "pi05";
  std::string preset = "tiny";  // (random weights; serving speed does not depend on them)
  std::string tokenizer_path;  // --policy.tokenizer_path, for a LeRobot directory
  std::vector<int64_t> batch_sizes = {1, 4, 16};
  int warmup = 3, iters = 20;
  std::string device = "auto";
  bool socket = false;
  bool cuda_graphs = true;  // the engine's (and the socket server's) CUDA graphs
  // PyTorch's profiler around 3 eager calls and 3 engine calls at the first batch size, after the
  // timed ones: TRACE_eager.json and TRACE_engine.json (bench/trace_summary.py reads them)
  std::string trace;
  int image_size = 224;  // the synthetic cameras' side in pixels
  uint64_t seed = 0;
};

// Throws Error kInvalidArgument naming the flag for a bad value.
std::vector<std::string> run_inference_bench(const InferenceBenchOptions& options, const std::string& commit);

}  // namespace ember::bench
