#include "bench/policy_bench.h"

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/core/InferenceMode.h>
#include <torch/cuda.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <optional>
#include <set>
#include <string>

#include "ember/core/error.h"
#include "ember/core/thread_pool.h"
#include "ember/model/device.h"
#include "ember/model/flops.h"
#include "ember/model/fp8_linear.h"
#include "ember/model/policy_type.h"
#include "ember/train/schedule.h"
#include "ember/train/train_step.h"
#include "ember/train/peak_flops.h"
#include "ember/train/profiler.h"
#include "ember/train/cuda_setup.h"

namespace ember::bench {

using namespace ember::train;

namespace {

struct StreamSpec {
  int min_cams, max_cams, min_words, max_words, state_dim, min_action, max_action;
};

StreamSpec stream_spec(const std::string& name) {
  if (name == "libero") return {2, 2, 8, 30, 8, 7, 7};
  if (name == "community") return {1, 3, 3, 60, 8, 6, 14};
  throw Error(ErrorKind::kInvalidArgument, "--stream: expected libero or community, got '" + name + "'");
}

std::vector<model::PolicySample> make_stream(const StreamSpec& s, const model::PolicyShape& shape, int64_t n, std::mt19937_64& rng) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<model::PolicySample> out(n);
  const int size = shape.vision.image_size;
  for (auto& sample : out) {
    int cams = uniform(s.min_cams, s.max_cams);
    std::vector<int> slots = {0, 1, 2};
    std::shuffle(slots.begin(), slots.end(), rng);
    slots.resize(cams);
    std::sort(slots.begin(), slots.end());
    for (int slot : slots) {
      sample.images.push_back(at::rand({3, size, size}) * 2 - 1);
      sample.camera_slots.push_back(slot);
    }
    int words = uniform(s.min_words, s.max_words);
    int tokens = std::min(shape.max_prompt, 1 + 6 + int(std::ceil(1.3 * words)) + 2 * s.state_dim);
    for (int j = 0; j < tokens; ++j) sample.prompt.push_back(uniform(4, shape.vocab - 1));
    int dim = uniform(s.min_action, s.max_action);
    sample.state = at::randn({s.state_dim});
    sample.embodiment = dim - s.min_action;  // groot: one embodiment per action width
    sample.actions = at::randn({shape.horizon, dim});
    sample.action_is_pad = at::zeros({shape.horizon}, at::kBool);
  }
  return out;
}

void sync(const at::Device& d) {
  if (d.is_cuda()) torch::cuda::synchronize(d.index());
}

// Seconds of the frozen part's forward alone (groot's backbone: inference mode, bf16 autocast
// as in the step) over the batches from `first` on; 0 when the policy freezes nothing.
double frozen_forward_seconds(PolicyState& state, const std::vector<TrainBatch>& hosts, int first, const at::Device& device,
                              bool bf16) {
  Bf16Autocast autocast(bf16, device.type());
  sync(device);
  auto t0 = std::chrono::steady_clock::now();
  for (size_t i = size_t(first); i < hosts.size(); ++i)
    for (const auto& micro : hosts[i].micro)
      if (!state.module->frozen_forward(micro.to(device))) return 0;
  sync(device);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The preset's architecture for the stream's synthetic samples (at the preset's own sizes).
std::shared_ptr<const model::PolicyArch> bench_arch(const model::PolicyType& type, const std::string& preset, const StreamSpec& s) {
  model::check_preset(type, preset, "--preset");
  model::ShapeOptions o;  // the preset's own sizes
  o.preset = preset;
  auto arch = type.from_preset(o);
  if (auto widths = arch->for_action_widths(s.state_dim, s.min_action, s.max_action)) arch = widths;
  return arch;
}

// Refuses options no run could use, naming the flag.
void check_options(const PolicyBenchOptions& o, const model::PolicyType& type) {
  if (o.batch_sizes.empty()) throw Error(ErrorKind::kInvalidArgument, "--batch_size: name at least one");
  for (const int64_t b : o.batch_sizes)
    if (b < 1) throw Error(ErrorKind::kInvalidArgument, "--batch_size must be at least 1");
  if (o.accumulation < 1 || o.accumulation > 1024)
    throw Error(ErrorKind::kInvalidArgument, "--gradient_accumulation_steps: expected 1 to 1024 micro-batches, got " +
                                                 std::to_string(o.accumulation));
  if (o.steps < 1 || o.warmup < 0) throw Error(ErrorKind::kInvalidArgument, "--steps must be at least 1 and --warmup at least 0");
  if (!o.profile.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.profile, ec);
    if (ec || !std::filesystem::is_directory(o.profile))
      throw Error(ErrorKind::kInvalidArgument, "--profile " + o.profile + ": cannot create the directory (" + ec.message() + ")");
  }
  if (o.profile_shapes && o.profile.empty())
    throw Error(ErrorKind::kInvalidArgument, "--profile_shapes: needs --profile DIR");
  if (o.profile_after < 0 || o.profile_after > o.steps || (o.profile_after && o.profile.empty()))
    throw Error(ErrorKind::kInvalidArgument, "--profile_after: expected 0 to --steps extra steps, with --profile DIR");
  if (o.fp8 && o.fp8_kernels.empty()) throw Error(ErrorKind::kInvalidArgument, "--fp8_kernels: name at least one kernel");
  for (const auto& k : o.fp8_kernels)
    if (k != "vector" && k != "staged")
      throw Error(ErrorKind::kInvalidArgument, "--fp8_kernels: expected vector or staged, got '" + k + "'");
  if (o.param_dtype != "fp32" && o.param_dtype != "bf16")
    throw Error(ErrorKind::kInvalidArgument, "--param_dtype: expected fp32 or bf16, got '" + o.param_dtype + "'");
  if (type.check_options)
    type.check_options({.fp8 = o.fp8, .gradient_checkpointing = o.gradient_checkpointing, .tune_backbone = o.tune_backbone,
                        .bf16_params = o.param_dtype == "bf16"});
  if (o.prefix_multiple < 0 || o.prefix_multiple > 4096)
    throw Error(ErrorKind::kInvalidArgument,
                "--prefix_multiple: expected 0 to 4096 tokens, got " + std::to_string(o.prefix_multiple));
}

// One measured configuration: a backend in bf16, or (--fp8) with the FP8 language backbone.
struct Run {
  model::AttentionBackend backend;
  bool fp8;
  std::string fp8_kernel;  // the quantisation kernel of an FP8 run
  std::vector<double> samples_per_s, layout_flops_per_sample;  // per batch size
};

// Every step's inputs, collated (micro-batches of batch_size) and pinned before any step is timed.
std::vector<TrainBatch> collate_steps(const std::vector<std::vector<model::PolicySample>>& batches, int64_t batch_size,
                                      const model::PolicyShape& shape, model::AttentionBackend backend, int64_t prefix_multiple,
                                      const at::Device& device) {
  std::vector<TrainBatch> hosts;
  for (const auto& b : batches) {
    TrainBatch batch;
    for (size_t first = 0; first < b.size(); first += size_t(batch_size)) {  // the step's micro-batches
      std::vector<const model::PolicySample*> ptrs;
      for (size_t k = first; k < std::min(b.size(), first + size_t(batch_size)); ++k) ptrs.push_back(&b[k]);
      auto host = model::collate(ptrs, shape, backend, {.prefix_multiple = prefix_multiple});
      batch.samples += host.samples;
      batch.loss_count += host.action_mask.sum().item<double>();
      batch.micro.push_back(device.is_cuda() ? host.pin_memory() : std::move(host));
    }
    hosts.push_back(std::move(batch));
  }
  return hosts;
}

// What the timed steps of one batch size did.
struct Measured {
  double timed_s = 0, queued_s = 0, real_flops = 0, layout_flops = 0, filler_flops = 0, last_loss = 0;
  double phase_copy = 0, phase_forward = 0, phase_backward = 0, phase_optimizer = 0;  // --phases
  int64_t real_tokens = 0, samples = 0;
  int warm_shape_steps = 0;
  std::string trace;  // --profile's file
};

// The warm-up steps, then the timed ones back to back as in training (the host queues each step
// while the GPU runs the one before; only --phases synchronises inside a step, to time its parts).
Measured measure(const PolicyBenchOptions& o, const Run& run, int64_t batch_size, PolicyState& state, TrainStep& step,
                 const LrSchedule& schedule, const std::vector<TrainBatch>& hosts, const model::PolicyShape& shape,
                 const at::Device& device) {
  Measured m;
  auto shape_key = [](const TrainBatch& b) {
    std::string key;
    for (const auto& mb : b.micro) key += mb.shape_key() + ";";
    return key;
  };
  at::Tensor last_loss_t;
  int64_t step_index = 0;
  auto run_step = [&](const TrainBatch& batch, bool timed) {
    if (o.phases) sync(device);
    auto since = std::chrono::steady_clock::now();
    PhaseMark mark;
    if (o.phases)
      mark = [&](StepPhase phase) {
        sync(device);
        auto now = std::chrono::steady_clock::now();
        double& acc = phase == StepPhase::kCopy ? m.phase_copy
                      : phase == StepPhase::kForward ? m.phase_forward
                      : phase == StepPhase::kBackward ? m.phase_backward : m.phase_optimizer;
        if (timed) acc += std::chrono::duration<double>(now - since).count();
        since = now;
      };
    last_loss_t = step.run(batch, schedule.at(step_index++), mark).loss;
  };
  std::set<std::string> warm_keys;  // the shapes the untimed steps ran (--warm_shapes)
  auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (int(i) == o.warmup) {
      // --warm_shapes: an untimed step on each timed batch whose shapes no step has run yet
      if (o.warm_shapes)
        for (size_t j = i; j < hosts.size(); ++j)
          if (warm_keys.insert(shape_key(hosts[j])).second) {
            run_step(hosts[j], false);
            ++m.warm_shape_steps;
          }
      sync(device);
      if (!o.profile.empty()) {
        const std::string fp8 = !run.fp8 ? "" : run.fp8_kernel == "vector" ? "_fp8" : "_fp8_" + run.fp8_kernel;
        const std::string batch = o.batch_sizes.size() > 1 ? "_b" + std::to_string(batch_size) : "";
        const bool first_type = o.policy_type == model::policy_types().front().name;  // its traces keep their old names
        m.trace = (std::filesystem::path(o.profile) / ((first_type ? "" : o.policy_type + "_") + o.preset + "_" + o.stream + "_" +
                                                      model::attention_backend_name(run.backend) + fp8 + batch + ".json"))
                      .string();
        if (!o.profile_after) start_profiler(device.is_cuda(), o.profile_shapes);
      }
      t0 = std::chrono::steady_clock::now();
    }
    if (o.warm_shapes && int(i) < o.warmup) warm_keys.insert(shape_key(hosts[i]));
    run_step(hosts[i], int(i) >= o.warmup);
    if (int(i) < o.warmup) continue;
    for (const auto& host : hosts[i].micro) {
      m.samples += host.samples;
      m.real_flops += state.module->step_flops(host, /*real=*/true);
      auto layout = model::layout_work(host, shape);
      auto flops_of = [&](const model::StepWork& w) { return state.module->work_flops(w); };
      const double with_filler = flops_of(layout);
      layout.filler_tokens = 0;
      m.layout_flops += with_filler;
      m.filler_flops += with_filler - flops_of(layout);
      m.real_tokens += host.real_prefix_tokens + host.samples * shape.horizon;
    }
  }
  // the host's time to queue the timed steps; the step time less this is how far the host had
  // run ahead of the GPU by the end (a few ms: the GPU was waiting for the host somewhere)
  m.queued_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  sync(device);
  m.timed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.last_loss = last_loss_t.item<double>();
  if (!m.trace.empty() && o.profile_after) {
    // --profile_after: extra steps on the first timed batches, recorded, not timed
    start_profiler(device.is_cuda(), o.profile_shapes);
    for (int k = 0; k < o.profile_after; ++k) run_step(hosts[size_t(o.warmup + k)], false);
    sync(device);
  }
  if (!m.trace.empty()) stop_profiler(m.trace);
  return m;
}

// One run's line at one batch size. backbone_s: groot's frozen backbone's forward time on the
// timed batches (0: none).
nlohmann::ordered_json result_line(const PolicyBenchOptions& o, const Run& run, int64_t batch_size, const PolicyState& state,
                                   const Measured& m, double backbone_s, bool bf16, double peak, const at::Device& device) {
  nlohmann::ordered_json j;
  j["bench"] = "policy";
  j["policy"] = o.policy_type;
  j["preset"] = o.preset;
  j["attention"] = model::attention_backend_name(run.backend);
  j["stream"] = o.stream;
  j["device"] = device.is_cuda() ? "cuda" : "cpu";
  j["dtype"] = bf16 || o.param_dtype == "bf16" ? "bf16" : "fp32";
  j["param_dtype"] = o.param_dtype;
  j["fp8"] = run.fp8;
  if (run.fp8) {
    j["fp8_layers"] = state.module->fp8_layer_names().size();
    j["fp8_kernel"] = run.fp8_kernel;
  }
  j["batch_size"] = batch_size;
  j["gradient_accumulation_steps"] = o.accumulation;
  j["gradient_checkpointing"] = o.gradient_checkpointing;
  j["steps"] = o.steps;
  {
    int64_t total = 0, trained = 0;
    for (const auto& p : state.module->parameters()) total += p.numel(), trained += p.requires_grad() ? p.numel() : 0;
    j["parameters"] = total;
    if (trained != total) j["trained_parameters"] = trained;
  }
  j["samples_per_s"] = m.samples / m.timed_s;
  j["tokens_per_s"] = m.real_tokens / m.timed_s;
  j["step_time_s"] = m.timed_s / o.steps;
  j["host_queue_time_s"] = m.queued_s / o.steps;
  j["warm_shape_steps"] = m.warm_shape_steps;  // untimed steps --warm_shapes added (0 when off)
  j["model_tflops_per_sample"] = m.real_flops / m.samples / 1e12;
  j["layout_tflops_per_sample"] = m.layout_flops / m.samples / 1e12;
  if (o.prefix_multiple > 1 && run.backend == model::AttentionBackend::kVarlen) {
    j["prefix_multiple"] = o.prefix_multiple;
    j["filler_tflops_per_sample"] = m.filler_flops / m.samples / 1e12;  // included in layout_tflops
  }
  j["measured_peak_tflops"] = peak / 1e12;
  j["mfu"] = m.real_flops / m.timed_s / peak;                  // useful (real-token) FLOPs
  j["hardware_flops_util"] = m.layout_flops / m.timed_s / peak;  // what the layout computes, padding included
  double nominal = nominal_peak_flops(device);
  if (nominal > 0) j["mfu_vs_datasheet"] = m.real_flops / m.timed_s / nominal;
  if (device.is_cuda())
    j["peak_mem_gb"] = double(c10::cuda::CUDACachingAllocator::getDeviceStats(device.index()).allocated_bytes[0].peak) / (1 << 30);
  j["final_loss"] = m.last_loss;
  if (backbone_s > 0) {
    j["frozen_backbone_s_per_step"] = backbone_s / o.steps;
    j["frozen_backbone_share"] = backbone_s / m.timed_s;  // of the step time: a feature cache's bound
  }
  if (!m.trace.empty()) {
    j["profile"] = m.trace;
    j["profile_steps"] = o.profile_after ? o.profile_after : o.steps;  // what the trace holds
  }
  if (o.phases) {
    j["phase_s"] = {{"copy", m.phase_copy / o.steps}, {"forward", m.phase_forward / o.steps},
                    {"backward", m.phase_backward / o.steps}, {"optimizer", m.phase_optimizer / o.steps}};
  }
  return j;
}

// Per batch size: varlen/padded (in bf16, and with FP8 too under --fp8: each kernel), then
// fp8/bf16 per backend and kernel.
std::vector<nlohmann::ordered_json> ratio_lines(const PolicyBenchOptions& o, const std::vector<Run>& runs, size_t backends) {
  std::vector<nlohmann::ordered_json> lines;
  const size_t per_backend = runs.size() / backends;
  for (size_t bi = 0; bi < o.batch_sizes.size(); ++bi) {
    auto ratio_line = [&](const Run& a, const Run& b, const std::string& of, bool with_flops) {
      nlohmann::ordered_json j;
      j["bench"] = "policy_ratio";
      j["policy"] = o.policy_type;
      j["preset"] = o.preset;
      j["stream"] = o.stream;
      j["batch_size"] = o.batch_sizes[bi];
      j["ratio_of"] = of;
      j["measured_speed_ratio"] = a.samples_per_s[bi] / b.samples_per_s[bi];
      if (with_flops) j["flop_ratio"] = b.layout_flops_per_sample[bi] / a.layout_flops_per_sample[bi];
      lines.push_back(std::move(j));
    };
    if (backends == 2)
      for (size_t k = 0; k < per_backend; ++k)
        ratio_line(runs[k], runs[per_backend + k],
                   o.backends[0] + "/" + o.backends[1] + (runs[k].fp8 ? " (fp8 " + runs[k].fp8_kernel + ")" : ""), true);
    for (size_t i = 0; i < runs.size(); ++i)
      if (runs[i].fp8)
        ratio_line(runs[i], runs[i / per_backend * per_backend],
                   std::string("fp8/bf16 (") + model::attention_backend_name(runs[i].backend) +
                       (runs[i].fp8_kernel == "vector" ? "" : ", " + runs[i].fp8_kernel + " quantisation") + ")",
                   false);
  }
  return lines;
}

}  // namespace

