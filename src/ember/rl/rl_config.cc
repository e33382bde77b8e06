#include "ember/rl/rl_config.h"

#include <cmath>

#include "ember/core/config_fields.h"
#include "ember/core/error.h"
#include "ember/model/policy_catalog.h"

namespace ember::rl {

namespace {
void require(bool ok, const std::string& flag, const std::string& what) {
  if (!ok) throw Error(ErrorKind::kInvalidArgument, "--" + flag + ": " + what);
}
// counts (steps, frequencies) past this are typos, not runs: a saturated parse of
// 99999999999999999999 lands here too
constexpr int64_t kMaxCount = 1000000000;
}  // namespace

namespace {

using config::Choices;
using config::Help;

Help policy_type_help() {
  static const std::string help = "fresh policy: its registered type (" + model::policy_type_names() + ")";
  return help.c_str();
}

// Every flag once: its name (the JSON path too), the field, a string's choices, --help's line.
struct RlFields {
  template <class C, class V>
  void operator()(C& c, V&& v) const;
};
template <class C, class V>
void RlFields::operator()(C& c, V&& v) const {
  v("checkpoint", c.checkpoint, Choices{}, "starting policy: an `ember train` checkpoint or output directory");
  v("policy.preset", c.policy.preset, Choices{}, "or a fresh policy of this preset (tiny | small | ...: the type's presets)");
  v("policy.type", c.policy.type, Choices{}, policy_type_help());
  v("policy.horizon", c.policy.horizon, Choices{}, "fresh policy: chunk length");
  v("policy.num_steps", c.policy.num_steps, Choices{}, "fresh policy: denoising steps");
  v("policy.image_size", c.image_size, Choices{}, "fresh policy: camera size");
  v("output_dir", c.output_dir, Choices{}, "metrics.jsonl, rl_config.json, checkpoints/ (required)");
  v("suite", c.suite, Choices{}, "ember10 | easy");
  v("task", c.tasks, Choices{}, "only these tasks of the suite (repeatable; none: the whole suite)");
  v("device", c.device, Choices{}, "auto | cuda | cpu: where the learner runs (auto: CUDA when available)");
  v("renderer", c.renderer, Choices{"auto", "egl", "osmesa", "none"}, "the cameras' renderer (auto: EGL on a GPU, else OSMesa)");
  v("seed", c.seed, Choices{}, "seed of the run (initial states, noise, fresh weights)");
  v("resume", c.resume, Choices{}, "continue from <output_dir>/checkpoints/latest");
  v("save_freq", c.save_freq, Choices{}, "a checkpoint every N steps (0: at the end only)");
  v("eval_freq", c.eval_freq, Choices{},
    "closed-loop evaluation of the learner's policy on the suite's evaluation states at the start, every N steps and at the end: eval.jsonl (0: never)");
  v("eval.trials", c.eval.trials, Choices{}, "episodes per task of each evaluation");
  v("eval.n_envs", c.eval.n_envs, Choices{}, "environments stepped at once in an evaluation");
  v("rl.mode", c.mode, Choices{"auto", "async", "sync"},
    "async: the next step's episodes run while the learner works; sync: collect, then learn; auto: sync on a shared GPU, async with placement split");
  v("rl.algo", c.algo, Choices{"grpo", "ppo"}, "grpo: group-relative, value-free; ppo: GAE and a value head");
  v("rl.iterations", c.iterations, Choices{}, "optimizer steps");
  v("rl.groups_per_step", c.groups_per_step, Choices{}, "groups per optimizer step");
  v("rl.group_size", c.group_size, Choices{}, "episodes per group, from the same initial state");
  v("rl.env_workers", c.env_workers, Choices{}, "environment worker threads");
  v("rl.envs_per_worker", c.envs_per_worker, Choices{}, "environments per worker");
  v("rl.render_layout", c.render_layout, Choices{"auto", "thread", "process"},
    "auto: a render process per worker with EGL, threads with OSMesa");
  v("rl.max_batch", c.max_batch, Choices{}, "rollout batch: run at this many requests ...");
  v("rl.batch_timeout_ms", c.batch_timeout_ms, Choices{}, "... or when the oldest waited this long");
  v("rl.rollout_stream", c.rollout_stream, Choices{}, "CUDA: the rollout on a stream of its own");
  v("rl.cuda_graphs", c.cuda_graphs, Choices{}, "CUDA: the rollout's sampling replayed as one CUDA graph per batch shape");
  v("rl.replan_steps", c.replan_steps, Choices{}, "chunk steps executed per policy call");
  v("rl.camera_size", c.camera_size, Choices{},
    "cameras rendered at N px and resized by the policy, as `ember eval --image_size` (0: the policy's size)");
  v("rl.max_episode_steps", c.max_episode_steps, Choices{}, "cut episodes at N steps (0: the task's limit)");
  v("rl.noise_method", c.noise_method, Choices{"sde", "flow_noise", "every_step"},
    "sde: πRL's Flow-SDE, noise in one denoising step per chunk; flow_noise: πRL's Flow-Noise, a learned std on every step; every_step: a fixed std on every step");
  v("rl.noise_level", c.noise_level, Choices{}, "sde: the noise level a, sigma_t = a sqrt(t / (1 - t))");
  v("rl.noise_std", c.noise_std, Choices{}, "every_step: the noise std per denoising step");
  v("rl.noise_min_std", c.noise_min_std, Choices{}, "flow_noise: the learned std's lower bound");
  v("rl.noise_max_std", c.noise_max_std, Choices{}, "flow_noise: the learned std's upper bound");
  v("rl.entropy_bonus", c.entropy_bonus, Choices{}, "flow_noise: the weight of the exploration noise's entropy in the loss");
  v("rl.denoise_steps", c.denoise_steps, Choices{},
    "denoising steps of the rollout and the learner; the policy is rebuilt with them (0: the policy's own)");
  v("rl.logprob_rows", c.logprob_rows, Choices{"executed", "chunk"},
    "the log-probability over the replan_steps rows the environment runs, or over all the chunk's rows");
  v("rl.filter_low", c.filter_low, Choices{}, "GRPO: leave out groups whose mean success is below this");
  v("rl.filter_high", c.filter_high, Choices{}, "GRPO: leave out groups whose mean success is above this");
  v("rl.shaping", c.shaping, Choices{}, "return = success + shaping x progress in metres");
  v("rl.clip", c.clip, Choices{}, "PPO ratio clip");
  v("rl.max_staleness", c.max_staleness, Choices{}, "async: drop groups sampled more than K versions ago");
  v("optimizer.lr", c.optimizer.lr, Choices{}, "the policy's AdamW learning rate (0: 1e-5 for a policy of >= 10 M parameters, 1e-4 below)");
  v("optimizer.weight_decay", c.optimizer.weight_decay, Choices{}, "the policy's AdamW weight decay (πRL's)");
  v("optimizer.grad_clip_norm", c.optimizer.grad_clip_norm, Choices{}, "clip the global gradient norm to this");
  v("optimizer.betas", c.optimizer.betas, Choices{}, "AdamW's two betas (πRL's)");
  v("optimizer.eps", c.optimizer.eps, Choices{}, "AdamW epsilon");
  v("rl.lr_warmup", c.lr_warmup, Choices{}, "steps over which the learning rate rises linearly to --optimizer.lr (0: none; -1: 10 for a policy of >= 10 M parameters, 0 below)");
  v("rl.critic_warmup", c.critic_warmup, Choices{}, "PPO: steps at the start in which only the value head learns (the policy's lr is 0)");
  v("rl.micro_batch", c.micro_batch, Choices{}, "chunks per learner micro-batch");
  v("rl.kl_every", c.kl_every, Choices{}, "measure the KL to the start policy on every N-th micro-batch");
  v("rl.epochs", c.epochs, Choices{},
    "passes over each step's groups, each ending in an optimizer step; passes after the first learn from ratios away from 1, which the clip bounds (PPO's epochs)");
  v("rl.minibatches", c.minibatches, Choices{},
    "optimizer steps per pass: the step's groups (each rank's) split into this many parts in the order learned, an optimizer step each (PPO's mini-batches; RLinf's pi0.5 LIBERO recipe takes 3 of 2,048 chunks per pass)");
  v("rl.prefix_cache_gb", c.prefix_cache_gb, Choices{},
    "the prefix frozen (--rl.train expert) and several --rl.epochs: each chunk's prefix is encoded once and kept for the later passes, up to this many GiB (the rest encoded again; 0: none kept)");
  v("rl.target_kl", c.target_kl, Choices{},
    "> 0: a pass after the first whose KL from the sampling policy (per term) exceeds this is dropped without an optimizer step, and the step's passes end (PPO's early stop; 0: off)");
  v("rl.train", c.train, Choices{"auto", "all", "expert"},
    "all: the whole policy; expert: the action expert only (the vision tower, embedding and language model frozen); auto: expert for a policy of >= 10 M parameters, all below");
  v("rl.gamma", c.gamma, Choices{}, "PPO: discount per chunk");
  v("rl.gae_lambda", c.gae_lambda, Choices{}, "PPO: GAE lambda");
  v("rl.value_lr", c.value_lr, Choices{}, "PPO: the value head's learning rate");
  v("rl.value_hidden", c.value_hidden, Choices{}, "PPO: the value head's hidden layers' widths, e.g. [1024,512,256] (πRL's)");
  v("rl.placement", c.placement, Choices{"shared", "split"},
    "shared: the rollout on the learner's GPU; split: a GPU each (2 per process or rank)");
  v("rl.cpu_threads", c.cpu_threads, Choices{}, "CPU: intra-op threads of the learner and the rollout (0: cores - env workers)");
  v("dist.timeout_s", c.dist.timeout_s, Choices{}, "ember launch: a collective waiting longer fails the run");
}

}  // namespace

RlConfig with_size_defaults(RlConfig c, int64_t policy_parameters) {
  const bool large = policy_parameters >= kLargePolicyParameters;
  if (c.optimizer.lr == 0) c.optimizer.lr = large ? 1e-5 : 1e-4;
  if (c.lr_warmup < 0) c.lr_warmup = large ? 10 : 0;
  if (c.train == "auto") c.train = large ? "expert" : "all";
  if (c.mode == "auto") c.mode = c.placement == "split" ? "async" : "sync";  // one GPU each: overlap pays; shared: it does not
  return c;
}

void validate(const RlConfig& c) {
  require(!c.checkpoint.empty() || !c.policy.preset.empty(), "checkpoint", "missing (or --policy.preset for a fresh policy)");
  require(c.checkpoint.empty() || c.policy.preset.empty(), "policy.preset", "not with --checkpoint");
  require(!c.output_dir.empty(), "output_dir", "missing");
  config::check_choices(RlFields{}, c);
  require(c.mode == "sync" || c.mode == "async" || c.mode == "auto", "rl.mode", "expected auto, sync or async, got '" + c.mode + "'");
  require(c.algo == "grpo" || c.algo == "ppo", "rl.algo", "expected grpo or ppo, got '" + c.algo + "'");
  require(c.gamma > 0 && c.gamma <= 1, "rl.gamma", "must be in (0, 1]");
  require(c.gae_lambda >= 0 && c.gae_lambda <= 1, "rl.gae_lambda", "must be in [0, 1]");
  require(c.value_lr > 0 && c.value_lr <= 1, "rl.value_lr", "must be in (0, 1]");
  require(!c.value_hidden.empty() && c.value_hidden.size() <= 8, "rl.value_hidden", "one to eight widths");
  for (int64_t w : c.value_hidden) require(w >= 1 && w <= 65536, "rl.value_hidden", "widths in [1, 65536]");
  require(c.render_layout == "auto" || c.render_layout == "thread" || c.render_layout == "process", "rl.render_layout",
          "expected auto, thread or process, got '" + c.render_layout + "'");
  require(c.iterations > 0 && c.iterations <= kMaxCount, "rl.iterations", "must be in 1..1000000000");
  require(c.groups_per_step > 0 && c.groups_per_step <= 65536, "rl.groups_per_step", "must be in 1..65536");
  require(c.group_size >= 2 && c.group_size <= 4096, "rl.group_size", "must be in 2..4096 (advantages are relative to the group)");
  require(c.env_workers > 0 && c.env_workers <= 256, "rl.env_workers", "must be in 1..256");
  require(c.envs_per_worker > 0 && c.envs_per_worker <= 1024, "rl.envs_per_worker", "must be in 1..1024");
  require(c.max_batch > 0 && c.max_batch <= 65536, "rl.max_batch", "must be in 1..65536");
  require(c.batch_timeout_ms >= 0 && c.batch_timeout_ms <= 60000, "rl.batch_timeout_ms", "must be in 0..60000");
  require(c.replan_steps > 0 && c.replan_steps <= 1000, "rl.replan_steps", "must be in 1..1000");
  require(c.camera_size == 0 || (c.camera_size >= 8 && c.camera_size <= 2048), "rl.camera_size", "must be 0 (the policy's size) or in 8..2048");
  require(c.max_episode_steps >= 0 && c.max_episode_steps <= 1000000, "rl.max_episode_steps", "must be in 0..1000000");
  require(c.noise_std > 0 && std::isfinite(c.noise_std), "rl.noise_std", "must be a finite number > 0");
  require(c.noise_method == "sde" || c.noise_method == "flow_noise" || c.noise_method == "every_step", "rl.noise_method",
          "expected sde, flow_noise or every_step, got '" + c.noise_method + "'");
  require(c.noise_min_std > 0 && c.noise_min_std < c.noise_max_std && c.noise_max_std <= 10, "rl.noise_min_std/rl.noise_max_std",
          "must satisfy 0 < noise_min_std < noise_max_std <= 10");
  require(c.entropy_bonus >= 0 && c.entropy_bonus <= 10, "rl.entropy_bonus", "must be in [0, 10]");
  require(c.noise_level > 0 && c.noise_level <= 10, "rl.noise_level", "must be in (0, 10]");
  require(c.denoise_steps >= 0 && c.denoise_steps <= 1000, "rl.denoise_steps", "must be in 0..1000 (0: the policy's own)");
  require(c.logprob_rows == "executed" || c.logprob_rows == "chunk", "rl.logprob_rows", "expected executed or chunk, got '" + c.logprob_rows + "'");
  require(c.filter_low >= 0 && c.filter_low <= c.filter_high && c.filter_high <= 1, "rl.filter_low/rl.filter_high",
          "must satisfy 0 <= filter_low <= filter_high <= 1");
  require(c.optimizer.weight_decay >= 0 && c.optimizer.weight_decay < 1, "optimizer.weight_decay", "must be in [0, 1)");
  require(c.shaping >= 0 && c.shaping <= 1e6, "rl.shaping", "must be in [0, 1e6]");
  require(c.clip > 0 && c.clip < 1, "rl.clip", "must be in (0, 1)");
  require(c.max_staleness >= 0 && c.max_staleness <= kMaxCount, "rl.max_staleness", "must be in 0..1000000000");
  require(c.optimizer.lr >= 0 && c.optimizer.lr <= 1, "optimizer.lr", "must be in [0, 1] (0: by the policy's size)");
  for (double b : c.optimizer.betas) require(b >= 0 && b < 1, "optimizer.betas", "values in [0, 1)");
  require(c.optimizer.eps > 0 && c.optimizer.eps <= 1, "optimizer.eps", "must be in (0, 1]");
  require(c.lr_warmup >= -1 && c.lr_warmup <= kMaxCount, "rl.lr_warmup", "must be in -1..1000000000 (-1: by the policy's size)");
  require(c.critic_warmup >= 0 && c.critic_warmup <= kMaxCount, "rl.critic_warmup", "must be in 0..1000000000");
  require(c.critic_warmup == 0 || c.algo == "ppo", "rl.critic_warmup", "needs --rl.algo ppo (GRPO has no value head)");
  require(c.optimizer.grad_clip_norm > 0 && c.optimizer.grad_clip_norm <= 1e6, "optimizer.grad_clip_norm", "must be in (0, 1e6]");
  require(c.micro_batch > 0 && c.micro_batch <= 65536, "rl.micro_batch", "must be in 1..65536");
  require(c.kl_every > 0 && c.kl_every <= kMaxCount, "rl.kl_every", "must be in 1..1000000000");
  require(c.epochs >= 1 && c.epochs <= 100, "rl.epochs", "must be 1..100");
  require(c.minibatches >= 1 && c.minibatches <= c.groups_per_step, "rl.minibatches", "must be 1..--rl.groups_per_step");
  require(c.prefix_cache_gb >= 0 && c.prefix_cache_gb <= 4096, "rl.prefix_cache_gb", "must be 0..4096");
  require(c.target_kl >= 0 && std::isfinite(c.target_kl), "rl.target_kl", "must be a finite number >= 0");
  require(c.train == "auto" || c.train == "all" || c.train == "expert", "rl.train", "expected auto, all or expert, got '" + c.train + "'");
  require(c.save_freq >= 0 && c.save_freq <= kMaxCount, "save_freq", "must be in 0..1000000000");
  require(c.eval_freq >= 0 && c.eval_freq <= kMaxCount, "eval_freq", "must be in 0..1000000000");
  require(c.eval.trials >= 1 && c.eval.trials <= 1000000, "eval.trials", "must be in 1..1000000");
  require(c.eval.n_envs >= 1 && c.eval.n_envs <= 1024, "eval.n_envs", "must be in 1..1024");
  require(c.placement == "shared" || c.placement == "split", "rl.placement", "expected shared or split, got '" + c.placement + "'");
  require(c.cpu_threads >= 0 && c.cpu_threads <= 1024, "rl.cpu_threads", "must be in 0..1024 (0: cores - env workers)");
  require(c.dist.timeout_s > 0 && c.dist.timeout_s <= 1e6, "dist.timeout_s", "must be in (0, 1e6]");
  require(c.policy.horizon > 0 && c.policy.horizon <= 1000, "policy.horizon", "must be in 1..1000");
  require(c.policy.num_steps > 0 && c.policy.num_steps <= 1000, "policy.num_steps", "must be in 1..1000");
}


RlConfig parse_rl_flags(const std::vector<std::string>& args) {
  const auto flags = config::split_flags<RlConfig>(RlFields{}, args);
  // the optimizer's flags took `ember train`'s names (2026-12-04)
  for (const auto& f : flags)
    for (const char* renamed : {"lr", "weight_decay", "grad_clip_norm"})
      if (f.name == std::string("rl.") + renamed)
        config::bad("--" + f.name + ": now --optimizer." + renamed + ", as `ember train` names it");
  RlConfig c;
  config::apply_flags(RlFields{}, c, flags);
  validate(c);
  return c;
}

std::string rl_flags_help() {
  return config::flags_help<RlConfig>(RlFields{}, [](const std::string&) { return std::string(); });
}

nlohmann::ordered_json to_json(const RlConfig& c) { return config::to_json(RlFields{}, c); }

RlConfig rl_config_from_json(const nlohmann::json& j, const std::string& what) {
  return config::from_json<RlConfig>(RlFields{}, j, what);
}

const nlohmann::json* saved_rl_field(const nlohmann::json& j, const std::string& flag) {
  const nlohmann::json* at = &j;
  for (const std::string& part : config::split_path(flag)) {
    if (!at->is_object() || !at->contains(part)) {
      // a file from before the schema: every field flat under its member's name
      const std::string leaf = flag.substr(flag.rfind('.') + 1);
      return j.is_object() && j.contains(leaf) && !j.at(leaf).is_object() ? &j.at(leaf) : nullptr;
    }
    at = &(*at)[part];
  }
  return at;
}

}  // namespace ember::rl
