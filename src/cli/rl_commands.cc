// `ember rl`: flag parsing only; the work is in src/ember/rl/ (rl_loop.h). Fails with a clear
// error where ember was built without the simulator.
#include <chrono>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "ember/core/error.h"
#include "ember/model/policy_type.h"

#ifdef EMBER_HAVE_SIM
#include "cli/rank.h"
#include "cli/stopped.h"
#include "ember/dist/env.h"
#include "ember/rl/rl_loop.h"
#endif

namespace ember::cli {

#ifdef EMBER_HAVE_SIM
void add_rl_command(CLI::App& app, Action& action) {
  auto c = std::make_shared<rl::RlConfig>();
  CLI::App* r = app.add_subcommand("rl", "reinforcement learning (GRPO or PPO, flow-noise) of a policy in the simulator, sync or async");
  r->add_option("--checkpoint", c->checkpoint, "starting policy: an `ember train` checkpoint or output directory");
  r->add_option("--policy.preset", c->preset, "or a fresh policy of this preset (tiny | small | ...: the type's presets)");
  r->add_option("--policy.type", c->policy_type, "fresh policy: its type (" + model::policy_type_names() + "; default pi05)");
  r->add_option("--policy.horizon", c->horizon, "fresh policy: chunk length (default 10)");
  r->add_option("--policy.num_steps", c->num_steps, "fresh policy: denoising steps (default 5)");
  r->add_option("--policy.image_size", c->image_size, "fresh policy: camera size (default 32)");
  r->add_option("--output_dir", c->output_dir, "metrics.jsonl, rl_config.json, checkpoints/")->required();
  r->add_option("--suite", c->suite, "ember10 | easy (default easy)");
  r->add_option("--task", c->tasks, "only these tasks of the suite (repeatable)");
  r->add_option("--device", c->device, "auto | cuda | cpu");
  r->add_option("--renderer", c->renderer, "egl | osmesa | auto");
  r->add_option("--seed", c->seed, "seed (default 0)");
  r->add_flag("--resume", c->resume, "continue from <output_dir>/checkpoints/latest");
  r->add_option("--save_freq", c->save_freq, "a checkpoint every N steps (0: at the end only)");
  r->add_option("--eval_freq", c->eval_freq, "closed-loop evaluation of the learner's policy on the suite's evaluation states at the start, every N steps and at the end: eval.jsonl (default 0: never)");
  r->add_option("--eval.trials", c->eval_trials, "episodes per task of each evaluation (default 50)");
  r->add_option("--eval.n_envs", c->eval_n_envs, "environments stepped at once in an evaluation (default 50)");
  r->add_option("--rl.mode", c->mode, "async (default) | sync: collect, then learn, then collect");
  r->add_option("--rl.algo", c->algo, "grpo (default: group-relative, value-free) | ppo (GAE and a value head)");
  r->add_option("--rl.gamma", c->gamma, "PPO: discount per chunk (default 0.99)");
  r->add_option("--rl.gae_lambda", c->gae_lambda, "PPO: GAE lambda (default 0.95)");
  r->add_option("--rl.value_lr", c->value_lr, "PPO: value head learning rate (default 1e-3)");
  r->add_option("--rl.render_layout", c->render_layout, "auto (default: process with EGL, thread with OSMesa) | thread | process");
  r->add_option("--rl.iterations", c->iterations, "optimizer steps (default 20)");
  r->add_option("--rl.groups_per_step", c->groups_per_step, "groups per optimizer step (default 4)");
  r->add_option("--rl.group_size", c->group_size, "episodes per group, same initial state (default 4)");
  r->add_option("--rl.env_workers", c->env_workers, "environment worker threads (default 2)");
  r->add_option("--rl.envs_per_worker", c->envs_per_worker, "environments per worker (default 4)");
  r->add_option("--rl.max_batch", c->max_batch, "rollout batch: run at this many requests (default 8) ...");
  r->add_option("--rl.batch_timeout_ms", c->batch_timeout_ms, "... or when the oldest waited this long (default 5)");
  r->add_option("--rl.rollout_stream", c->rollout_stream, "CUDA: the rollout on a stream of its own (default true)");
  r->add_option("--rl.cuda_graphs", c->cuda_graphs, "CUDA: the rollout's sampling replayed as one CUDA graph per batch shape (default true)");
  r->add_option("--rl.replan_steps", c->replan_steps, "chunk steps executed per policy call (default 5)");
  r->add_option("--rl.camera_size", c->camera_size, "cameras rendered at N px and resized by the policy, as `ember eval --image_size` (default 0: the policy's size)");
  r->add_option("--rl.max_episode_steps", c->max_episode_steps, "cut episodes at N steps (default: the task's limit)");
  r->add_option("--rl.noise_method", c->noise_method,
                "sde (default: πRL's Flow-SDE, noise in one denoising step per chunk) | every_step (a fixed std on every step)");
  r->add_option("--rl.noise_level", c->noise_level, "sde: the noise level a, sigma_t = a sqrt(t / (1 - t)) (default 0.5)");
  r->add_option("--rl.noise_std", c->noise_std, "every_step: the noise std per denoising step (default 0.2)");
  r->add_option("--rl.denoise_steps", c->denoise_steps, "denoising steps of the rollout and the learner; the policy is rebuilt with them (default 4; 0: the policy's own)");
  r->add_option("--rl.logprob_rows", c->logprob_rows,
                "executed (default: the log-probability over the replan_steps rows the environment runs) | chunk (all rows)");
  r->add_option("--rl.filter_low", c->filter_low, "GRPO: leave out groups whose mean success is below this (default 0)");
  r->add_option("--rl.filter_high", c->filter_high, "GRPO: leave out groups whose mean success is above this (default 1)");
  r->add_option("--rl.weight_decay", c->weight_decay, "the policy's AdamW weight decay (default 0.01)");
  r->add_option("--rl.shaping", c->shaping, "return = success + shaping x progress in metres (default 0)");
  r->add_option("--rl.clip", c->clip, "PPO ratio clip (default 0.2)");
  r->add_option("--rl.max_staleness", c->max_staleness, "drop groups sampled more than K versions ago (default 1)");
  r->add_option("--rl.lr", c->lr, "AdamW learning rate (default 1e-4)");
  r->add_option("--rl.lr_warmup", c->lr_warmup, "steps over which the learning rate rises linearly to --rl.lr (default 0: none)");
  r->add_option("--rl.grad_clip_norm", c->grad_clip_norm, "global gradient norm clip (default 1)");
  r->add_option("--rl.micro_batch", c->micro_batch, "chunks per learner micro-batch (default 16)");
  r->add_option("--rl.placement", c->placement, "shared (default: rollout on the learner's GPU) | split (a GPU each: 2 per process or rank)");
  r->add_option("--rl.cpu_threads", c->cpu_threads, "CPU: intra-op threads of the learner and the rollout (default: cores - env workers)");
  r->add_option("--dist.timeout_s", c->dist_timeout_s, "ember launch: a collective waiting longer fails the run (default 600)");
  r->add_option("--rl.kl_every", c->kl_every, "measure the KL to the start policy on every N-th micro-batch (default 1)");
  r->add_option("--rl.epochs", c->epochs,
                "passes over each step's groups, each ending in an optimizer step; passes after the first learn "
                "from ratios away from 1, which the clip bounds (PPO's epochs; default 1)");
  r->add_option("--rl.train", c->train,
                "all (default: the whole policy) | expert (the action expert only; the vision tower, embedding and "
                "language model frozen)");
  r->add_option("--rl.target_kl", c->target_kl,
                "> 0: a pass after the first whose KL from the sampling policy (per term) exceeds this is dropped "
                "without an optimizer step, and the step's passes end (PPO's early stop; default 0: off)");
  r->callback([c, &action] {
    action = [c]() -> int {
      // the run's last line; the exit status (128 + signal when SIGINT / SIGTERM stopped it)
      auto report = [&](const rl::RlResult& result, bool print) -> int {
        const auto& last = result.iterations.empty() ? rl::IterationStats{} : result.iterations.back();
        if (result.stopped_by) return print ? report_stopped("ember rl", result.stopped_by, last.step, result.last_checkpoint)
                                            : 128 + result.stopped_by;
        if (print)
          std::printf("ember rl: %lld steps (%s), last success %.3f, return %.3f; checkpoint %s\n", (long long)last.step,
                      c->mode.c_str(), last.learner.success, last.learner.ret, result.last_checkpoint.c_str());
        return 0;
      };
      auto env = dist::detect_dist_env();
      install_stop_signals();  // SIGINT / SIGTERM: the step under way is the last, and saved
      if (!env.is_distributed()) return report(rl::run_rl(*c), true);
      // one rank of a data-parallel job (ember launch): its own env workers, rollout and learner
      RankOptions ro;
      ro.timeout = std::chrono::milliseconds(int64_t(c->dist_timeout_s * 1000));
      ro.gpus_per_rank = c->placement == "split" ? 2 : 1;  // the collectives on the learner's GPU
      int status = 0;
      const int rc = run_rank("rl", env, c->device, ro, [&](std::shared_ptr<dist::Collectives> ranks, at::Device) {
        // on cuda:LOCAL_RANK (or the CPU); rank 0 prints
        status = report(rl::run_rl(*c, nullptr, std::move(ranks)), env.rank == 0);
      });
      return rc != 0 ? rc : status;
    };
  });
}
#else
void add_rl_command(CLI::App& app, Action& action) {
  app.add_subcommand("rl", "reinforcement learning in the simulator (not in this build)")->callback([&action] {
    action = []() -> int { fail(ErrorKind::kUnsupported, "ember rl: this ember was built without the simulator (MuJoCo)"); };
  })->allow_extras();
}
#endif

}  // namespace ember::cli