std::vector<std::string> run_policy_bench(const PolicyBenchOptions& o) {
  const auto& type = model::policy_type(o.policy_type);
  auto spec = stream_spec(o.stream);
  const auto arch = bench_arch(type, o.preset, spec);
  const auto shape = arch->base();
  check_options(o, type);
  std::vector<model::AttentionBackend> backends;
  for (const auto& b : o.backends) backends.push_back(model::parse_attention_backend(b));
  at::Device device = model::resolve_device(o.device);
  const bool bf16 = o.bf16 && device.is_cuda();
  if (device.is_cuda()) configure_cuda_allocator();
  if (!device.is_cuda()) at::set_num_threads(usable_cores());
  const double peak = measure_peak_flops(device, bf16);

  // the same samples for every run: per batch size, (warmup + steps) batches
  std::mt19937_64 rng(o.seed);
  at::manual_seed(o.seed);
  std::vector<std::vector<std::vector<model::PolicySample>>> batches_of;
  for (const int64_t batch_size : o.batch_sizes) {
    auto& batches = batches_of.emplace_back();
    for (int i = 0; i < o.warmup + o.steps; ++i) batches.push_back(make_stream(spec, shape, batch_size * o.accumulation, rng));
  }

  std::vector<std::string> lines;
  auto emit = [&](const nlohmann::ordered_json& j) {
    lines.push_back(j.dump());
    std::printf("%s\n", lines.back().c_str());
    std::fflush(stdout);
  };
  // per run, in order: each backend in bf16 and then (--fp8) with the FP8 language backbone
  std::vector<Run> runs;
  for (auto backend : backends) {
    runs.push_back({backend, false, "", {}, {}});
    if (o.fp8)
      for (const auto& k : o.fp8_kernels) runs.push_back({backend, true, k, {}, {}});
  }
  for (auto& run : runs) {
    if (run.fp8 && device.is_cuda()) model::set_fp8_quant_kernel(run.fp8_kernel, "--fp8_kernels");
    at::manual_seed(o.seed);
    // the policy, its optimizer and the step are ember train's, on its default settings
    TrainConfig config;
    config.policy.type = o.policy_type;
    config.policy.preset = o.preset;
    config.policy.param_dtype = o.param_dtype;
    config.policy.tune_backbone = o.tune_backbone;
    config.policy.attention = model::attention_backend_name(run.backend);
    config.policy.fp8 = run.fp8;
    config.policy.gradient_checkpointing = o.gradient_checkpointing;
    PolicyState state = build_policy_state(config, arch, device, nullptr);
    TrainStep step(state, device, config.optimizer.grad_clip_norm, bf16 || o.param_dtype == "bf16", nullptr, 0);
    // each batch size in turn on the same policy (one build per run)
    for (size_t bi = 0; bi < o.batch_sizes.size(); ++bi) {
      const int64_t batch_size = o.batch_sizes[bi];
      const auto& batches = batches_of[bi];
      LrSchedule schedule{config.optimizer.lr, config.scheduler.min_lr_ratio,
                          fit_schedule(config.scheduler.warmup_steps, config.scheduler.decay_steps, int64_t(batches.size()))};
      if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
      const auto hosts = collate_steps(batches, batch_size, shape, run.backend, o.prefix_multiple, device);
      const Measured m = measure(o, run, batch_size, state, step, schedule, hosts, shape, device);
      // groot with a frozen backbone: what a cache of its features could save at most, the time of
      // its forward alone on the timed batches
      const double backbone_s = frozen_forward_seconds(state, hosts, o.warmup, device, bf16);
      emit(result_line(o, run, batch_size, state, m, backbone_s, bf16, peak, device));
      run.samples_per_s.push_back(m.samples / m.timed_s);
      // the layouts' own FLOPs, without the varlen filler (which only buys fewer matrix shapes)
      run.layout_flops_per_sample.push_back((m.layout_flops - m.filler_flops) / m.samples);
    }
  }
  for (const auto& j : ratio_lines(o, runs, backends.size())) emit(j);
  if (o.fp8 && device.is_cuda()) model::set_fp8_quant_kernel("vector", "--fp8_kernels");
  return lines;
}

}  // namespace ember::bench
