#include "bench/inference_bench.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <latch>
#include <map>
#include <random>
#include <thread>

#include "bench/host.h"
#include "ember/core/error.h"
#include "ember/model/device.h"
#include "ember/model/policy_type.h"
#include "ember/model/prompt.h"
#include "ember/serve/client.h"
#include "ember/serve/engine.h"
#include "ember/serve/server.h"
#include "ember/train/inference.h"
#include "ember/train/policy_checkpoint.h"
#include "ember/train/profiler.h"
#include "ember/train/sampler.h"

namespace ember::bench {

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kInstruction = "put the red cube in the top drawer";

[[noreturn]] void bad(const std::string& what) { throw Error(ErrorKind::kInvalidArgument, what); }

// A fresh policy of the preset with LIBERO-like features (two cameras, state 8, action 7, no
// normalisation) and a small tokenizer trained on prompts of that state.
train::PolicyBundle fresh_bundle(const InferenceBenchOptions& o, const at::Device& device) {
  const auto& type = model::policy_type(o.policy_type);
  model::check_preset(type, o.preset, "--preset");
  train::PolicyBundle b;
  b.spec.cameras = {"observation.images.image", "observation.images.wrist_image"};
  b.spec.state_dim = 8, b.spec.action_dim = 7, b.spec.fps = 10;
  std::vector<std::string> texts;
  for (int k = 0; k < 64; ++k) {
    std::vector<float> state(8);
    for (int j = 0; j < 8; ++j) state[size_t(j)] = -1.0f + float((k * 8 + j) % 256) / 128.0f;
    texts.push_back(model::pi05_prompt_text(kInstruction, state));
  }
  model::TokenizerTrainOptions to;
  to.vocab_size = 512;
  b.tokenizer = std::make_unique<model::Tokenizer>(model::train_tokenizer(texts, to));
  model::ShapeOptions so;
  so.preset = o.preset;
  so.vocab = b.tokenizer->vocab_size();
  b.arch = type.from_preset(so);
  if (auto fitted = b.arch->fit_features(b.spec, "the benchmark's features", false)) b.arch = fitted;
  b.shape = b.arch->base();
  at::manual_seed(o.seed);
  b.module = b.arch->build({}, device);
  b.module->eval();
  return b;
}

// the same policy (its module shared), for an Engine to own
train::PolicyBundle share(const train::PolicyBundle& b) {
  train::PolicyBundle s;
  s.shape = b.shape, s.spec = b.spec, s.arch = b.arch, s.module = b.module, s.step = b.step;
  s.tokenizer = std::make_unique<model::Tokenizer>(model::Tokenizer::from_bytes(b.tokenizer->serialized(), b.tokenizer->name()));
  return s;
}

// one synthetic observation in openpi's LIBERO keys (or the policy's own camera names past two)
serve::Field observation(const serve::ObservationMap& map, const model::FeatureSpec& spec, int size, std::mt19937_64& rng) {
  serve::Field obs = serve::Field::map();
  std::map<std::string, std::string> key_of;  // feature -> the client key that fills it (LIBERO's first)
  for (const auto& [key, feature] : map.keys())
    if (!feature.empty() && (!key_of.count(feature) || key.find('/') != std::string::npos)) key_of[feature] = key;
  for (const auto& feature : map.required()) {
    if (feature == serve::kTaskFeature) {
      obs.set(key_of[feature], serve::Field::text(kInstruction));
    } else if (feature == spec.state_key) {
      std::vector<float> state(size_t(spec.state_dim));
      for (auto& x : state) x = std::uniform_real_distribution<float>(-1, 1)(rng);
      obs.set(key_of[feature], serve::Field::ndarray("<f4", {spec.state_dim}, std::string(reinterpret_cast<const char*>(state.data()), state.size() * 4)));
    } else {
      std::string px(size_t(size) * size_t(size) * 3, '\0');
      for (auto& c : px) c = char(rng() & 0xFF);
      obs.set(key_of[feature], serve::Field::ndarray("|u1", {size, size, 3}, std::move(px)));
    }
  }
  return obs;
}

struct Figures {
  double p50 = 0, p99 = 0, mean = 0, chunks_per_s = 0;
};

Figures figures(std::vector<double> ms, double chunks, double wall_s) {
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return ms[std::min(ms.size() - 1, size_t(q * double(ms.size() - 1) + 0.5))]; };
  Figures f;
  f.p50 = at(0.5), f.p99 = at(0.99);
  for (double x : ms) f.mean += x / double(ms.size());
  f.chunks_per_s = chunks / wall_s;
  return f;
}

void sync(const at::Device& d) {
  if (d.is_cuda()) torch::cuda::synchronize(d.index());
}

