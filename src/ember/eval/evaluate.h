// Closed-loop evaluation: every task of a suite (or the chosen ones) for `trials` episodes
// from its fixed evaluation init states (trial k uses state k mod 50, episode seed from
// (seed, task, k)), so that every evaluation of a suite sees the same states and a run is
// reproducible for a seed, whatever n_envs. Prints a per-task success table, writes
// <output_dir>/eval.json atomically and, per task, the first success and first failure among
// its first kMaxRecordedPerTask episodes as a video (videos/<task>_success.mp4, _failure.mp4:
// agentview | wrist side by side) when ember has FFmpeg, else as a PNG strip of every 4th
// frame. (A recorded episode renders every step; the others only where the policy acts.)
#pragma once

#include <string>
#include <vector>

#include "ember/core/output_dir.h"

#include "ember/sim/gl_context.h"
#include "ember/sim/policy.h"
#include "ember/sim/scene.h"

namespace ember::eval {

using sim::Policy;
using sim::RendererKind;

struct EvalOptions {
  std::string suite = "ember10";
  std::vector<std::string> tasks;  // a subset of the suite's tasks by name; empty: all
  int trials = 50;                 // episodes per task (>= 1)
  int n_envs = 1;
  int threads = 0;                 // worker threads; 0: min(n_envs, cores)
  uint64_t seed = 0;
  int replan_steps = 1;            // actions of a chunk executed before asking again (>= 1)
  int image_size = 128;
  RendererKind renderer = RendererKind::kOSMesa;  // kNone: no images (policies that need none)
  std::string output_dir;          // "" writes nothing; else must be absent or empty
  bool videos = true;
  bool print_table = true;
  bool progress = true;            // a line per finished task (stderr)
  int flow_steps = 0;              // recorded in eval.json: --policy.num_steps (0: the policy's own steps)
};

struct TaskResult {
  std::string name, instruction, family;
  int trials = 0, successes = 0;
  double mean_steps_success = 0;   // mean episode length of the successes
  std::string success_video, failure_video;  // paths relative to output_dir, "" if none
  std::vector<uint8_t> outcomes;   // per trial: 1 success, 0 failure
};

struct EvalResult {
  std::string suite, policy;
  std::vector<TaskResult> tasks;
  double average_success = 0;      // mean over tasks of the success rates
  double average_stderr = 0;       // its standard error (average_success_stderr)
  int64_t env_steps = 0;
  double seconds = 0;
  int64_t policy_calls = 0;
  double policy_seconds = 0;  // in the policy's act()
  double env_seconds = 0;     // stepping the environments (physics, control, rendering)
};

// Throws kInvalidArgument naming the flag (--suite, --task, --trials, --n_envs, --output_dir,
// --image_size, --replan_steps), kUnsupported when the renderer cannot start, kIO.
EvalResult evaluate(const EvalOptions& options, Policy& policy);

// The table evaluate() prints.
std::string format_table(const EvalResult& result);

// The standard error of the mean over tasks of their success rates, each task's trials
// independent Bernoulli draws: sqrt(sum_i p_i (1 - p_i) / n_i) / tasks with p_i the task's rate
// (the plug-in estimate: a task at 0 or 100 % adds nothing). About 1.9 points for ember10 near
// 75 % at 50 trials a task: two evaluations that differ by less are within noise.
double average_success_stderr(const std::vector<TaskResult>& tasks);


}  // namespace ember::eval
