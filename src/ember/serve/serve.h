// `ember serve`: a trained policy answers robots and simulators over openpi's websocket protocol
// (server.h), with requests from every connection batched by one inference thread (engine.h).
// docs/serve.md is the manual.
#pragma once

#include <cstdint>
#include <string>

#include "ember/serve/codec.h"
#include "ember/serve/engine.h"
#include "ember/serve/observation.h"

namespace ember::serve {

struct ServeOptions {
  std::string checkpoint;      // a checkpoint, a run directory (its latest) or a LeRobot pi0.5 directory
  std::string tokenizer_path;  // --policy.tokenizer_path (a LeRobot directory has none)
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string device = "auto";
  std::string api_key;
  std::string obs_map;  // JSON: client key -> feature (observation.h)
  int max_batch = 8;
  double batch_timeout_ms = 2;
  double max_message_mb = 64;
  int max_connections = 64;
  uint64_t seed = 0;
  bool cuda_graphs = true;  // --cuda_graphs: the sampler captured per batch shape (train/sampler.h)
  int flow_steps = 0;       // --policy.num_steps: denoising steps other than the policy's own (0: its own)
};

// Throws Error kInvalidArgument naming the flag whose value is out of range.
void check_serve_options(const ServeOptions& options);

// The metadata frame: the policy (type, preset, chunk length, action and state dims, cameras),
// the key map, the limits, and ember's version.
Field serve_metadata(const Engine& engine, const ObservationMap& map, const ServeOptions& options);

// Loads the policy as `ember predict` does, listens, prints one line
//   ember serve: listening on ws://HOST:PORT (TYPE/PRESET on DEVICE)
// to stdout (a script reads the port from it: --port 0 picks a free one), serves until SIGINT or
// SIGTERM, then stops accepting, answers the requests in flight and returns 0. Throws Error
// naming the flag or the file for bad flags, an unreadable checkpoint, a port in use.
int run_serve(const ServeOptions& options);

}  // namespace ember::serve
