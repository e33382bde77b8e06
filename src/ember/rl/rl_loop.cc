#include "ember/rl/rl_loop.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <mutex>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/core/json_file.h"
#include "ember/core/stop_signal.h"
#include "ember/core/thread_pool.h"
#include "ember/eval/checkpoint_policy.h"
#include "ember/eval/evaluate.h"
#include "ember/model/device.h"
#include "ember/model/weights.h"
#include "ember/rl/env_worker.h"
#include "ember/rl/grpo.h"
#include "ember/rl/policy_setup.h"
#include "ember/rl/rl_resume.h"
#include "ember/rl/step_passes.h"
#include "ember/sim/gl_context.h"
#include "ember/train/checkpoint_dir.h"
#include "ember/train/checkpointer.h"
#include "ember/train/metrics.h"

namespace ember::rl {

namespace fs = std::filesystem;

namespace {

// the exploration the flags ask for (flow_noise.h)
FlowNoise flow_noise(const RlConfig& c, int64_t action_dim) {
  FlowNoise n;
  n.method = parse_noise_method(c.noise_method, "--rl.noise_method");
  n.sigma = n.method == NoiseMethod::kSde ? c.noise_level : c.noise_std;
  n.action_dim = action_dim;
  n.rows = c.logprob_rows == "executed" ? c.replan_steps : 0;
  return n;
}

using Clock = std::chrono::steady_clock;

// The counters behind one step's busy fractions and rates.
struct Counters {
  Clock::time_point at;
  int64_t waits_ns = 0, env_steps = 0, rollout_ns = 0, learner_ns = 0, batches = 0, requests = 0;
};

// A fresh policy's and value head's initialisation seeds the process's global generator and
// draws from it: two runs in one process (the ranks of rl_dist_test, as threads) take turns.
std::mutex& seeded_init_mutex() {
  static std::mutex m;
  return m;
}

// Where the learner and the rollout run. device: this process's (cuda:LOCAL_RANK for a rank).
// --rl.placement shared: both there. split: the learner on an even GPU, the rollout on the next
// (one process: cuda:0 and cuda:1; the rank with LOCAL_RANK r of a job: cuda:2r and cuda:2r+1).
struct Placement {
  at::Device learner, rollout;
};
Placement placement_of(const RlConfig& c, const at::Device& device) {
  if (c.placement != "split") return {device, device};
  if (!device.is_cuda()) throw Error(ErrorKind::kInvalidArgument, "--rl.placement=split: needs CUDA devices (--device=" + c.device + ")");
  const int learner = 2 * int(device.index());
  if (learner + 1 >= int(torch::cuda::device_count()))
    throw Error(ErrorKind::kInvalidArgument, "--rl.placement=split: the rollout would be on cuda:" + std::to_string(learner + 1) + ", but this node has " +
                                                 std::to_string(torch::cuda::device_count()) + " CUDA device(s) (two per rank)");
  return {at::Device(at::kCUDA, c10::DeviceIndex(learner)), at::Device(at::kCUDA, c10::DeviceIndex(learner + 1))};
}

// --eval_freq: the learner's policy in closed loop on the suite's evaluation states, as `ember
// eval --seed` samples it; one line of eval.jsonl. Its time counts in the next step's wall time.
struct LearnerEvaluation {
  const RlConfig& c;
  const train::PolicyBundle& bundle;
  const model::SampleBuilder& builder;
  at::Device device;
  sim::RendererKind renderer;
  int image_size;
  train::MetricsLogger& log;    // eval.jsonl
  train::MetricsLogger& shown;  // metrics.jsonl's, whose terminal line the result goes to

