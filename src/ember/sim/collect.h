// Demonstrations: runs the scripted experts on fresh initial states (never the evaluation
// ones) and records each successful episode into a LeRobot v3.0 dataset with ember's
// DatasetWriter: observation.images.agentview and observation.images.wrist (video when ember
// has FFmpeg, else PNG `image` features), observation.state (8), action (7), the task's
// instruction as the episode's task, fps 20. Failed episodes are dropped and retried on new
// states (up to 4x episodes_per_task attempts per task).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/sim/gl_context.h"

namespace ember::sim {

struct CollectOptions {
  std::string suite = "ember10";
  std::vector<std::string> tasks;  // subset by name; empty: all of the suite
  int episodes_per_task = 10;
  std::string output_dir;          // must be absent or empty; the dataset root
  int image_size = 128;
  uint64_t seed = 0;
  int n_envs = 1;
  int threads = 0;
  RendererKind renderer = RendererKind::kOSMesa;
  std::string camera_dtype;        // "video", "image", or "" (video when FFmpeg is built in)
  double noise = 0.08;             // expert action noise
  bool progress = true;
};

struct CollectResult {
  std::string root, camera_dtype;
  int64_t episodes = 0, frames = 0, attempts = 0;
  std::vector<std::string> short_tasks;  // tasks that got fewer than episodes_per_task
  double seconds = 0;
};

// Throws kInvalidArgument naming the flag (--suite, --episodes_per_task, --output_dir,
// --image_size, --renderer none), kUnsupported (renderer, video without FFmpeg), kIO.
CollectResult collect(const CollectOptions& options);

}  // namespace ember::sim
