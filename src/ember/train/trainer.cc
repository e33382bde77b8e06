#include "ember/train/trainer.h"

#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/cuda.h>

#include <ATen/Parallel.h>

#include <chrono>
#include <thread>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "ember/core/error.h"
#include "ember/core/thread_pool.h"
#include "ember/core/file.h"
#include "ember/core/json_file.h"
#include "ember/model/device.h"
#include "ember/model/flops.h"
#include "ember/train/checkpoint_dir.h"
#include "ember/train/cuda_setup.h"
#include "ember/train/loader.h"
#include "ember/train/metrics.h"
#include "ember/train/optimizer.h"
#include "ember/train/train_step.h"
#include "ember/train/zero_adamw.h"
#include "ember/train/peak_flops.h"
#include "ember/train/policy_checkpoint.h"
#include "ember/train/profiler.h"
#include "ember/train/schedule.h"
#include "ember/train/train_setup.h"

namespace ember::train {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string hex(const at::Tensor& bytes) {
  auto b = bytes.contiguous();
  const auto* p = b.data_ptr<uint8_t>();
  std::ostringstream o;
  for (int64_t i = 0; i < b.numel(); ++i) o << std::hex << std::setw(2) << std::setfill('0') << int(p[i]);
  return o.str();
}
at::Tensor unhex(const std::string& s, const std::string& what) {
  if (s.size() % 2) throw Error(ErrorKind::kCorruption, what + ": odd-length hex string");
  auto t = at::empty({int64_t(s.size() / 2)}, at::kByte);
  auto* p = t.data_ptr<uint8_t>();
  for (size_t i = 0; i < s.size() / 2; ++i) p[i] = uint8_t(std::stoi(s.substr(2 * i, 2), nullptr, 16));
  return t;
}

void set_generator_state(at::Generator g, const at::Tensor& state) {
  std::lock_guard<std::mutex> lock(g.mutex());
  g.set_state(state);
}

at::Tensor generator_state(at::Generator g) {
  std::lock_guard<std::mutex> lock(g.mutex());
  return g.get_state();
}

struct Window {  // metrics accumulated between two log lines
  int steps = 0;
  double loss = 0, step_s = 0, wait_s = 0, grad_norm = 0, flops = 0;
  int64_t samples = 0, tokens = 0;
};

}  // namespace

