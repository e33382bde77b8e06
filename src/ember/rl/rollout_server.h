// The rollout (generation) side: environment workers submit one request per observation that
// needs a chunk; a thread takes dynamic batches (core/dynamic_batcher.h), samples the flow-noise chain for
// them (flow_noise.h) with the prefix computed once per request, and answers each request with
// its chain, log-probabilities, action chunk and the version of the weights that produced it.
// The learner swaps new weights in between two batches. On CUDA the rollout runs on a stream of
// its own (BatchingOptions::own_stream): its forward passes overlap the learner's (on the
// default stream) instead of queueing behind them, and its copies back to the host wait for its
// own work only. A swap's copies, made on the learner's stream, are fenced by an event that the
// rollout's stream waits for before its next batch. With BatchingOptions::cuda_graphs the chain
// of each batch is replayed from a CUDA graph of its shape (the same draws, the same function).
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "ember/core/dynamic_batcher.h"
#include "ember/model/policy.h"
#include "ember/model/processor.h"
#include "ember/rl/flow_noise.h"
#include "ember/rl/noise_head.h"
#include "ember/rl/value_head.h"
#include "ember/sim/policy.h"
#include "ember/train/sampler.h"

namespace ember::rl {

struct PolicyResponse {
  at::Tensor chain;     // [K+1, H, A] float32, host
  at::Tensor log_prob;  // [T] float32, host (flow_noise.h)
  int64_t noisy_step = -1;  // the sde noise method's noisy step (else -1)
  int64_t version = 0;
  double value = 0;        // the value head's V of the request (0 without a value head)
  sim::ActionChunk chunk;  // simulator units, [-1, 1]
};

struct BatchingOptions {
  int max_batch = 8;
  double timeout_ms = 5;
  bool own_stream = true;  // CUDA: the rollout's kernels on a stream of their own (--rl.rollout_stream)
  int cpu_threads = 0;     // CPU: the rollout thread's intra-op threads (0: the library's default)
  // CUDA, a graph-safe policy: each batch's chains replayed from a CUDA graph of its shape
  // (train/sampler.h's GraphCache on train::bucketed_batch: batches padded to powers of two)
  bool cuda_graphs = true;
};

class RolloutServer {
 public:
  // policy: the rollout's own copy (eval mode, on device); builder: the policy's features (must
  // outlive the server); value: PPO's value head, the rollout's own copy (or none); noise_head:
  // flow_noise's std head, the rollout's own copy (required for it). Starts the thread.
  RolloutServer(std::shared_ptr<model::PolicyModuleImpl> policy, const model::SampleBuilder& builder, FlowNoise noise, at::Device device,
                BatchingOptions batching, int64_t version, ValueHead value = nullptr, NoiseHead noise_head = nullptr);
  ~RolloutServer();
  RolloutServer(const RolloutServer&) = delete;
  RolloutServer& operator=(const RolloutServer&) = delete;

  // Thread-safe. The future fails with the server's error if a batch failed.
  std::future<PolicyResponse> submit(model::PolicySample sample, uint64_t seed);
  // Copies `from`'s weights (and value's, with a value head; noise_head's, with flow_noise) in
  // (waits for the running batch) and tags later answers `version`.
  void swap_weights(model::PolicyModuleImpl& from, int64_t version, const ValueHeadImpl* value = nullptr,
                    const NoiseHeadImpl* noise_head = nullptr);
  // Answers what is queued, then ends the thread.
  void stop();

  double busy_s() const { return busy_ns_.load() * 1e-9; }
  int64_t graph_captures() const { return graph_captures_.load(); }  // 0 without graphs
  int64_t batches() const { return batches_.load(); }
  int64_t requests() const { return requests_.load(); }

 private:
  struct Request {
    model::PolicySample sample;
    uint64_t seed = 0;
    std::shared_ptr<std::promise<PolicyResponse>> reply;
  };
  struct Stream;  // the CUDA stream and the swap's fence (none on the CPU)
  void loop();
  void run_batch(std::vector<Request>& batch);
  // the batch's chains from graphs_ (an undefined chain: sample eagerly)
  Chain graph_chain(const std::vector<const model::PolicySample*>& samples, const std::vector<uint64_t>& seeds);

  std::shared_ptr<model::PolicyModuleImpl> policy_;
  ValueHead value_;
  NoiseHead noise_head_ = nullptr;
  const model::SampleBuilder& builder_;
  FlowNoise noise_;
  at::Device device_;
  core::DynamicBatcher<Request> batcher_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<train::GraphCache> graphs_;  // BatchingOptions::cuda_graphs, on CUDA (the rollout thread's)
  std::vector<const void*> weight_ptrs_;       // where the graphs read the weights (a swap that moves them drops the graphs)
  std::atomic<int64_t> graph_captures_{0};
  std::mutex weights_mu_;
  int64_t version_;
  int cpu_threads_;
  std::atomic<int64_t> busy_ns_{0}, batches_{0}, requests_{0};
  std::thread thread_;
};

}  // namespace ember::rl
