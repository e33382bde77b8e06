#include "ember/serve/engine.h"

#include <chrono>
#include <exception>

#include "ember/core/error.h"
#include "ember/train/inference.h"

namespace ember::serve {

Engine::Engine(train::PolicyBundle bundle, at::Device device, EngineOptions options)
    : bundle_(std::move(bundle)), device_(device),
      batcher_(options.max_batch, std::chrono::microseconds(int64_t(options.batch_timeout_ms * 1000))) {
  if (options.max_batch < 1) throw Error(ErrorKind::kInvalidArgument, "--max_batch must be at least 1");
  if (!(options.batch_timeout_ms >= 0)) throw Error(ErrorKind::kInvalidArgument, "--batch_timeout_ms must be at least 0");
  builder_ = std::make_unique<model::SampleBuilder>(bundle_.spec, bundle_.shape, *bundle_.tokenizer);
  sampler_ = std::make_unique<train::Sampler>(*bundle_.module, bundle_.shape, device_,
                                              train::SamplerOptions{.cuda_graphs = options.cuda_graphs, .bf16_weights = options.cuda_graphs});
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() { stop(); }

void Engine::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  batcher_.close();
  if (thread_.joinable()) thread_.join();
}

void Engine::submit(ObservationMap::Request request, uint64_t seed, Done done) {
  Job job;
  job.sample = builder_->build(request.item, /*with_actions=*/false);
  job.noise = request.noise.defined() ? request.noise : train::seeded_noise(bundle_.shape, seed);
  job.done = std::move(done);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopped_) {
      batcher_.push(std::move(job));
      return;
    }
  }
  Reply r;
  r.error = "the server is stopping";
  job.done(std::move(r));
}

void Engine::loop() {
  for (;;) {
    auto batch = batcher_.take();
    if (batch.empty()) return;
    std::vector<Reply> replies;
    try {
      replies = run(batch);
    } catch (const std::exception& e) {
      replies.assign(batch.size(), Reply{});
      for (auto& r : replies) r.error = std::string("inference failed: ") + e.what();
    }
    for (size_t j = 0; j < batch.size(); ++j) {
      try {
        batch[j].done(std::move(replies[j]));
      } catch (const std::exception&) {  // a callback's failure is its connection's, never the engine's
      }
    }
  }
}

std::vector<Reply> Engine::run(const std::vector<Job>& batch) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<const model::PolicySample*> samples;
  std::vector<at::Tensor> noise;
  for (const auto& job : batch) samples.push_back(&job.sample), noise.push_back(job.noise);
  auto chunks = sampler_->sample(samples, at::stack(noise));  // [n, H, A]
  std::vector<Reply> replies(batch.size());
  for (size_t j = 0; j < batch.size(); ++j) {
    auto rows = builder_->unnormalize_actions(chunks[int64_t(j)]);  // [H][action_dim]
    Reply& r = replies[j];
    r.rows = int64_t(rows.size());
    r.cols = rows.empty() ? 0 : int64_t(rows[0].size());
    for (const auto& row : rows) r.actions.insert(r.actions.end(), row.begin(), row.end());
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  for (auto& r : replies) r.batch_ms = ms, r.batch_size = int(batch.size());
  batches_ += 1;
  requests_ += int64_t(batch.size());
  return replies;
}

}  // namespace ember::serve