  void operator()(model::PolicyModuleImpl& policy, int64_t step, int64_t env_steps) {
    eval::ModuleSimPolicy sim_policy(policy, bundle.shape, builder, bundle.spec.state_key, device, "rl");
    eval::EvalOptions eo;
    eo.suite = c.suite;
    eo.tasks = c.tasks;
    eo.trials = int(c.eval.trials);
    eo.n_envs = int(c.eval.n_envs);
    eo.seed = uint64_t(c.seed);
    eo.replan_steps = int(c.replan_steps);
    eo.image_size = image_size;
    eo.renderer = renderer;
    eo.videos = eo.print_table = eo.progress = false;
    const bool training = policy.is_training();
    policy.eval();
    at::manual_seed(uint64_t(c.seed));  // CheckpointSimPolicy's seeding
    const auto r = eval::evaluate(eo, sim_policy);
    policy.train(training);
    nlohmann::ordered_json j{{"step", step}, {"env_steps", env_steps}, {"average_success", r.average_success}, {"average_success_stderr", r.average_stderr}};
    nlohmann::ordered_json tasks;
    for (const auto& t : r.tasks) tasks[t.name] = double(t.successes) / t.trials;  // trials >= 1 (validate)
    j["tasks"] = tasks;
    j["trials_per_task"] = c.eval.trials;
    j["seconds"] = r.seconds;
    log.append(j.dump());
    char line[256];
    std::snprintf(line, sizeof line, "ember rl: evaluation at step %lld (%lld env steps): %.1f %% average success (+- %.1f), %zu tasks x %lld trials, %.1f s",
                  (long long)step, (long long)env_steps, 100.0 * r.average_success, 100.0 * r.average_stderr, r.tasks.size(), (long long)c.eval.trials, r.seconds);
    shown.print(line);
  }
};

// Where the run works: its rank among the job's, the learner's and the rollout's devices, the
// CPU's intra-op threads, the tasks and the renderer.
struct Runtime {
  int rank = 0, world = 1;
  int64_t groups_per_rank = 0;  // of each step's --rl.groups_per_step
  at::Device device{at::kCPU}, rollout_device{at::kCPU};
  int cpu_threads = 1;  // the learner's (this thread) and the rollout's
  sim::RendererKind renderer = sim::RendererKind::kNone;
  std::vector<sim::TaskSpec> specs;     // the suite's tasks, --rl.max_episode_steps applied
  std::vector<const sim::TaskSpec*> tasks;  // into specs

  Runtime(const RlConfig& c, dist::Collectives* ranks) {
    rank = ranks ? ranks->rank() : 0, world = ranks ? ranks->world_size() : 1;
    if (c.groups_per_step % world != 0)
      throw Error(ErrorKind::kInvalidArgument, "--rl.groups_per_step=" + std::to_string(c.groups_per_step) + ": not a multiple of the job's " +
                                                   std::to_string(world) + " ranks (each rank runs an equal share)");
    groups_per_rank = c.groups_per_step / world;
    if (c.minibatches > groups_per_rank)
      throw Error(ErrorKind::kInvalidArgument, "--rl.minibatches=" + std::to_string(c.minibatches) + ": more than each rank's " +
                                                   std::to_string(groups_per_rank) + " groups of a step");
    for (const auto* t : sim::select_tasks(sim::find_suite(c.suite), c.tasks)) {
      specs.push_back(*t);
      if (c.max_episode_steps > 0) specs.back().max_steps = int(c.max_episode_steps);
    }
    for (const auto& t : specs) tasks.push_back(&t);
    renderer = sim::parse_renderer(c.renderer);
    if (renderer == sim::RendererKind::kNone) throw Error(ErrorKind::kInvalidArgument, "--renderer: none, but the policy needs camera images");
    at::Device process_device = model::resolve_device(c.device);
    if (ranks && process_device.is_cuda()) process_device = at::Device(at::kCUDA, c10::DeviceIndex(ranks->local_rank()));  // one GPU per rank
    const Placement placement = placement_of(c, process_device);
    device = placement.learner, rollout_device = placement.rollout;
    cpu_threads = c.cpu_threads > 0 ? int(c.cpu_threads) : std::max(1, usable_cores() - int(c.env_workers));
    if (!device.is_cuda()) at::set_num_threads(cpu_threads);
  }
  Runtime(const Runtime&) = delete;  // tasks point into specs
};

LearnerOptions learner_options(const RlConfig& c, int64_t action_dim) {
  LearnerOptions lo;
  lo.ppo = c.algo == "ppo";
  lo.noise = flow_noise(c, action_dim);
  lo.filter_low = c.filter_low;
  lo.filter_high = c.filter_high;
  lo.weight_decay = c.optimizer.weight_decay;
  lo.betas = c.optimizer.betas;
  lo.eps = c.optimizer.eps;
  lo.clip = c.clip;
  lo.lr = c.optimizer.lr;
  lo.grad_clip_norm = c.optimizer.grad_clip_norm;
  lo.micro_batch = int(c.micro_batch);
  lo.kl_every = int(c.kl_every);
  lo.train_prefix = c.train == "all";
  lo.prefix_cache_bytes = c.epochs > 1 ? int64_t(c.prefix_cache_gb * double(int64_t(1) << 30)) : 0;
  lo.gamma = c.gamma;
  lo.gae_lambda = c.gae_lambda;
  lo.value_lr = c.value_lr;
  lo.entropy_bonus = c.entropy_bonus;
  return lo;
}

// The policies: the learner's (trained, with its optimizer and the reference for the KL), PPO's
// value head and the rollout's copy of it; every rank starts from rank 0's weights, or from the
// checkpoint being resumed.
struct Policies {
  RlConfig config;  // the run's flags with the size-dependent defaults filled in (with_size_defaults)
  train::PolicyBundle bundle;
  ValueHead value = nullptr, rollout_value = nullptr;
  NoiseHead noise_head = nullptr, rollout_noise_head = nullptr;  // flow_noise's std head, the rollout's copy
  LearnerOptions options;
  std::unique_ptr<Learner> learner;
  Resumed from;

