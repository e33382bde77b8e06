#include "ember/train/trainer.h"

#include <torch/cuda.h>

#include <ATen/Parallel.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "ember/core/error.h"
#include "ember/core/json_file.h"
#include "ember/core/stop_signal.h"
#include "ember/core/stopwatch.h"
#include "ember/core/thread_pool.h"
#include "ember/model/device.h"
#include "ember/model/policy_type.h"
#include "ember/model/weights.h"
#include "ember/train/checkpointer.h"
#include "ember/train/cuda_setup.h"
#include "ember/train/loader.h"
#include "ember/train/peak_flops.h"
#include "ember/train/profiler.h"
#include "ember/train/schedule.h"
#include "ember/train/step_log.h"
#include "ember/train/train_data.h"
#include "ember/train/train_setup.h"
#include "ember/train/train_step.h"
#include "ember/train/zero_adamw.h"

namespace ember::train {

namespace fs = std::filesystem;

namespace {

// The host's ATen threads: on the CPU, the cores the loader's workers leave (one for the tiny
// preset, whose operations are too small to split: extra threads only spin). On CUDA the loader's
// workers are the host's parallelism: one ATen thread each, as in PyTorch's DataLoader workers;
// otherwise each worker's image ops start an OpenMP team as large as the machine, whose spinning
// threads take the cores from the thread that launches the kernels (of every rank on the host).
void set_host_threads(const TrainConfig& config, at::Device device, int64_t workers) {
  if (!device.is_cuda()) at::set_num_threads(config.policy.preset == "tiny" ? 1 : std::max(1, usable_cores() - int(workers)));
  else if (!std::getenv("OMP_NUM_THREADS")) at::set_num_threads(1);
}

// The checkpoint a run continues from (--resume=true), or none; refuses to start a fresh run
// over an output directory that holds checkpoints.
std::optional<fs::path> resume_dir(const TrainConfig& config) {
  const fs::path out_dir = config.output_dir;
  if (config.resume) {
    auto latest = find_latest_checkpoint(out_dir);
    if (!latest)
      throw Error(ErrorKind::kNotFound, "--resume=true: no complete checkpoint under " + (out_dir / "checkpoints").string());
    return latest->dir;
  }
  if (!list_checkpoints(out_dir).empty())
    throw Error(ErrorKind::kInvalidArgument, "--output_dir=" + out_dir.string() +
                                                 " already holds checkpoints: pass --resume=true to continue, or choose a new --output_dir");
  return std::nullopt;
}

LoaderOptions loader_options(const TrainConfig& config, int rank, int world, int64_t workers, at::Device device) {
  LoaderOptions lo;
  lo.batch_size = config.batch_size;
  lo.accumulation = config.gradient_accumulation_steps;
  lo.rank = rank;
  lo.world_size = world;
  lo.workers = int(workers);
  lo.token_budget = config.policy.token_budget.value_or(0);
  lo.prefix_multiple = config.policy.prefix_multiple;
  lo.backend = model::parse_attention_backend(config.policy.attention);
  lo.pin_memory = device.is_cuda();
  lo.image_shift = config.dataset.image_transforms_enable ? config.dataset.image_transforms_max_shift : 0;
  lo.seed = uint64_t(config.seed);
  return lo;
}

std::string run_line(const TrainConfig& config, const model::PolicyShape& shape, const PolicyState& ps, int64_t frames,
                     at::Device device, bool bf16, int world, int64_t workers) {
  int64_t n_params = 0, n_trained = 0;
  for (const auto& [name, p] : ps.params) n_params += p.numel();
  for (const auto& p : ps.param_list) n_trained += p.numel();
  const bool bf16_params = config.policy.param_dtype == "bf16";
  return "ember train: " + std::to_string(frames) + " frames from " + config.dataset.root + ", policy " + ps.module->type() + "/" + shape.preset + " (" +
         std::to_string(n_params) + " parameters" + (n_trained != n_params ? ", " + std::to_string(n_trained) + " trained" : "") +
         "), attention " + config.policy.attention + ", " +
         (device.is_cuda() ? std::string("cuda") + (bf16 ? " bf16" : " fp32") : std::string("cpu") + (bf16_params ? " bf16" : " fp32")) +
         (bf16_params ? " (bf16 parameters)" : "") + ", " + std::to_string(world) + " rank(s), " + std::to_string(workers) +
         " loader threads" + (config.num_workers ? "" : " (--num_workers unset)");
}

// PyTorch's profiler over steps [from, to) (--profile_steps: the last of the first ten and more).
class StepProfiler {
 public:
  StepProfiler(const TrainConfig& config, int64_t first_step, at::Device device, fs::path trace)
      : to_(std::min(config.steps, first_step + 10 + config.profile_steps)),
        from_(config.profile_steps > 0 ? std::max(first_step, to_ - config.profile_steps) : config.steps),
        device_(device), trace_(std::move(trace)) {}
  void before(int64_t step) {
    if (step == from_ && from_ < to_) {
      if (device_.is_cuda()) torch::cuda::synchronize();
      start_profiler(device_.is_cuda());
      on_ = true;
    }
    if (step == to_) stop();
  }
  void stop() {
    if (!on_) return;
    if (device_.is_cuda()) torch::cuda::synchronize();
    on_ = false;
    stop_profiler(trace_.string());
  }