TrainResult train(const TrainConfig& config, const TrainerHooks& hooks) {
  validate(config);
  const int rank = hooks.collectives ? hooks.collectives->rank() : 0;
  const int world = hooks.collectives ? hooks.collectives->world_size() : 1;
  const bool main_rank = rank == 0;
  const fs::path out_dir = config.output_dir;
  auto say = [&](const std::string& line) {
    if (main_rank && !hooks.quiet) std::fprintf(stderr, "%s\n", line.c_str());
  };

  at::Device device = model::resolve_device(config.device);
  if (device.is_cuda() && hooks.collectives) device = at::Device(at::kCUDA, hooks.collectives->local_rank());
  if (device.is_cuda()) configure_cuda_allocator();
  const bool bf16 = config.policy.dtype == "bf16" && device.is_cuda();
  const int64_t workers = std::max<int64_t>(
      1, config.num_workers.value_or(default_num_workers(device.is_cuda(), usable_cores(),
                                                         hooks.collectives ? hooks.collectives->local_world_size() : 1)));
  if (!device.is_cuda()) {
    // the tiny preset's operations are too small to split: extra threads only spin; larger
    // presets get the cores the loader's workers leave
    int cores = usable_cores();
    at::set_num_threads(config.policy.preset == "tiny" ? 1 : std::max(1, cores - int(workers)));
  } else if (!std::getenv("OMP_NUM_THREADS")) {
    // On CUDA the loader's workers are the host's parallelism: one ATen thread each, as in
    // PyTorch's DataLoader workers. Otherwise each worker's image ops start an OpenMP team as
    // large as the machine, whose spinning threads take the cores from the thread that launches
    // the kernels (of every rank on the host).
    at::set_num_threads(1);
  }

  // where the run starts
  std::optional<CheckpointRef> resume_from;
  if (config.resume) {
    resume_from = find_latest_checkpoint(out_dir);
    if (!resume_from)
      throw Error(ErrorKind::kNotFound, "--resume=true: no complete checkpoint under " + (out_dir / "checkpoints").string());
  } else if (!list_checkpoints(out_dir).empty()) {
    throw Error(ErrorKind::kInvalidArgument, "--output_dir=" + out_dir.string() +
                                                 " already holds checkpoints: pass --resume=true to continue, or choose a new --output_dir");
  }
  std::optional<fs::path> resume_dir;
  if (resume_from) resume_dir = resume_from->dir;

  // data and policy
  data::Metadata meta_probe = data::load_metadata(config.dataset.root);
  auto tokenizer = make_tokenizer(config, meta_probe, resume_dir);
  auto shape = resume_dir ? shape_from_json(read_json_file((*resume_dir / "policy.json").string()), (*resume_dir / "policy.json").string())
                          : make_shape(config, tokenizer.vocab_size());
  model::FeatureSpec spec = model::feature_spec(meta_probe, shape);
  model::SampleBuilder builder(spec, shape, tokenizer);
  data::Dataset dataset(std::move(meta_probe), builder.dataset_options());
  data::SamplerOptions so;
  so.seed = uint64_t(config.seed);
  if (config.dataset.episodes) so.episodes = *config.dataset.episodes;
  data::FrameSampler sampler(dataset.meta().episodes, so);
  if (sampler.size() == 0) throw Error(ErrorKind::kInvalidArgument, "dataset " + config.dataset.root + ": no frames to train on");

  // measured before seeding: its random matrices must not shift the training's random stream
  const double peak = measure_peak_flops(device, bf16);
  at::manual_seed(uint64_t(config.seed));
  PolicyState ps = build_policy_state(config, shape, device, hooks.collectives);
  model::Pi05Policy policy = ps.policy;
  const bool bf16_params = config.policy.param_dtype == "bf16";
  model::NamedTensors& params = ps.params;
  Optimizer& optimizer = *ps.optimizer;
  std::vector<at::Tensor>& param_list = ps.param_list;
  LrSchedule schedule{config.optimizer.lr, config.scheduler.min_lr_ratio,
                      fit_schedule(config.scheduler.warmup_steps, config.scheduler.decay_steps, config.steps)};

  int64_t step = 0;
  data::LoaderPosition position;
  if (resume_dir) {
    auto file = (*resume_dir / "model.safetensors").string();
    model::load_into(params, model::load_tensors(file), file);
    auto ofile = (*resume_dir / "optimizer.safetensors").string();
    auto ostate = model::load_tensors(ofile);
    for (auto& [k, t] : ostate) t = t.to(device);
    optimizer.load_state(ostate, ofile);
    auto state_path = *resume_dir / "trainer_state.json";
    auto state = read_json_file(state_path.string());
    try {
      step = state.at("step").get<int64_t>();
      position = state.at("loader").get<data::LoaderPosition>();
      at::manual_seed(uint64_t(config.seed));
      set_generator_state(at::detail::getDefaultCPUGenerator(), unhex(state.at("rng").at("cpu").get<std::string>(), state_path.string()));
      if (device.is_cuda() && state.at("rng").contains("cuda"))
        set_generator_state(at::globalContext().defaultGenerator(device), unhex(state["rng"]["cuda"].get<std::string>(), state_path.string()));
    } catch (const nlohmann::json::exception& e) {
      throw Error(ErrorKind::kCorruption, state_path.string() + ": " + e.what());
    }
    say("resuming from " + resume_dir->string() + " at step " + std::to_string(step));
  }
  // every rank starts from rank 0's weights (as DDP does), whatever its own seeding did
  if (hooks.collectives) hooks.collectives->broadcast(param_list, 0);
  // the other ranks draw their own flow-matching noise (rank 0 keeps the seeded or restored stream)
  if (rank > 0) at::manual_seed(uint64_t(config.seed) * 1000003u + uint64_t(rank) * 7919u + uint64_t(step));

  if (main_rank) {
    fs::create_directories(out_dir);
    save_train_config(config, out_dir / "train_config.json");
  }
  int64_t n_params = 0;
  for (const auto& p : param_list) n_params += p.numel();
  say("ember train: " + std::to_string(sampler.size()) + " frames from " + config.dataset.root + ", policy pi05/" + shape.preset +
      " (" + std::to_string(n_params) + " parameters), attention " + config.policy.attention + ", " +
      (device.is_cuda() ? std::string("cuda") + (bf16 ? " bf16" : " fp32") : std::string("cpu") + (bf16_params ? " bf16" : " fp32")) +
      (bf16_params ? " (bf16 parameters)" : "") +
      ", " + std::to_string(world) + " rank(s), " + std::to_string(workers) + " loader threads" +
      (config.num_workers ? "" : " (--num_workers unset)"));
  if (config.dist.zero && world > 1) say(optimizer_memory_line(optimizer, params, world));

  LoaderOptions lo;
  lo.batch_size = config.batch_size;
  lo.rank = rank;
  lo.world_size = world;
  lo.workers = int(workers);
  lo.token_budget = config.policy.token_budget.value_or(0);
  lo.prefix_multiple = config.policy.prefix_multiple;
  lo.backend = model::parse_attention_backend(config.policy.attention);
  lo.pin_memory = device.is_cuda();
  lo.image_shift = config.dataset.image_transforms_enable ? config.dataset.image_transforms_max_shift : 0;
  lo.seed = uint64_t(config.seed);
  Loader loader(dataset, sampler, builder, shape, lo, position);

  std::unique_ptr<MetricsLogger> metrics;
  if (main_rank) {
    MetricsLogger::Options mo;
    if (hooks.quiet) mo.terminal = nullptr;
    metrics = std::make_unique<MetricsLogger>(out_dir, config.steps, step, mo);
  }
  CheckpointWriter writer(out_dir);
  auto save = [&](int64_t at_step, const data::LoaderPosition& next) {
    nlohmann::json state;
    state["step"] = at_step;
    state["loader"] = next;
    state["seed"] = config.seed;
    state["world_size"] = world;
    state["rng"]["cpu"] = hex(generator_state(at::detail::getDefaultCPUGenerator()));
    if (device.is_cuda()) state["rng"]["cuda"] = hex(generator_state(at::globalContext().defaultGenerator(device)));
    auto optimizer_state = optimizer.state();  // collective under ZeRO-1: every rank gathers
    if (!main_rank) return std::string();
    PolicyBundle bundle;
    bundle.shape = shape;
    bundle.spec = spec;
    bundle.policy = policy;
    bundle.tokenizer = std::make_unique<model::Tokenizer>(model::Tokenizer::from_bytes(tokenizer.serialized(), tokenizer.name()));
    auto dir = writer.save(at_step, [&](const fs::path& tmp) {
      write_policy_files(tmp, bundle);
      model::save_tensors((tmp / "optimizer.safetensors").string(), optimizer_state);
      write_json_file((tmp / "trainer_state.json").string(), state);
      save_train_config(config, tmp / "train_config.json");
    });
    return dir.string();
  };

  TrainResult result;
  result.first_step = step;
  bool data_hint_given = false;
  Window window;
  // Each step's loss and gradient norm stay on the device until the next log line, checkpoint
  // or hook; then one copy brings them all to the host.
  struct Pending {
    int64_t step;
    at::Tensor loss, grad_norm;
  };
  std::vector<Pending> pending;
  auto flush_pending = [&] {
    if (pending.empty()) return;
    std::vector<at::Tensor> values;
    for (const auto& p : pending) values.push_back(p.loss.to(at::kDouble).reshape({1})), values.push_back(p.grad_norm.to(at::kDouble).reshape({1}));
    auto host = at::cat(values).cpu();
    const double* v = host.data_ptr<double>();
    for (size_t i = 0; i < pending.size(); ++i) {
      const double loss = v[2 * i], norm = v[2 * i + 1];
      if (!std::isfinite(loss))
        throw Error(ErrorKind::kInternal, "the loss became " + std::to_string(loss) + " at step " + std::to_string(pending[i].step));
      result.losses.emplace_back(pending[i].step, loss);
      window.loss += loss;
      window.grad_norm += norm;
    }
    pending.clear();
  };
  // bf16 parameters need autocast on CPU too (fp32 inputs meet bf16 weights)
  const bool autocast = bf16 || bf16_params;
  // ranks' loss divisor (see the step): about the global count of real action values
  const double common_divisor = double(std::max<int64_t>(1, config.batch_size * world * shape.horizon));
  TrainStep train_step(ps, device, config.optimizer.grad_clip_norm, autocast, hooks.collectives, common_divisor);
  constexpr int64_t kHostMeetingEvery = 50;  // steps, at most, between the ranks' host barriers
  // ranks on CUDA: the host runs at most 2 steps ahead of its GPU, with a bounded wait, so that a
  // rank that stops is named (by the barrier) instead of every host blocking in a kernel launch
  std::unique_ptr<GpuLag> gpu_lag;
  if (device.is_cuda() && hooks.collectives) gpu_lag = std::make_unique<GpuLag>(device, 2);
  const auto dist_timeout = std::chrono::milliseconds(int64_t(config.dist.timeout_s * 1000));
  // the profiled steps: [profile_from, profile_to)
  const int64_t profile_to = std::min(config.steps, step + 10 + config.profile_steps);
  const int64_t profile_from = config.profile_steps > 0 ? std::max(step, profile_to - config.profile_steps) : config.steps;
  bool profiling = false;
  auto stop_profiling = [&] {
    if (!profiling) return;
    if (device.is_cuda()) torch::cuda::synchronize();
    profiling = false;
    stop_profiler((out_dir / "profile" / ("rank" + std::to_string(rank) + ".json")).string());
  };
  while (step < config.steps) {
    if (step == profile_from && profile_from < profile_to) {
      if (device.is_cuda()) torch::cuda::synchronize();
      start_profiler(device.is_cuda());
      profiling = true;
    }
    if (step == profile_to) stop_profiling();
    auto t0 = Clock::now();
    double wait_s = 0;
    TrainBatch batch = loader.next(&wait_s);
    double lr = schedule.at(step);
    StepOutput out = train_step.run(batch, lr);
    const double flops = out.flops;
    at::Tensor step_loss = out.loss, grad_norm = out.grad_norm;
    ++step;
    pending.push_back({step, step_loss, grad_norm});
    if (gpu_lag && !gpu_lag->mark(dist_timeout)) {
      // this GPU is stuck in a collective: the hosts' barrier names the rank that stopped
      hooks.collectives->barrier();
      throw Error(ErrorKind::kIO, "rank " + std::to_string(rank) + ": the GPU has not finished step " + std::to_string(step - 2) +
                                      " within --dist.timeout_s=" + std::to_string(int64_t(config.dist.timeout_s)) +
                                      ": a collective is waiting for a rank that stopped");
    }
    const bool log_step = step % config.log_freq == 0 || step == config.steps;
    const bool save_step = config.save_checkpoint && (step % config.save_freq == 0 || step == config.steps);
    // the host reads the GPU's numbers only here: in between, it queues steps ahead of the GPU
    if (log_step || save_step || hooks.keep_going || pending.size() >= 1000) flush_pending();
    double step_s = seconds_since(t0);

    window.steps++;
    window.step_s += step_s;
    window.wait_s += wait_s;
    window.samples += batch.samples * world;
    window.tokens += batch.tokens * world;
    window.flops += flops * world;
    if (metrics) {
      if (log_step) {
        std::vector<Metric> fields = {{"lr", lr},
                                      {"grad_norm", window.grad_norm / window.steps},
                                      {"samples_per_s", window.samples / window.step_s},
                                      {"tokens_per_s", window.tokens / window.step_s},
                                      {"mfu", peak > 0 ? window.flops / window.step_s / (peak * world) : 0.0},
                                      {"data_wait_frac", window.wait_s / window.step_s},
                                      {"step_time_s", window.step_s / window.steps}};
        if (device.is_cuda()) {
          auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
          fields.push_back({"peak_mem_gb", double(stats.allocated_bytes[0].peak) / (1 << 30)});
        }
        metrics->log(step, window.loss / window.steps, fields);
        // once per run, after the first window (warm-up)
        if (!data_hint_given && step - result.first_step > config.log_freq) {
          auto hint = data_wait_hint(window.wait_s / window.step_s, lo.workers, usable_cores());
          if (!hint.empty()) say(hint), data_hint_given = true;
        }
        window = Window{};
      } else {
        metrics->tick(step);
      }
    }
    if (save_step) result.last_checkpoint = save(step, batch.next);
    // the hosts meet here (and so notice a rank that died or stalled, within the timeout)
    if (hooks.collectives && (log_step || save_step || step % kHostMeetingEvery == 0)) hooks.collectives->barrier();
    if (hooks.keep_going && !hooks.keep_going(step)) break;
  }
  stop_profiling();
  if (metrics) metrics->finish();
  result.steps_done = step;
  return result;
}

}  // namespace ember::train