  Policies(const RlConfig& given, const Runtime& rt, const std::shared_ptr<dist::Collectives>& ranks,
           const std::optional<train::CheckpointRef>& resume) {
    std::unique_lock<std::mutex> seeded(seeded_init_mutex());
    bundle = starting_policy(given, rt.tasks, rt.device);
    int64_t parameters = 0;
    for (const auto& t : bundle.module->parameters()) parameters += t.numel();
    config = with_size_defaults(given, parameters);
    const RlConfig& c = config;
    // the optimizer's state is the trained parameters': a run resumes training what it trained
    if (resume) must_keep(resume->dir, "rl.train", c.train, "all");  // "all" where it predates the flag
    if (c.algo == "ppo") {
      at::manual_seed(uint64_t(c.seed) + 1);
      value = ValueHead(bundle.module->prefix_feature_dim(), c.value_hidden);
      value->to(rt.device);
      rollout_value = ValueHead(bundle.module->prefix_feature_dim(), c.value_hidden);
      rollout_value->to(rt.rollout_device);
      rollout_value->eval();
    }
    if (c.noise_method == "flow_noise") {
      const int64_t width = bundle.module->expert_width();
      if (width <= 0)
        throw Error(ErrorKind::kInvalidArgument, "--rl.noise_method=flow_noise: " + bundle.module->type() +
                                                     " policies do not expose their action expert's hidden states, which its std head reads (use sde or every_step)");
      at::manual_seed(uint64_t(c.seed) + 2);
      noise_head = NoiseHead(width, bundle.spec.action_dim, c.noise_min_std, c.noise_max_std);
      noise_head->to(rt.device);
    }
    seeded.unlock();
    // every rank starts from rank 0's weights, whatever its own seeding did (as `ember train`)
    auto broadcast_parameters = [&](torch::nn::Module& m) {
      if (!ranks) return;
      auto p = m.parameters();
      ranks->broadcast(p, 0);
    };
    broadcast_parameters(*bundle.module);
    if (value) {
      broadcast_parameters(*value);
      train::copy_parameters(*rollout_value, *value);
    }
    if (noise_head) broadcast_parameters(*noise_head);
    options = learner_options(c, bundle.spec.action_dim);
    learner = std::make_unique<Learner>(bundle.module, train::copy_module(bundle, rt.device), rt.device, options, value, ranks, noise_head);
    if (resume) {
      from = restore(resume->dir, *learner, rt.device);
      if (value) train::copy_parameters(*rollout_value, *value);
    }
    if (noise_head) {
      rollout_noise_head = clone_noise_head(*noise_head, rt.rollout_device);  // after the resume's weights
      rollout_noise_head->eval();
    }
  }
};

// The collection side: the rollout server (its own copy of the policy), the episode feed and the
// env workers; stops the workers (the feed, then their episodes in flight) before anything they
// use goes.
struct Rollout {
  model::SampleBuilder builder;
  RolloutServer server;
  EpisodeFeed feed;
  std::shared_ptr<const sim::Scene> scene;
  EnvWorkerOptions worker_options;
  std::vector<std::unique_ptr<EnvWorker>> workers;

