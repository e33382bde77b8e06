// `ember rl`: asynchronous (or synchronous) GRPO of a flow-matching policy in ember's
// simulator. Three levels run at once:
//   env workers (env_worker.h)  -> policy requests -> rollout server (rollout_server.h)
//   finished episodes -> groups (episode_feed.h)   -> learner (learner.h) on this thread
// after each optimizer step the learner's weights are copied into the rollout's policy and the
// version advances. --rl.mode=sync: one step's groups are collected, then learned from, then
// the next step's are released (the same code, with the overlap off). --rl.mode=async: the
// next step's groups are collected while the learner works, and each group enters gradient
// accumulation as it completes; groups sampled by weights more than --rl.max_staleness
// versions old are dropped (grpo.h: too_stale).
//
// Output: <output_dir>/metrics.jsonl (one line per optimizer step), rl_config.json, and
// checkpoints/<step>/ (the policy files as `ember train` writes them, so `ember eval
// --checkpoint` reads them; optimizer.safetensors; rl_state.json). --resume continues from the
// latest checkpoint.
//
// Reproducibility. Sync mode with --rl.max_batch=1 and --rl.cpu_threads=1 on the CPU (OSMesa)
// is bit-exact, and so is its resume (rl_loop_test checks it). Two causes of runs that
// differed in their last bits are gone: the rollout thread's OpenMP team size, which is per
// thread, left at the library's default (about one run in eight; now --rl.cpu_threads), and
// OSMesa's tiled batches, in which a view's pixels depended on its tile and the tile on the
// workers' timing (about one in twenty; sim/render.h). Every random draw is seeded by the episode (initial states, the env's seed, each
// request's noise stream: flow_noise.h), every chunk of a step is sampled by the same weights, and
// the step's groups enter accumulation in group order. With larger batches it is not claimed,
// on the CPU or on CUDA: the dynamic batcher's batches follow the timing, and the libraries pick
// other kernels or blockings for another batch size (MKL's linear changes a row's last bits at 9
// of the batch sizes 1-39 on this project's CPU), so a chain can differ in its last bits. Async
// is not, by nature: the version of the weights that samples a chunk depends on where the
// episode was when the learner swapped them in, and groups enter accumulation as they finish;
// both follow the threads' timing. A resumed async run starts with an empty pipeline (the
// uninterrupted run had the next step's episodes under way, sampled by older weights).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ember/rl/learner.h"
#include "ember/rl/rl_config.h"

namespace ember::rl {

struct IterationStats {
  int64_t step = 0;  // optimizer steps done
  StepStats learner;
  double staleness = 0;  // mean versions between sampling and learning, over used groups
  int64_t dropped = 0;   // stale groups dropped in this step
  double wall_s = 0;
  double env_busy = 0, rollout_busy = 0, learner_busy = 0;  // fractions of wall_s
  double rollout_batch = 0;  // requests per rollout batch, the step's mean (--rl.max_batch at most)
  int64_t epochs = 0;        // passes that ended in an optimizer step (--rl.epochs, less those --rl.target_kl dropped)
  int64_t env_steps = 0;
  double env_steps_per_s = 0, samples_per_s = 0;  // samples: chunks the learner used
};

struct RlResult {
  std::vector<IterationStats> iterations;  // this process's
  std::string last_checkpoint;
  // SIGINT / SIGTERM (core/stop_signal.h) that ended the run after the step it was in, which was
  // evaluated (--eval_freq) and saved as a last step is; 0 when the run went to the end
  int stopped_by = 0;
};

// Runs config.iterations optimizer steps (less the resumed ones). Throws Error for bad flags
// (naming them), a bad checkpoint (naming its file), or a failure of a worker.
// on_iteration (optional) sees each step's figures.
// ranks (optional): a data-parallel job (`ember launch`), every rank calling run_rl with the same
// config; on CUDA the collectives must be on the rank's learner GPU (cuda:LOCAL_RANK, or
// cuda:2 x LOCAL_RANK with --rl.placement=split). Each rank runs its own env workers and rollout on its device and
// 1/world of each step's groups (episode_feed.h: the groups one process would run, dealt out in
// turn); the learners sum their gradients (learner.h), so every rank holds the same weights and
// swaps them into its rollout. The figures are the job's (sums over the ranks; the busy
// fractions their means); rank 0 writes metrics.jsonl, rl_config.json and the checkpoints, and
// every rank resumes from them. Sync mode with --rl.max_batch=1 on the CPU runs the same
// episodes as one process with the same config, so its first step's figures are the same and
// the weights agree to rounding (the sums run in another order; rl_dist_test), and a sync job
// resumes as one process does.
RlResult run_rl(const RlConfig& config, const std::function<void(const IterationStats&)>& on_iteration = nullptr,
                std::shared_ptr<dist::Collectives> ranks = nullptr);

}  // namespace ember::rl