// B synthetic requests' samples and initial noise, the same for every mode measured
struct Batch {
  std::vector<model::PolicySample> samples;
  std::vector<const model::PolicySample*> ptrs;
  at::Tensor x0;  // [B, H, max_action_dim]
};

Batch make_batch(const train::PolicyBundle& b, const serve::ObservationMap& map, int64_t batch, const InferenceBenchOptions& o,
                 std::mt19937_64& rng) {
  model::SampleBuilder builder(b.spec, b.shape, *b.tokenizer);
  Batch out;
  std::vector<at::Tensor> noise;
  for (int64_t i = 0; i < batch; ++i) {
    out.samples.push_back(builder.build(map.request(observation(map, b.spec, o.image_size, rng)).item, false));
    noise.push_back(train::seeded_noise(b.shape, o.seed + uint64_t(i)));
  }
  for (const auto& s : out.samples) out.ptrs.push_back(&s);
  out.x0 = at::stack(noise);
  return out;
}

// latency of `call` (one batch, back on the host: synchronised) after o.warmup calls; `first`
// gets the first call's chunks
template <typename Call>
Figures in_process(const Call& call, const at::Device& device, int64_t batch, const InferenceBenchOptions& o, at::Tensor* first) {
  for (int i = 0; i < o.warmup; ++i) {
    auto chunks = call();
    if (i == 0 && first) *first = chunks;
  }
  std::vector<double> ms;
  const auto t0 = Clock::now();
  for (int i = 0; i < o.iters; ++i) {
    const auto start = Clock::now();
    auto chunks = call();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    if (o.warmup == 0 && i == 0 && first) *first = chunks;
  }
  sync(device);
  return figures(ms, double(batch * o.iters), std::chrono::duration<double>(Clock::now() - t0).count());
}

Figures through_socket(const train::PolicyBundle& b, const serve::ObservationMap& map, const at::Device& device, int64_t batch,
                       const InferenceBenchOptions& o, std::mt19937_64& rng) {
  serve::Engine engine(share(b), device, {.max_batch = int(batch), .batch_timeout_ms = 5});
  serve::ServerOptions so;
  so.port = 0;
  so.max_connections = int(batch) + 4;
  so.threads = int(std::clamp<int64_t>(batch, 1, 4));
  so.seed = o.seed;
  so.metadata = serve::encode(serve::Field::map());
  serve::Server server(engine, map, so);
  std::vector<serve::Field> observations;
  for (int64_t i = 0; i < batch; ++i) observations.push_back(observation(map, b.spec, o.image_size, rng));
  std::vector<std::vector<double>> ms(static_cast<size_t>(batch));
  std::vector<std::string> errors(static_cast<size_t>(batch));
  std::vector<std::thread> clients;
  std::latch warm(batch);  // every client warmed up before the clock starts
  Clock::time_point t0;
  std::atomic<int64_t> arrived{0};
  for (int64_t i = 0; i < batch; ++i)
    clients.emplace_back([&, i] {
      bool counted = false;
      try {
        serve::Client client("127.0.0.1", server.port());
        for (int k = 0; k < o.warmup; ++k) client.infer(observations[size_t(i)]);
        counted = true;
        if (++arrived == batch) t0 = Clock::now();
        warm.arrive_and_wait();
        for (int k = 0; k < o.iters; ++k) {
          const auto start = Clock::now();
          client.infer(observations[size_t(i)]);
          ms[size_t(i)].push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        }
      } catch (const std::exception& e) {
        errors[size_t(i)] = e.what();
        if (!counted && ++arrived == batch) t0 = Clock::now();
        if (!counted) warm.count_down();  // nobody waits for this one
      }
    });
  for (auto& c : clients) c.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  server.stop();
  for (const auto& e : errors)
    if (!e.empty()) throw Error(ErrorKind::kInternal, "bench inference --socket: a client failed: " + e);
  std::vector<double> all;
  for (const auto& v : ms) all.insert(all.end(), v.begin(), v.end());
  return figures(all, double(batch * o.iters), wall);
}

}  // namespace