  Rollout(const RlConfig& c, const Runtime& rt, Policies& p)
      : builder(p.bundle.spec, p.bundle.shape, *p.bundle.tokenizer),
        server(train::copy_module(p.bundle, rt.rollout_device), builder, p.options.noise, rt.rollout_device,
               {int(c.max_batch), c.batch_timeout_ms, c.rollout_stream, rt.cpu_threads, c.cuda_graphs}, p.from.step, p.rollout_value,
               p.rollout_noise_head),
        feed(rt.tasks, int(c.group_size), uint64_t(c.seed), p.from.step * rt.groups_per_rank, rt.rank, rt.world),
        scene(sim::Scene::load()) {
    worker_options.n_envs = int(c.envs_per_worker);
    worker_options.renderer = rt.renderer;
    worker_options.image_size = c.camera_size > 0 ? int(c.camera_size) : p.bundle.shape.vision.image_size;  // the builder resizes
    worker_options.render_layout = sim::parse_render_layout(c.render_layout, "--rl.render_layout");
    worker_options.replan_steps = int(c.replan_steps);
    worker_options.shaping = c.shaping;
    for (int64_t w = 0; w < c.env_workers; ++w)
      workers.push_back(std::make_unique<EnvWorker>(scene, rt.tasks, worker_options, feed, server, builder));
  }
  ~Rollout() {
    feed.stop();
    for (auto& w : workers) w->cancel();
    workers.clear();
  }

  // the busy times and counts so far; learner_ns: the learner's, kept by the loop
  Counters counters(int64_t learner_ns) const {
    Counters k;
    k.at = Clock::now();
    for (const auto& w : workers) k.waits_ns += w->clock().policy_wait_ns + w->clock().feed_wait_ns, k.env_steps += w->clock().env_steps;
    k.rollout_ns = int64_t(server.busy_s() * 1e9);
    k.learner_ns = learner_ns;
    k.batches = server.batches(), k.requests = server.requests();
    return k;
  }
};

// A step's figures from the counters before and after it: this rank's, then summed (rates: of
// each rank's own) or averaged (busy fractions) over the job's ranks. stop: a stop signal on any
// rank (core/stop_signal.h).
void step_figures(IterationStats& it, double stale, const Counters& before, const Counters& now, size_t workers, const Runtime& rt,
                  const RlConfig& c, dist::Collectives* ranks, bool& stop) {
  it.wall_s = std::chrono::duration<double>(now.at - before.at).count();
  const double wall = std::max(it.wall_s, 1e-9);
  auto job = sum_over_ranks(ranks,
                            {stale, double(it.dropped), double(now.env_steps - before.env_steps),
                             std::max(0.0, 1.0 - double(now.waits_ns - before.waits_ns) * 1e-9 / (wall * double(workers))),
                             double(now.rollout_ns - before.rollout_ns) * 1e-9 / wall,
                             double(now.learner_ns - before.learner_ns) * 1e-9 / wall,
                             double(now.env_steps - before.env_steps) / wall, double(it.learner.chunks) / wall / double(rt.world),
                             double(stop_requested() != 0), double(now.batches - before.batches),
                             double(now.requests - before.requests)},
                            rt.device);
  it.staleness = job[0] / double(c.groups_per_step);
  it.dropped = int64_t(job[1]);
  it.env_steps = int64_t(job[2]);
  it.env_busy = job[3] / rt.world, it.rollout_busy = job[4] / rt.world, it.learner_busy = job[5] / rt.world;
  it.env_steps_per_s = job[6];
  it.samples_per_s = job[7];  // the job's chunks per second (over the ranks' mean rate)
  it.rollout_batch = job[9] > 0 ? job[10] / job[9] : 0.0;
  stop = job[8] > 0;
}

// metrics.jsonl (rank 0) and, with --eval_freq, eval.jsonl and the closed-loop evaluations.
struct Logs {
  std::optional<train::MetricsLogger> metrics, eval_log;
  std::optional<LearnerEvaluation> evaluate;
  bool flow_noise = false;  // the std head's entropy and std logged too

