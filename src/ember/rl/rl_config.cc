#include "ember/rl/rl_config.h"

#include <cmath>

#include "ember/core/error.h"

namespace ember::rl {

namespace {
void require(bool ok, const std::string& flag, const std::string& what) {
  if (!ok) throw Error(ErrorKind::kInvalidArgument, "--" + flag + ": " + what);
}
// counts (steps, frequencies) past this are typos, not runs: a saturated parse of
// 99999999999999999999 lands here too
constexpr int64_t kMaxCount = 1000000000;
}  // namespace

void validate(const RlConfig& c) {
  require(!c.checkpoint.empty() || !c.preset.empty(), "checkpoint", "missing (or --policy.preset for a fresh policy)");
  require(c.checkpoint.empty() || c.preset.empty(), "policy.preset", "not with --checkpoint");
  require(!c.output_dir.empty(), "output_dir", "missing");
  require(c.mode == "sync" || c.mode == "async", "rl.mode", "expected sync or async, got '" + c.mode + "'");
  require(c.algo == "grpo" || c.algo == "ppo", "rl.algo", "expected grpo or ppo, got '" + c.algo + "'");
  require(c.gamma > 0 && c.gamma <= 1, "rl.gamma", "must be in (0, 1]");
  require(c.gae_lambda >= 0 && c.gae_lambda <= 1, "rl.gae_lambda", "must be in [0, 1]");
  require(c.value_lr > 0 && c.value_lr <= 1, "rl.value_lr", "must be in (0, 1]");
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
  require(c.noise_method == "sde" || c.noise_method == "every_step", "rl.noise_method", "expected sde or every_step, got '" + c.noise_method + "'");
  require(c.noise_level > 0 && c.noise_level <= 10, "rl.noise_level", "must be in (0, 10]");
  require(c.denoise_steps >= 0 && c.denoise_steps <= 1000, "rl.denoise_steps", "must be in 0..1000 (0: the policy's own)");
  require(c.logprob_rows == "executed" || c.logprob_rows == "chunk", "rl.logprob_rows", "expected executed or chunk, got '" + c.logprob_rows + "'");
  require(c.filter_low >= 0 && c.filter_low <= c.filter_high && c.filter_high <= 1, "rl.filter_low/rl.filter_high",
          "must satisfy 0 <= filter_low <= filter_high <= 1");
  require(c.weight_decay >= 0 && c.weight_decay < 1, "rl.weight_decay", "must be in [0, 1)");
  require(c.shaping >= 0 && c.shaping <= 1e6, "rl.shaping", "must be in [0, 1e6]");
  require(c.clip > 0 && c.clip < 1, "rl.clip", "must be in (0, 1)");
  require(c.max_staleness >= 0 && c.max_staleness <= kMaxCount, "rl.max_staleness", "must be in 0..1000000000");
  require(c.lr > 0 && c.lr <= 1, "rl.lr", "must be in (0, 1]");
  require(c.lr_warmup >= 0 && c.lr_warmup <= kMaxCount, "rl.lr_warmup", "must be in 0..1000000000");
  require(c.grad_clip_norm > 0 && c.grad_clip_norm <= 1e6, "rl.grad_clip_norm", "must be in (0, 1e6]");
  require(c.micro_batch > 0 && c.micro_batch <= 65536, "rl.micro_batch", "must be in 1..65536");
  require(c.kl_every > 0 && c.kl_every <= kMaxCount, "rl.kl_every", "must be in 1..1000000000");
  require(c.epochs >= 1 && c.epochs <= 100, "rl.epochs", "must be 1..100");
  require(c.target_kl >= 0 && std::isfinite(c.target_kl), "rl.target_kl", "must be a finite number >= 0");
  require(c.train == "all" || c.train == "expert", "rl.train", "expected all or expert, got '" + c.train + "'");
  require(c.save_freq >= 0 && c.save_freq <= kMaxCount, "save_freq", "must be in 0..1000000000");
  require(c.eval_freq >= 0 && c.eval_freq <= kMaxCount, "eval_freq", "must be in 0..1000000000");
  require(c.eval_trials >= 1 && c.eval_trials <= 1000000, "eval.trials", "must be in 1..1000000");
  require(c.eval_n_envs >= 1 && c.eval_n_envs <= 1024, "eval.n_envs", "must be in 1..1024");
  require(c.placement == "shared" || c.placement == "split", "rl.placement", "expected shared or split, got '" + c.placement + "'");
  require(c.cpu_threads >= 0 && c.cpu_threads <= 1024, "rl.cpu_threads", "must be in 0..1024 (0: cores - env workers)");
  require(c.dist_timeout_s > 0 && c.dist_timeout_s <= 1e6, "dist.timeout_s", "must be in (0, 1e6]");
  require(c.horizon > 0 && c.horizon <= 1000, "policy.horizon", "must be in 1..1000");
  require(c.num_steps > 0 && c.num_steps <= 1000, "policy.num_steps", "must be in 1..1000");
  require(c.image_size > 0 && c.image_size <= 2048, "policy.image_size", "must be in 1..2048");
}

#define EMBER_RL_FIELDS(X)                                                                                     \
  X(checkpoint) X(preset) X(policy_type) X(horizon) X(num_steps) X(image_size) X(output_dir) X(suite) X(tasks) X(device)     \
  X(renderer) X(seed) X(mode) X(iterations) X(groups_per_step) X(group_size) X(env_workers) X(envs_per_worker) \
  X(max_batch) X(batch_timeout_ms) X(replan_steps) X(max_episode_steps) X(noise_std) X(shaping) X(clip)       \
  X(max_staleness) X(lr) X(grad_clip_norm) X(micro_batch) X(save_freq) X(algo) X(gamma) X(gae_lambda) X(value_lr)   \
  X(render_layout) X(kl_every) X(epochs) X(target_kl) X(rollout_stream) X(cuda_graphs) X(dist_timeout_s) X(cpu_threads) X(placement) \
  X(camera_size) X(train) X(eval_freq) X(eval_trials) X(eval_n_envs) X(noise_method) X(noise_level) X(denoise_steps) \
  X(logprob_rows) X(filter_low) X(filter_high) X(weight_decay) X(lr_warmup)

nlohmann::ordered_json to_json(const RlConfig& c) {
  nlohmann::ordered_json j;
#define X(f) j[#f] = c.f;
  EMBER_RL_FIELDS(X)
#undef X
  return j;
}

RlConfig rl_config_from_json(const nlohmann::json& j, const std::string& what) {
  RlConfig c;
  if (!j.is_object()) throw Error(ErrorKind::kInvalidArgument, what + ": not a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    try {
#define X(f)                                                 \
  if (it.key() == #f) known = true, it.value().get_to(c.f);
      EMBER_RL_FIELDS(X)
#undef X
    } catch (const nlohmann::json::exception& e) {
      throw Error(ErrorKind::kInvalidArgument, what + ": \"" + it.key() + "\": " + e.what());
    }
    if (!known) throw Error(ErrorKind::kInvalidArgument, what + ": unknown key \"" + it.key() + "\"");
  }
  return c;
}

}  // namespace ember::rl
