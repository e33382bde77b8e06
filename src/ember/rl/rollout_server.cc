#include "ember/rl/rollout_server.h"

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdio>
#include <optional>

#include "ember/eval/checkpoint_policy.h"
#include "ember/train/policy_checkpoint.h"
#include "ember/train/cuda_setup.h"

namespace ember::rl {

namespace {

// where the module's weights live: the graphs read them there
std::vector<const void*> weight_pointers(torch::nn::Module& module) {
  std::vector<const void*> out;
  for (const auto& p : module.parameters()) out.push_back(p.data_ptr());
  return out;
}

}  // namespace

struct RolloutServer::Stream {
  explicit Stream(const at::Device& device) : stream(c10::cuda::getStreamFromPool(false, device.index())) {}
  c10::cuda::CUDAStream stream;
  std::optional<at::cuda::CUDAEvent> swapped;  // recorded after a swap's copies (under weights_mu_)
};

RolloutServer::RolloutServer(std::shared_ptr<model::PolicyModuleImpl> policy, const model::SampleBuilder& builder, FlowNoise noise, at::Device device,
                             BatchingOptions batching, int64_t version, ValueHead value, NoiseHead noise_head)
    : policy_(std::move(policy)), value_(std::move(value)), noise_head_(std::move(noise_head)), builder_(builder), noise_(noise), device_(device),
      batcher_(batching.max_batch, std::chrono::microseconds(int64_t(batching.timeout_ms * 1000))), version_(version),
      cpu_threads_(device.is_cuda() ? 0 : batching.cpu_threads) {
  if (noise_.method == NoiseMethod::kLearned && !noise_head_) throw Error(ErrorKind::kInternal, "RolloutServer: flow_noise without its head");
  if (device_.is_cuda() && batching.own_stream) {
    stream_ = std::make_unique<Stream>(device_);
    // the policy's weights were copied in on this thread's stream: the first batch waits for them
    stream_->swapped.emplace();
    stream_->swapped->record(c10::cuda::getCurrentCUDAStream(device_.index()));
  }
  if (device_.is_cuda() && batching.cuda_graphs && policy_->graph_safe()) {
    graphs_ = std::make_unique<train::GraphCache>(device_, train::SamplerOptions{}.max_graphs);
    weight_ptrs_ = weight_pointers(*policy_);
  }
  thread_ = std::thread([this] { loop(); });
}

RolloutServer::~RolloutServer() { stop(); }

void RolloutServer::stop() {
  batcher_.close();
  if (thread_.joinable()) thread_.join();
}

std::future<PolicyResponse> RolloutServer::submit(model::PolicySample sample, uint64_t seed) {
  Request r{std::move(sample), seed, std::make_shared<std::promise<PolicyResponse>>()};
  auto f = r.reply->get_future();
  batcher_.push(std::move(r));
  return f;
}

void RolloutServer::swap_weights(model::PolicyModuleImpl& from, int64_t version, const ValueHeadImpl* value, const NoiseHeadImpl* noise_head) {
  std::lock_guard<std::mutex> lock(weights_mu_);
  train::copy_parameters(*policy_, from);
  if (value && value_) train::copy_parameters(*value_, *value);
  if (noise_head && noise_head_) train::copy_parameters(*noise_head_, *noise_head);
  if (graphs_) {
    auto now = weight_pointers(*policy_);
    if (now != weight_ptrs_) graphs_->clear(), weight_ptrs_ = std::move(now);  // replaced, not copied into
  }
  if (stream_) {
    // the copies ran on the caller's stream: the rollout's next batch waits for them there
    stream_->swapped.emplace();
    stream_->swapped->record(c10::cuda::getCurrentCUDAStream(device_.index()));
  }
  version_ = version;
}

void RolloutServer::loop() {
  // this thread's kernels on the rollout's stream (the current stream is per thread)
  std::optional<c10::cuda::CUDAStreamGuard> on_stream;
  if (stream_) on_stream.emplace(stream_->stream);
  // OpenMP's team size is per thread: a new thread would start from the library's default
  if (cpu_threads_ > 0) at::set_num_threads(cpu_threads_);
  for (;;) {
    auto batch = batcher_.take();
    if (batch.empty()) return;
    try {
      run_batch(batch);
    } catch (...) {
      for (auto& r : batch) {
        try {
          r.reply->set_exception(std::current_exception());
        } catch (const std::future_error&) {  // already answered
        }
      }
    }
  }
}

Chain RolloutServer::graph_chain(const std::vector<const model::PolicySample*>& samples, const std::vector<uint64_t>& seeds) {
  const auto& shape = policy_->base_shape();
  auto batch = train::bucketed_batch(samples, shape, train::SamplerOptions{}.text_multiple, /*pin=*/true);
  auto padded_seeds = seeds;
  padded_seeds.resize(size_t(batch.bucket), seeds.back());
  auto draws = draw_chain(shape, noise_, padded_seeds);
  std::vector<at::Tensor> extras{draws.x0.pin_memory().to(device_, true), draws.eps.pin_memory().to(device_, true),
                                 draws.noisy_step.defined() ? draws.noisy_step.to(device_) : at::Tensor()};
  const auto noise = noise_;
  auto& policy = *policy_;
  NoiseHeadImpl* head = noise_head_ ? noise_head_.get() : nullptr;
  std::optional<std::vector<at::Tensor>> outs;
  try {
    outs = graphs_->run(batch.host, extras, [&policy, noise, head](const model::PolicyInputs& in, const std::vector<at::Tensor>& e) {
      return integrate_chain(policy, in, e[0], e[1], e[2], noise, head);
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ember rl: capturing the rollout in a CUDA graph failed, sampling eagerly from now on: %s\n", e.what());
    graphs_.reset();
    return {};
  }
  graph_captures_ = graphs_->captures();
  if (!outs) return {};  // a new shape with the cache full: eagerly
  const int64_t n = batch.n;
  Chain c;
  c.x = (*outs)[0].narrow(0, 0, n).cpu();
  c.log_prob = (*outs)[1].narrow(0, 0, n).cpu();
  if (draws.noisy_step.defined()) c.noisy_step = draws.noisy_step.narrow(0, 0, n);
  c.features = (*outs)[2].narrow(0, 0, n).clone();
  return c;
}

void RolloutServer::run_batch(std::vector<Request>& batch) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<const model::PolicySample*> ptrs;
  std::vector<uint64_t> seeds;
  for (const auto& r : batch) ptrs.push_back(&r.sample), seeds.push_back(r.seed);
  Chain chain;
  int64_t version;
  std::vector<double> values(batch.size(), 0.0);
  {
    std::lock_guard<std::mutex> lock(weights_mu_);
    if (stream_ && stream_->swapped) {
      stream_->swapped->block(stream_->stream);
      stream_->swapped.reset();
    }
    train::Bf16Autocast bf16(device_.is_cuda());
    chain = graphs_ ? graph_chain(ptrs, seeds) : Chain{};
    if (!chain.x.defined())
      chain = sample_chain(*policy_, model::collate(ptrs, policy_->base_shape(), model::AttentionBackend::kVarlen).to(device_), noise_, seeds,
                           noise_head_ ? noise_head_.get() : nullptr);
    if (value_) {
      at::NoGradGuard no_grad;
      auto v = value_->forward(chain.features).to(at::kDouble).cpu();
      for (size_t j = 0; j < batch.size(); ++j) values[j] = v[int64_t(j)].item<double>();
    }
    version = version_;
  }
  const int64_t K = chain.x.size(1) - 1;
  for (size_t j = 0; j < batch.size(); ++j) {
    PolicyResponse r;
    r.chain = chain.x[int64_t(j)].contiguous();
    r.log_prob = chain.log_prob[int64_t(j)].contiguous();
    r.version = version;
    if (chain.noisy_step.defined()) r.noisy_step = chain.noisy_step[int64_t(j)].item<int64_t>();
    r.value = values[j];
    r.chunk = eval::action_chunk(builder_, r.chain[K]);
    batch[j].reply->set_value(std::move(r));
  }
  busy_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  batches_ += 1;
  requests_ += int64_t(batch.size());
}

}  // namespace ember::rl
