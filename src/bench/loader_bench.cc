#include "bench/loader_bench.h"

#include <ATen/Parallel.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "ember/core/error.h"
#include "ember/core/thread_pool.h"
#include "ember/train/loader.h"
#include "ember/model/processor.h"
#include "ember/train/train_data.h"
#include "ember/train/train_setup.h"

namespace ember::bench {

using namespace ember::train;

std::vector<std::string> run_loader_bench(const LoaderBenchOptions& o) {
  if (o.root.empty()) throw Error(ErrorKind::kInvalidArgument, "ROOT: a dataset directory is required");
  if (o.batch_size <= 0) throw Error(ErrorKind::kInvalidArgument, "--batch_size: must be positive");
  if (o.steps <= 0 || o.warmup < 0) throw Error(ErrorKind::kInvalidArgument, "--steps must be positive and --warmup not negative");
  if (o.workers.empty()) throw Error(ErrorKind::kInvalidArgument, "--workers: give at least one thread count");
  for (int w : o.workers)
    if (w <= 0) throw Error(ErrorKind::kInvalidArgument, "--workers: " + std::to_string(w) + " is not a positive thread count");
  if (o.image_shift < 0) throw Error(ErrorKind::kInvalidArgument, "--image_shift: must not be negative");
  const auto backend = model::parse_attention_backend(o.attention);
  // as `ember train` on CUDA: the workers are the parallelism, one ATen thread each
  at::set_num_threads(1);

  TrainConfig config;
  config.dataset.root = o.root;
  config.policy.preset = o.preset;
  if (!o.cache_dir.empty()) config.dataset.cache_dir = o.cache_dir;
  config.dataset.jpeg_decoder = o.jpeg_decoder;
  TrainData source = open_train_data(config);
  const data::Metadata& meta = source.meta;
  auto tokenizer = make_tokenizer(config, meta, std::nullopt);
  auto shape = make_arch(config, tokenizer.vocab_size())->base();
  model::SampleBuilder builder(model::feature_spec(meta, shape), shape, tokenizer);
  data::DatasetOptions dopt = builder.dataset_options();
  source.configure(dopt);
  data::Dataset dataset(meta, dopt);
  data::SamplerOptions so;
  so.seed = o.seed;
  source.configure(so, o.shard_window);
  data::FrameSampler sampler(dataset.meta().episodes, so);
  if (sampler.size() == 0) throw Error(ErrorKind::kInvalidArgument, "dataset " + o.root + ": no frames to read");

  std::vector<std::string> lines;
  data::LoaderPosition position;
  for (int workers : o.workers) {
    LoaderOptions lo;
    lo.batch_size = o.batch_size;
    lo.workers = workers;
    lo.backend = backend;
    lo.pin_memory = o.pin_memory;
    lo.image_shift = o.image_shift;
    lo.seed = o.seed;
    lo.lookahead = source.lookahead();
    // each measurement reads on from where the previous one stopped: no episode is warm in the
    // cache because an earlier measurement read it
    Loader loader(dataset, sampler, builder, shape, lo, position);
    for (int i = 0; i < o.warmup; ++i) position = loader.next().next;
    double build_s = 0, collate_s = 0;
    int64_t samples = 0, tokens = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o.steps; ++i) {
      TrainBatch b = loader.next();
      build_s += b.build_s;
      collate_s += b.collate_s;
      samples += b.samples;
      tokens += b.tokens;
      position = b.next;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    nlohmann::ordered_json j;
    j["bench"] = "loader";
    j["dataset"] = o.root;
    j["source"] = source.remote ? "remote shards" : source.shards ? "shards" : "lerobot";
    j["preset"] = o.preset;
    j["attention"] = o.attention;
    j["batch_size"] = o.batch_size;
    j["workers"] = workers;
    j["cores"] = usable_cores();
    j["pin_memory"] = o.pin_memory;
    j["jpeg_decoder"] = source.nvjpeg ? "nvjpeg" : "cpu";
    j["steps"] = o.steps;
    j["samples_per_s"] = double(samples) / seconds;
    j["tokens_per_s"] = double(tokens) / seconds;
    j["batch_s"] = seconds / o.steps;
    j["build_s"] = build_s / o.steps;
    j["collate_s"] = collate_s / o.steps;
    lines.push_back(j.dump());
    std::printf("%s\n", lines.back().c_str());
    std::fflush(stdout);
  }
  return lines;
}

}  // namespace ember::bench
