// The inference side of `ember serve`: one thread owns the policy and runs dynamic batches of
// requests from any number of connections (core/dynamic_batcher.h: a batch as soon as
// max_batch requests wait, or when the oldest has waited batch_timeout_ms) through
// train::Sampler (bf16 weights, a CUDA graph per batch shape), as `ember predict` and
// `ember eval` sample. A request's sample is
// built on the caller's thread (images resized, state normalised, prompt tokenised); the
// inference thread only collates, samples and unnormalises.
#pragma once

#include <ATen/ATen.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ember/core/dynamic_batcher.h"
#include "ember/serve/observation.h"
#include "ember/train/policy_checkpoint.h"
#include "ember/train/sampler.h"

namespace ember::serve {

struct EngineOptions {
  int max_batch = 8;            // B_max: requests per batch
  double batch_timeout_ms = 2;  // T_max: how long the oldest request waits for others
  bool cuda_graphs = true;      // the engine (train/sampler.h: bf16 weights, CUDA graphs); false: eager as loaded
};

struct Reply {
  std::vector<float> actions;  // [rows, cols] row-major: the chunk in the dataset's action units
  int64_t rows = 0, cols = 0;  // H, action_dim
  double batch_ms = 0;         // the batch's sampling time
  int batch_size = 0;          // requests in that batch
  std::string error;           // non-empty: the request failed, this says why
};

class Engine {
 public:
  // bundle: a loaded policy (train::load_policy) on `device`, in eval mode, that only this engine
  // samples (on CUDA its weights become bf16: train::SamplerOptions::bf16_weights). Starts the thread.
  Engine(train::PolicyBundle bundle, at::Device device, EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  using Done = std::function<void(Reply)>;
  // Queues a request; `done` runs once, on the inference thread, with its chunk or its error
  // (after stop(): at once, on the caller's thread, with an error). The initial noise is the
  // request's own, or else train::seeded_noise(seed). Thread-safe. Throws Error
  // kInvalidArgument, on the caller's thread, when the request's sample cannot be built.
  void submit(ObservationMap::Request request, uint64_t seed, Done done);
  // Answers what is queued, then ends the thread. Idempotent.
  void stop();

  const train::PolicyBundle& bundle() const { return bundle_; }
  const model::SampleBuilder& builder() const { return *builder_; }
  const at::Device& device() const { return device_; }
  size_t queued() const { return batcher_.size(); }
  int64_t batches() const { return batches_.load(); }
  int64_t requests() const { return requests_.load(); }
  // the sampler's mode and counts (read them from the inference thread's callbacks or after stop())
  const train::Sampler& sampler() const { return *sampler_; }

 private:
  struct Job {
    model::PolicySample sample;
    at::Tensor noise;  // [H, max_action_dim] float32
    Done done;
  };
  void loop();
  std::vector<Reply> run(const std::vector<Job>& batch);  // one reply per job; throws what sampling throws

  train::PolicyBundle bundle_;
  std::unique_ptr<model::SampleBuilder> builder_;
  at::Device device_;
  std::unique_ptr<train::Sampler> sampler_;
  core::DynamicBatcher<Job> batcher_;
  std::mutex mu_;  // stopped_ and pushing, so that nothing is queued after the thread's last take
  bool stopped_ = false;
  std::atomic<int64_t> batches_{0}, requests_{0};
  std::thread thread_;
};

}  // namespace ember::serve
