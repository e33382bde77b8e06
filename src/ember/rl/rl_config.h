// The configuration of an RL run (`ember rl`): where the starting policy and the output are, the
// simulator side (suite, workers, episodes), the rollout side (batching, exploration noise) and
// the learner (GRPO or PPO). Saved with the run as rl_config.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/train/train_config.h"

namespace ember::rl {

// Flags and rl_config.json come from one schema (rl_config.cc, core/config_fields.h): the flag
// --rl.mode is the field `mode`, written {"rl": {"mode": ...}}; the sections train's config has
// (policy, optimizer, dist) are its structs.
// a fresh policy's defaults: no preset (--checkpoint is the usual start), chunks of 10, 5 steps
inline train::PolicyConfig fresh_policy_defaults() {
  train::PolicyConfig p;
  p.preset.clear();
  p.horizon = 10;
  p.num_steps = 5;
  return p;
}

struct RlConfig {
  std::string checkpoint;         // --checkpoint: the starting policy (ember train's output)
  // a fresh policy instead: --policy.preset (one of the type's presets), --policy.type,
  // --policy.horizon (chunk length), --policy.num_steps (denoising steps); the other fields of
  // train's policy section keep their defaults
  train::PolicyConfig policy = fresh_policy_defaults();
  int64_t image_size = 32;        // --policy.image_size: a fresh policy's camera size
  std::string output_dir;
  std::string suite = "easy";
  std::vector<std::string> tasks;  // empty: the whole suite
  std::string device = "auto";
  std::string renderer = "auto";
  int64_t seed = 0;
  bool resume = false;