  Logs(const RlConfig& c, const Runtime& rt, Policies& p, const Rollout& r) : flow_noise(bool(p.noise_head)) {
    if (rt.rank != 0) return;
    train::MetricsLogger::Options mo;
    mo.shown = {"success_rate", "return", "kl", "clip_frac", "env_steps_per_s"};
    metrics.emplace(c.output_dir, c.iterations, p.from.step, mo);
    if (c.eval_freq <= 0) return;
    train::MetricsLogger::Options eo;
    eo.file = "eval.jsonl";
    eo.terminal = nullptr;
    eval_log.emplace(c.output_dir, c.iterations, p.from.step, eo);
    evaluate.emplace(LearnerEvaluation{c, p.bundle, r.builder, rt.device, rt.renderer, r.worker_options.image_size, *eval_log, *metrics});
  }

  void log(const IterationStats& it, int64_t env_steps_total) {
    if (!metrics) return;
    const auto& s = it.learner;
    std::vector<train::Metric> fields =
                 {{"success_rate", s.success}, {"return", s.ret}, {"kl", s.kl}, {"clip_frac", s.clip_frac}, {"grad_norm", s.grad_norm},
                  {"staleness", it.staleness}, {"dropped", double(it.dropped)}, {"flat_groups", double(s.flat_groups)}, {"filtered_groups", double(s.filtered_groups)},
                  {"env_busy", it.env_busy}, {"rollout_busy", it.rollout_busy}, {"learner_busy", it.learner_busy},
                  {"env_steps_per_s", it.env_steps_per_s}, {"samples_per_s", it.samples_per_s}, {"rollout_batch", it.rollout_batch}, {"epochs", double(it.epochs)}, {"env_steps", double(env_steps_total)},
                  {"wall_s", it.wall_s}, {"value_loss", s.value_loss}, {"micro_batches", double(s.micro_batches)}};
    if (flow_noise) fields.insert(fields.end(), {{"entropy", s.entropy}, {"noise_std", s.noise_std}});
    metrics->log(it.step, s.loss, fields);
  }
};

// checkpoints/<step>/: the policy files as `ember train` writes them, the optimizers' states,
// rl_state.json and rl_config.json; every rank waits until it is complete
std::string save_checkpoint(train::CheckpointWriter& writer, const RlConfig& c, const Runtime& rt, Policies& p, int64_t step,
                            int64_t env_steps_total, dist::Collectives* ranks) {
  p.bundle.step = step;
  const auto dir = (writer.checkpoints_dir() / train::checkpoint_dir_name(step)).string();
  nlohmann::json state{{"step", step}, {"env_steps", env_steps_total}, {"seed", c.seed}};
  Learner& learner = *p.learner;
  if (rt.rank == 0) writer.save(step, [&](const fs::path& tmp) {
    train::write_policy_files(tmp, p.bundle);
    model::save_tensors((tmp / "optimizer.safetensors").string(), learner.optimizer().state());
    if (p.value) {
      model::save_tensors((tmp / "value_head.safetensors").string(), learner.value_params());
      model::save_tensors((tmp / "value_optimizer.safetensors").string(), learner.value_optimizer()->state());
    }
    if (p.noise_head) model::save_tensors((tmp / "noise_head.safetensors").string(), learner.noise_params());
    write_json_file((tmp / "rl_state.json").string(), state);
    write_json_file((tmp / "rl_config.json").string(), to_json(c));
  });
  if (ranks) ranks->barrier();  // the checkpoint is complete before any rank goes on (or exits)
  return dir;
}

}  // namespace

RlResult run_rl(const RlConfig& given, const std::function<void(const IterationStats&)>& on_iteration,
                std::shared_ptr<dist::Collectives> ranks) {
  validate(given);
  const Runtime rt(given, ranks.get());
  const auto resume = resume_point(given);
  Policies p(given, rt, ranks, resume);
  const RlConfig& c = p.config;
  Learner& learner = *p.learner;
  fs::create_directories(c.output_dir);
  if (rt.rank == 0) write_json_file((fs::path(c.output_dir) / "rl_config.json").string(), to_json(c));
  Rollout rollout(c, rt, p);
  Logs logs(c, rt, p, rollout);
  if (logs.evaluate && !resume) (*logs.evaluate)(*learner.policy(), 0, 0);  // the starting policy
  train::CheckpointWriter writer(c.output_dir);

  const bool async = c.mode == "async";
  const int64_t gps = rt.groups_per_rank;
  int64_t dropped_total = 0, env_steps_total = p.from.env_steps, learner_ns = 0;
  // sync: only this step's groups may start; async: the next step's too
  auto release = [&](int64_t step) { rollout.feed.allow((step - p.from.step + 1 + (async ? 1 : 0)) * gps + dropped_total); };
  RlResult result;
  Counters before = rollout.counters(learner_ns);
  const PassOptions pass_options{gps, c.minibatches, c.epochs, c.target_kl};
  for (int64_t step = p.from.step; step < c.iterations; ++step) {
    IterationStats it;
    StepPasses passes(learner, pass_options, policy_lr_scale(step, c.critic_warmup, c.lr_warmup), learner_ns);
    // this rank's share of the step's groups, the too stale dropped (async streams them into
    // the learner as they come; sync learns from them once complete, below)
    release(step);
    std::vector<Group> batch;
    double stale = 0;
    for (int64_t used = 0; used < gps;) {
      auto g = rollout.feed.pop();
      if (!g) throw Error(ErrorKind::kInternal, "rl: the episode feed stopped early");
      const int64_t oldest = g->oldest_version();
      if (too_stale(step, oldest, c.max_staleness)) {
        ++it.dropped, ++dropped_total;
        release(step);
        continue;
      }
      stale += double(step - oldest);
      ++used;
      if (async) passes.stream(*g, used);
      if (!async || c.epochs > 1) batch.push_back(std::move(*g));  // async: kept for the later passes
    }
    // sync: in group order, whichever finished first, so that the step's sums do not depend on
    // the workers' timing (the run is then bit-exact and resumes bit-exactly; rl_loop.h); async:
    // the later passes in the order the first streamed them, whose micro-batches' prefixes the
    // learner keeps (LearnerOptions::prefix_cache_bytes)
    if (!async) std::sort(batch.begin(), batch.end(), [](const Group& a, const Group& b) { return a.id < b.id; });
    it.learner = passes.finish(batch, async, it.epochs);  // step_passes.h
    learner.forget_prefixes();
    rollout.server.swap_weights(*learner.policy(), step + 1, p.value ? p.value.get() : nullptr, p.noise_head ? p.noise_head.get() : nullptr);
    it.step = step + 1;
    const Counters now = rollout.counters(learner_ns);
    bool stop = false;
    step_figures(it, stale, before, now, rollout.workers.size(), rt, c, ranks.get(), stop);
    before = now;
    env_steps_total += it.env_steps;
    logs.log(it, env_steps_total);
    // SIGINT / SIGTERM on any rank: every rank makes this step its last, evaluated and saved as
    // the end of the run is
    if (stop) result.stopped_by = stop_requested() != 0 ? stop_requested() : SIGTERM;  // another rank's: SIGTERM
    const bool last = it.step == c.iterations || result.stopped_by != 0;
    if (logs.evaluate && (it.step % c.eval_freq == 0 || last)) (*logs.evaluate)(*learner.policy(), it.step, env_steps_total);
    if (on_iteration) on_iteration(it);
    result.iterations.push_back(it);
    if ((c.save_freq > 0 && it.step % c.save_freq == 0) || last)
      result.last_checkpoint = save_checkpoint(writer, c, rt, p, it.step, env_steps_total, ranks.get());
    if (result.stopped_by) break;
  }
  if (logs.metrics) logs.metrics->finish();
  return result;
}

}  // namespace ember::rl