std::vector<std::string> run_inference_bench(const InferenceBenchOptions& o, const std::string& commit) {
  if (o.batch_sizes.empty()) bad("--batch_size: name at least one");
  for (int64_t b : o.batch_sizes)
    if (b < 1 || b > 256) bad("--batch_size " + std::to_string(b) + ": expected 1 to 256");
  if (o.iters < 1 || o.iters > 100000) bad("--iters: expected 1 to 100000, got " + std::to_string(o.iters));
  if (o.warmup < 0 || o.warmup > 1000) bad("--warmup: expected 0 to 1000, got " + std::to_string(o.warmup));
  if (o.image_size < 1 || o.image_size > 4096) bad("--image_size: expected 1 to 4096 px, got " + std::to_string(o.image_size));
  const at::Device device = model::resolve_device(o.device);
  auto bundle = o.checkpoint.empty() ? fresh_bundle(o, device)
                                     : train::load_policy(o.checkpoint, device,
                                                          o.tokenizer_path.empty() ? std::nullopt : std::optional(o.tokenizer_path));
  const serve::ObservationMap map(bundle.spec, bundle.shape);
  std::mt19937_64 rng(o.seed);
  std::map<int64_t, Batch> batches;
  for (int64_t batch : o.batch_sizes)
    if (!batches.count(batch)) batches.emplace(batch, make_batch(bundle, map, batch, o, rng));
  std::vector<std::string> lines;
  auto report = [&](const char* mode, int64_t batch, const Figures& f, nlohmann::ordered_json extra) {
    nlohmann::ordered_json j;
    j["bench"] = "inference";
    j["mode"] = mode;
    j["policy"] = bundle.module->type();
    j["preset"] = bundle.shape.preset;
    if (!o.checkpoint.empty()) j["checkpoint"] = o.checkpoint;
    j["device"] = device.is_cuda() ? "cuda" : "cpu";
    j["host"] = cpu_model();
    if (!device.is_cuda()) j["cpu_threads"] = at::get_num_threads();
    j["commit"] = commit;
    j["batch_size"] = batch;
    j["iters"] = o.iters;
    j["flow_steps"] = bundle.shape.flow_steps;
    j["horizon"] = bundle.shape.horizon;
    j["image_size"] = o.image_size;
    j["latency_ms_p50"] = f.p50;
    j["latency_ms_p99"] = f.p99;
    j["latency_ms_mean"] = f.mean;
    j["chunks_per_s"] = f.chunks_per_s;
    for (auto& [k, v] : extra.items()) j[k] = v;
    lines.push_back(j.dump());
    std::printf("%s\n", lines.back().c_str());
    std::fflush(stdout);
  };
  // eager first: sample_chunks on the weights as loaded (bf16 autocast on CUDA), what every
  // command ran before the engine; the engine then converts the weights to bf16
  std::map<int64_t, at::Tensor> eager_chunks;
  for (int64_t batch : o.batch_sizes) {
    const Batch& in = batches.at(batch);
    auto f = in_process([&] { return train::sample_chunks(*bundle.module, bundle.shape, in.ptrs, device, in.x0); }, device, batch, o,
                        &eager_chunks[batch]);
    report("eager", batch, f, {{"engine", "sample_chunks"}});
  }
  train::Sampler sampler(*bundle.module, bundle.shape, device, {.cuda_graphs = o.cuda_graphs, .bf16_weights = true});
  for (int64_t batch : o.batch_sizes) {
    const Batch& in = batches.at(batch);
    at::Tensor chunks;
    const auto before = sampler.stats();
    auto f = in_process([&] { return sampler.sample(in.ptrs, in.x0); }, device, batch, o, &chunks);
    const auto after = sampler.stats();
    const auto& ref = eager_chunks.at(batch);
    auto per_replay = [&](double ms) { return after.replays > before.replays ? ms / double(after.replays - before.replays) : 0.0; };
    report("engine", batch, f,
           {{"engine", sampler.mode() == train::SamplerMode::kGraphs ? "cuda_graphs" : "eager"},
            {"captures", after.captures - before.captures},
            {"replays", after.replays - before.replays},
            {"max_abs_diff_to_eager", (chunks - ref).abs().max().item<double>()},
            {"prepare_ms_mean", per_replay(after.prepare_ms - before.prepare_ms)},
            {"replay_gpu_ms_mean", per_replay(after.replay_gpu_ms - before.replay_gpu_ms)},
            {"total_ms_mean", per_replay(after.total_ms - before.total_ms)},
            {"eager_abs_max", ref.abs().max().item<double>()}});
  }
  if (!o.trace.empty()) {
    const Batch& in = batches.at(o.batch_sizes[0]);
    auto traced = [&](const std::string& path, const std::function<void()>& call) {
      train::start_profiler(device.is_cuda());
      for (int i = 0; i < 3; ++i) call();
      sync(device);
      train::stop_profiler(path);
      std::fprintf(stderr, "ember bench inference: trace %s\n", path.c_str());
    };
    // the weights are bf16 by now: the eager trace is the engine's work without the graph
    traced(o.trace + "_eager.json", [&] { train::sample_chunks(*bundle.module, bundle.shape, in.ptrs, device, in.x0); });
    traced(o.trace + "_engine.json", [&] { sampler.sample(in.ptrs, in.x0); });
  }
  if (o.socket)
    for (int64_t batch : o.batch_sizes) report("socket", batch, through_socket(bundle, map, device, batch, o, rng), {});
  return lines;
}

}  // namespace ember::bench