  // sync | async | auto: sync where the rollout and the learner share a GPU (placement shared:
  // async measured 0.62-0.75x of sync there with `small` on ember10, docs/rl_throughput.md),
  // async where they have a GPU each (placement split); resolved by with_size_defaults
  std::string mode = "auto";
  std::string algo = "grpo";      // grpo | ppo (learner.h)
  int64_t iterations = 20;        // optimizer steps
  int64_t groups_per_step = 4;    // groups in one optimizer step's batch
  int64_t group_size = 4;         // episodes per group (same initial state)
  int64_t env_workers = 2;        // threads, each owning a vector env
  int64_t envs_per_worker = 4;
  int64_t max_batch = 8;          // dynamic batcher: run when this many requests wait ...
  double batch_timeout_ms = 5;    // ... or the oldest waited this long
  bool rollout_stream = true;     // CUDA: the rollout on a stream of its own (rollout_server.h)
  bool cuda_graphs = true;        // CUDA: the rollout's chains replayed as one graph per batch shape
  int64_t replan_steps = 5;       // chunk steps executed before the policy is asked again
  int64_t camera_size = 0;        // cameras rendered at this size, resized by the policy (0: its vision size)
  int64_t max_episode_steps = 0;  // > 0: cut episodes at this many steps (else the task's limit)
  // exploration (flow_noise.h): "sde" (πRL's Flow-SDE: one noisy step per chunk, at
  // noise_level), "flow_noise" (πRL's Flow-Noise: every step, a learned std in
  // [noise_min_std, noise_max_std], noise_head.h) or "every_step" (a fixed std, noise_std, on
  // every step)
  std::string noise_method = "sde";
  double noise_level = 0.5;       // sde: the noise level a (sigma_t = a sqrt(t / (1 - t)))
  double noise_std = 0.2;         // every_step: std per denoising step (normalised units)
  double noise_min_std = 0.08, noise_max_std = 0.16;  // flow_noise: the learned std's bounds (πRL's)
  double entropy_bonus = 0.005;   // flow_noise: the entropy's weight in the loss (πRL's; the fixed stds' entropy is constant)
  // the rollout's and the learner's denoising steps; the policy is rebuilt with them, so its RL
  // checkpoints sample as it was trained (0: the policy's own). πRL runs RL with 3-4; with 10,
  // sde's late steps have stds near 0.05 whose terms dominate the gradient
  // (bench/results/rl_sde_cpu_2026-12-03.md: 76.0 % with 10, 92.8 % with 4)
  int64_t denoise_steps = 4;
  // the log-probability's rows: "executed" (the replan_steps rows the environment runs) or
  // "chunk" (all of the chunk's rows)
  std::string logprob_rows = "executed";
  // GRPO: groups whose mean success lies outside [filter_low, filter_high] are left out (πRL:
  // [0.1, 0.9]; with success as the return, groups of 10 or fewer episodes at 0 or 1 are flat
  // anyway, so the filter matters only with shaping: off by default)
  double filter_low = 0, filter_high = 1;
  double shaping = 0;             // return = success + shaping * (progress in metres)
  double clip = 0.2;              // PPO ratio clip
  int64_t max_staleness = 1;      // async: drop groups sampled more than this many versions ago
  // the policy's AdamW (πRL's betas and weight decay); value_lr is the value head's
  // optimizer.lr 0: by the policy's size (with_size_defaults)
  train::OptimizerConfig optimizer{.lr = 0, .weight_decay = 0.01, .grad_clip_norm = 1.0, .betas = {0.9, 0.95}, .eps = 1e-8};
  // the policy's learning rate rises linearly over the first lr_warmup steps (lr (k + 1) /
  // lr_warmup at step k; 0: none): AdamW's first steps move every weight by about lr whatever
  // the gradient's size (step 1's clip fraction was 10x the later steps')
  int64_t lr_warmup = -1;  // -1: by the policy's size (with_size_defaults)
  // PPO: the policy's learning rate is 0 over the first critic_warmup steps (the value head alone
  // learns, from the starting policy's rollouts); lr_warmup's ramp starts after them
  int64_t critic_warmup = 0;
  int64_t micro_batch = 16;       // chunks per learner micro-batch
  int64_t kl_every = 1;           // the KL to the start policy on every N-th micro-batch
  int64_t epochs = 1;             // passes over each step's groups (PPO's epochs) ...
  int64_t minibatches = 1;        // ... each split into this many parts of the groups, an optimizer step each
  double prefix_cache_gb = 8;     // the prefix frozen, several epochs: prefix states kept between passes, up to this
  double target_kl = 0;           // > 0: a later pass whose KL from the sampling policy passes this is
                                  // dropped, and the step's passes end there (0: every pass steps)
  // what the learner trains: "all" the policy, or the action "expert" only (the prefix's vision
  // tower, embedding and language model frozen: model::is_prefix_parameter)
  std::string train = "auto";  // auto: by the policy's size (with_size_defaults)
  int64_t save_freq = 0;          // 0: only at the end
  // --eval_freq N: the learner's policy in closed loop on the suite's evaluation states (as
  // `ember eval`) at the start, every N steps and at the end; eval.jsonl (0: never)
  int64_t eval_freq = 0;
  struct Eval {
    int64_t trials = 50;          // episodes per task of each evaluation
    int64_t n_envs = 50;          // environments stepped at once in an evaluation
  } eval;
  double gamma = 0.99;            // PPO: discount per chunk
  double gae_lambda = 0.95;       // PPO: GAE's lambda
  double value_lr = 1e-3;         // PPO: the value head's AdamW learning rate
  std::vector<int64_t> value_hidden = {128};  // PPO: the value head's hidden widths (πRL: 1024,512,256)
  // Env workers render through a process each (sim/render_process.h) or a GL context on their
  // own thread: "auto" = processes with EGL, threads with OSMesa (sim/vector_env.h).
  std::string render_layout = "auto";  // auto | thread | process
  // Where the rollout runs: "shared" (the learner's device) or "split" (a GPU of its own: each
  // process, or each rank of `ember launch`, uses two GPUs; rl_loop.cc rollout_device_of).
  std::string placement = "shared";
  int64_t cpu_threads = 0;  // CPU: intra-op threads of the learner and the rollout (0: cores - env_workers)
  train::DistConfig dist;  // a data-parallel job (ember launch): --dist.timeout_s (the others: defaults)
};

// Refuses (Error kInvalidArgument naming the flag) a config that cannot run.
void validate(const RlConfig& config);

// The defaults that depend on the policy's size, measured in two regimes (docs/rl.md): a policy
// of kLargePolicyParameters or more (`small` 145 M, pi05, GR00T) keeps its success on ember10
// only with a small, warmed-up learning rate on the action expert (lr 1e-4 on the whole `small`
// policy took it from 77 to 47 %); a smaller one (`tiny`, 0.24 M) gains on `easy` with the whole
// policy at 1e-4 and barely moves with the large recipe (bench/results/rl_defaults_cpu_2026-12-04.md).
// Fills optimizer.lr (0), lr_warmup (-1) and train ("auto") where they were left so, and mode
// ("auto": sync with placement shared, async with split); flags given keep their values.
inline constexpr int64_t kLargePolicyParameters = 10'000'000;
RlConfig with_size_defaults(RlConfig c, int64_t policy_parameters);

// `ember rl`'s flags (--name=value or --name value; --task repeats), validated. Throws
// kInvalidArgument naming the flag (an unknown one with the nearest known name).
RlConfig parse_rl_flags(const std::vector<std::string>& args);
// --help's list: every flag with its type, default and description, a line each.
std::string rl_flags_help();

// Every field, nested by section: {"checkpoint": ..., "policy": {...}, "rl": {...}, ...}.
nlohmann::ordered_json to_json(const RlConfig& config);
// The fields present in j over the defaults; throws kInvalidArgument naming `what` and the key.
RlConfig rl_config_from_json(const nlohmann::json& j, const std::string& what);
// A field of an rl_config.json by its flag's name ("rl.noise_method"), where the file has it;
// files written before the schema kept every field flat ({"noise_method": ...}).
const nlohmann::json* saved_rl_field(const nlohmann::json& j, const std::string& flag);

}  // namespace ember::rl