 private:
  int64_t to_, from_;
  at::Device device_;
  fs::path trace_;
  bool on_ = false;
};

// What the run trains: its tokenizer, architecture and features (the dataset's keys under the
// policy's rules), from the checkpoint being resumed, the imported directory (--policy.path), or
// --policy.type's preset; `imported` holds the imported weights until they are loaded.
struct RunPolicy {
  std::optional<PolicyBundle> imported;
  model::Tokenizer tokenizer;
  std::shared_ptr<const model::PolicyArch> arch;
  model::PolicyShape shape;
  model::FeatureSpec spec;
};

RunPolicy resolve_policy(const TrainConfig& config, const data::Metadata& meta, const std::optional<fs::path>& resume) {
  // --policy.path: a LeRobot / openpi directory fixes the shape, the features' rules and the
  // starting weights (statistics come from the dataset, as lerobot-train fine-tunes)
  std::optional<PolicyBundle> imported;
  if (config.policy.path && !resume) {
    const fs::path dir = *config.policy.path;
    const auto* type = model::foreign_policy_type(dir);
    const bool own = type && type->trains_own_tokenizer && !config.policy.tokenizer_path &&
                     model::find_tokenizer_file(dir.string()).empty();
    if (type && type->name != config.policy.type)
      throw Error(ErrorKind::kInvalidArgument, "--policy.path=" + dir.string() + ": a " + type->name + " policy directory; pass --policy.type=" +
                                                   type->name + " (its defaults are the ones that fine-tune it)");
    imported = import_lerobot_bundle(dir, config.policy.tokenizer_path, /*need_tokenizer=*/!own, /*print_notes=*/false);
    if (own)
      imported->import_notes.push_back("ember train: " + dir.string() + " has no tokenizer (tokenizer.model or tokenizer.json): one is trained on the dataset's "
                                       "tasks (at most " + std::to_string(std::min(2048, imported->shape.vocab)) + " pieces)");
  }
  auto tokenizer = imported && imported->tokenizer
                       ? model::Tokenizer::from_bytes(imported->tokenizer->serialized(), imported->tokenizer->name())
                       : make_tokenizer(config, meta, resume, imported ? imported->shape.vocab : 0);
  // the policy's architecture: the checkpoint's, the import's, or --policy.type's preset
  const auto saved_policy = resume ? read_json_file((*resume / "policy.json").string()) : nlohmann::json();
  if (resume && model::policy_type_of(saved_policy) != config.policy.type)
    throw Error(ErrorKind::kInvalidArgument, "--policy.type=" + config.policy.type + ": the checkpoint under " + resume->string() +
                                                 " holds a " + model::policy_type_of(saved_policy) + " policy");
  std::shared_ptr<const model::PolicyArch> arch = resume     ? model::arch_from_json(saved_policy, (*resume / "policy.json").string())
                                                  : imported ? imported->arch
                                                             : make_arch(config, tokenizer.vocab_size());
  const model::PolicyShape shape = arch->base();
  std::optional<model::FeatureSpec> like;
  if (imported) like = imported->spec;
  if (imported && model::policy_type(config.policy.type).fine_tunes_on_dataset_cameras) like->cameras.clear();
  if (resume && fs::exists(*resume / "features.json"))  // a resumed run keeps its rules (LeRobot's, N1.5's, its flags')
    like = model::FeatureSpec::from_json(read_json_file((*resume / "features.json").string()), (*resume / "features.json").string());
  model::FeatureSpec spec = like ? model::feature_spec_like(meta, shape, *like, rename_map_of(config))
                                 : model::feature_spec(meta, shape, feature_rules(config));
  if (!like) spec.norm_options.rule = model::policy_type(config.policy.type).norm_rule;  // GR00T-N1.5: a constant MIN_MAX feature is 0
  if (!resume || !fs::exists(*resume / "features.json"))  // a resumed run keeps its own
    spec.embodiment = config.policy.embodiment.value_or(imported ? imported->spec.embodiment : 0);
  if (auto fitted = arch->fit_features(spec, config.dataset.root, resume.has_value())) arch = fitted;
  if (imported)  // the run's flags and the dataset fit the import: now what it adapted is worth reading
    for (const auto& line : imported->import_notes) std::fprintf(stderr, "%s\n", line.c_str());
  return RunPolicy{std::move(imported), std::move(tokenizer), std::move(arch), shape, std::move(spec)};
}

// What checkpoints write of the policy (its module is the state's). An import's weights are
// loaded into the state here, its LeRobot config and unread tensors kept for `ember export`; a
// resumed run keeps its checkpoint's.
PolicyBundle checkpoint_bundle(RunPolicy& policy, PolicyState& ps, const TrainConfig& config, const std::optional<fs::path>& resume,
                               const std::function<void(const std::string&)>& say) {
  std::optional<PolicyBundle>& imported = policy.imported;
  const model::Tokenizer& tokenizer = policy.tokenizer;
  PolicyBundle bundle;
  bundle.shape = policy.shape;
  bundle.spec = policy.spec;
  bundle.arch = ps.arch;
  bundle.module = ps.module;
  bundle.tokenizer = std::make_unique<model::Tokenizer>(model::Tokenizer::from_bytes(tokenizer.serialized(), tokenizer.name()));
  if (imported) {
    // the imported weights (converted to the parameters' dtype and device)
    std::map<std::string, at::Tensor> weights;
    for (const auto& p : imported->module->named_parameters()) weights[p.key()] = p.value();
    model::load_into(ps.params, weights, *config.policy.path);
    bundle.lerobot_config = std::move(imported->lerobot_config);
    bundle.lerobot_unused = std::move(imported->lerobot_unused);
    imported.reset();
    say("ember train: initialised from " + *config.policy.path);
  } else if (resume) {
    const fs::path& dir = *resume;
    if (fs::exists(dir / "lerobot_config.json")) bundle.lerobot_config = model::read_ordered_json(dir / "lerobot_config.json");
    if (fs::exists(dir / "lerobot_unused.safetensors")) bundle.lerobot_unused = model::load_tensors((dir / "lerobot_unused.safetensors").string());
  }
  return bundle;
}

}  // namespace

TrainResult train(const TrainConfig& config, const TrainerHooks& hooks) {
  validate(config);
  const auto& coll = hooks.collectives;
  const int rank = coll ? coll->rank() : 0;
  const int world = coll ? coll->world_size() : 1;
  const bool main_rank = rank == 0;
  const fs::path out_dir = config.output_dir;
  auto say = [&](const std::string& line) {
    if (main_rank && !hooks.quiet) std::fprintf(stderr, "%s\n", line.c_str());
  };

  // the device and the host's threads
  at::Device device = model::resolve_device(config.device);
  if (device.is_cuda() && coll) device = at::Device(at::kCUDA, coll->local_rank());
  if (device.is_cuda()) configure_cuda_allocator();
  const bool bf16 = config.policy.dtype == "bf16" && device.is_cuda();
  const int64_t workers = std::max<int64_t>(
      1, config.num_workers.value_or(default_num_workers(device.is_cuda(), usable_cores(), coll ? coll->local_world_size() : 1)));
  set_host_threads(config, device, workers);
  const std::optional<fs::path> resume = resume_dir(config);

  // data and the policy (the dataset's metadata read once)
  TrainData source = open_train_data(config);
  data::Metadata& meta = source.meta;
  RunPolicy policy = resolve_policy(config, meta, resume);
  const model::Tokenizer& tokenizer = policy.tokenizer;
  std::shared_ptr<const model::PolicyArch>& arch = policy.arch;
  const model::PolicyShape& shape = policy.shape;
  const model::FeatureSpec& spec = policy.spec;
  model::SampleBuilder builder(spec, shape, tokenizer);
  data::DatasetOptions dopt = builder.dataset_options();
  source.configure(dopt);
  data::Dataset dataset(std::move(meta), dopt);
  data::SamplerOptions so;
  so.seed = uint64_t(config.seed);
  source.configure(so, config.dataset.shard_window);
  if (config.dataset.episodes) so.episodes = *config.dataset.episodes;
  data::FrameSampler sampler(dataset.meta().episodes, so);
  if (sampler.size() == 0) throw Error(ErrorKind::kInvalidArgument, "dataset " + config.dataset.root + ": no frames to train on");

  // the policy and its optimizer; the peak is measured before seeding: its random matrices must
  // not shift the training's random stream
  const double peak = measure_peak_flops(device, bf16);
  at::manual_seed(uint64_t(config.seed));
  PolicyState ps = build_policy_state(config, arch, device, coll);
  LrSchedule schedule{config.optimizer.lr, config.scheduler.min_lr_ratio,
                      fit_schedule(config.scheduler.warmup_steps, config.scheduler.decay_steps, config.steps)};
  Checkpointer checkpointer(config, out_dir, device, world, main_rank);
  PolicyBundle bundle = checkpoint_bundle(policy, ps, config, resume, say);

  // where the run starts
  int64_t step = 0;
  data::LoaderPosition position;
  if (resume) {
    auto restored = checkpointer.restore(*resume, ps.params, *ps.optimizer);
    step = restored.step, position = restored.position;
    say("resuming from " + resume->string() + " at step " + std::to_string(step));
  }
  // every rank starts from rank 0's weights (as DDP does), whatever its own seeding did
  if (coll) coll->broadcast(ps.param_list, 0);
  // the other ranks draw their own flow-matching noise (rank 0 keeps the seeded or restored stream)
  if (rank > 0) at::manual_seed(uint64_t(config.seed) * 1000003u + uint64_t(rank) * 7919u + uint64_t(step));
  if (main_rank) {
    fs::create_directories(out_dir);
    save_train_config(config, out_dir / "train_config.json");
  }
  say(run_line(config, shape, ps, sampler.size(), device, bf16, world, workers));
  if (source.shards && source.shards->image_size != shape.vision.image_size)
    say("ember train: note: the shards hold " + std::to_string(source.shards->image_size) + " px frames, the policy reads " +
        std::to_string(shape.vision.image_size) + " px: each frame is resized again (pack with --image_size " +
        std::to_string(shape.vision.image_size) + " to avoid it)");
  if (config.dist.zero && world > 1) say(optimizer_memory_line(*ps.optimizer, ps.params, world));

  LoaderOptions lo = loader_options(config, rank, world, workers, device);
  lo.lookahead = source.lookahead();
  Loader loader(dataset, sampler, builder, shape, lo, position);
  std::unique_ptr<MetricsLogger> metrics;
  if (main_rank) {
    MetricsLogger::Options mo;
    if (hooks.quiet) mo.terminal = nullptr;
    metrics = std::make_unique<MetricsLogger>(out_dir, config.steps, step, mo);
  }
  StepLog log(std::move(metrics), device, peak, world, config.log_freq, int(workers), say);
  // bf16 parameters need autocast on CPU too (fp32 inputs meet bf16 weights); the ranks' loss
  // divisor (see TrainStep): about the global count of real action values
  const bool autocast = bf16 || config.policy.param_dtype == "bf16";
  const double common_divisor = double(std::max<int64_t>(1, config.batch_size * config.gradient_accumulation_steps * world * shape.horizon));
  TrainStep train_step(ps, device, config.optimizer.grad_clip_norm, autocast, coll, common_divisor);
  // ranks on CUDA: the host runs at most 2 steps ahead of its GPU, with a bounded wait, so that a
  // rank that stops is named (by the barrier) instead of every host blocking in a kernel launch
  std::unique_ptr<GpuLag> gpu_lag;
  if (device.is_cuda() && coll) gpu_lag = std::make_unique<GpuLag>(device, 2);
  const auto dist_timeout = std::chrono::milliseconds(int64_t(config.dist.timeout_s * 1000));
  constexpr int64_t kHostMeetingEvery = 50;  // steps, at most, between the ranks' host barriers
  StepProfiler profiler(config, step, device, out_dir / "profile" / ("rank" + std::to_string(rank) + ".json"));

  TrainResult result;
  result.first_step = step;
  while (step < config.steps) {
    profiler.before(step);
    Stopwatch clock;
    double wait_s = 0;
    TrainBatch batch = loader.next(&wait_s);
    const double lr = schedule.at(step);
    log.record(step + 1, train_step.run(batch, lr));
    ++step;
    if (gpu_lag && !gpu_lag->mark(dist_timeout)) {
      // this GPU is stuck in a collective: the hosts' barrier names the rank that stopped
      coll->barrier();
      throw Error(ErrorKind::kIO, "rank " + std::to_string(rank) + ": the GPU has not finished step " + std::to_string(step - 2) +
                                      " within --dist.timeout_s=" + std::to_string(int64_t(config.dist.timeout_s)) +
                                      ": a collective is waiting for a rank that stopped");
    }
    // SIGINT / SIGTERM (core/stop_signal.h; one process only: a job's ranks end as the launcher
    // stops them): this step is the last, and saved
    const int stop = coll ? 0 : stop_requested();
    const bool last = step == config.steps || stop != 0;
    const bool log_step = step % config.log_freq == 0 || last;
    const bool save_step = checkpointer.due(step) || (stop != 0 && config.save_checkpoint);
    // the host reads the GPU's numbers only here: in between, it queues steps ahead of the GPU
    if (log_step || save_step || hooks.keep_going || log.pending_many()) log.flush();
    log.end_step(step, result.first_step, batch, wait_s, clock.elapsed_s(), lr, last);
    if (save_step) result.last_checkpoint = checkpointer.save(step, batch.next, bundle, *ps.optimizer);
    // the hosts meet here (and so notice a rank that died or stalled, within the timeout)
    if (coll && (log_step || save_step || step % kHostMeetingEvery == 0)) coll->barrier();
    if (stop) {
      result.stopped_by = stop;
      break;
    }
    if (hooks.keep_going && !hooks.keep_going(step)) break;
  }
  profiler.stop();
  log.finish();
  result.losses = log.losses();
  result.steps_done = step;
  return result;
}

}  // namespace ember::train
