#include "ember/train/sampler.h"

#include <ATen/autocast_mode.h>
#include <ATen/core/grad_mode.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "ember/core/error.h"
#include "ember/train/cuda_setup.h"
#include "ember/train/inference.h"

namespace ember::train {

BucketedBatch bucketed_batch(std::span<const model::PolicySample* const> samples, const model::PolicyShape& shape,
                             int64_t text_multiple, bool pin) {
  if (samples.empty()) throw Error(ErrorKind::kInternal, "bucketed_batch: no samples");
  BucketedBatch b;
  b.n = int64_t(samples.size());
  b.bucket = 1;
  while (b.bucket < b.n) b.bucket *= 2;
  std::vector<const model::PolicySample*> padded(samples.begin(), samples.end());
  padded.resize(size_t(b.bucket), samples.back());
  b.host = model::collate(padded, shape, model::AttentionBackend::kVarlen, {.pin_images = pin, .text_multiple = text_multiple});
  // the longest segments any batch of this shape can have (every camera, the longest prompt; the
  // filler segment is shorter than text_multiple): the numbers the kernels are launched with
  auto& plan = b.host.plan;
  const int64_t longest = shape.prefix_tokens(shape.max_cameras, shape.max_prompt);
  plan.max_prefix = std::max(longest, text_multiple);
  plan.max_suffix = shape.horizon;
  plan.max_joint = longest + shape.horizon;
  return b;
}

struct GraphCache::Events {
  at::cuda::CUDAEvent start{cudaEventDefault}, end{cudaEventDefault};  // timing enabled
  bool recorded = false;
};

double GraphCache::last_replay_ms() {
  if (!events_ || !events_->recorded) return 0;
  return events_->start.elapsed_time(events_->end);
}

struct GraphCache::Graph {
  at::cuda::CUDAGraph graph;
  model::PolicyInputs in;          // the captured inputs (device): each batch is copied in
  std::vector<at::Tensor> extras;  // the same for the extra inputs
  std::vector<at::Tensor> outs;
};

GraphCache::GraphCache(at::Device device, int max_graphs) : device_(device), max_graphs_(max_graphs) {
  if (!device_.is_cuda()) throw Error(ErrorKind::kInternal, "GraphCache: CUDA graphs need a CUDA device");
}

GraphCache::~GraphCache() = default;

void GraphCache::clear() { graphs_.clear(); }

std::optional<std::vector<at::Tensor>> GraphCache::run(const model::PolicyInputs& host, const std::vector<at::Tensor>& extras,
                                                       const Fn& fn) {
  std::string key = host.shape_key();
  for (const auto& e : extras) {
    key += "|";
    if (e.defined())
      for (int64_t d : e.sizes()) key += std::to_string(d) + ",";
  }
  at::NoGradGuard no_grad;
  auto it = graphs_.find(key);
  Graph* g = it == graphs_.end() ? nullptr : it->second.get();
  if (!g) {
    if (int(graphs_.size()) >= max_graphs_) return std::nullopt;
    auto fresh = std::make_unique<Graph>();
    fresh->in = host.to(device_);
    for (const auto& e : extras) fresh->extras.push_back(e.defined() ? e.clone() : e);
    const auto index = device_.index();
    auto current = c10::cuda::getCurrentCUDAStream(index);
    auto side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index);
    at::cuda::CUDAEvent ready;
    ready.record(current);
    ready.block(side);
    {
      c10::cuda::CUDAStreamGuard on_side(side);
      // once outside the capture, on its stream: libraries set up their handles and workspaces
      fn(fresh->in, fresh->extras);
      side.synchronize();
      // weights cast before the capture would be read by the graph from memory it does not own
      at::autocast::clear_cache();
      // thread-local: other threads (environments, connections, a learner) use CUDA meanwhile
      fresh->graph.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
      try {
        fresh->outs = fn(fresh->in, fresh->extras);
      } catch (...) {
        try {
          fresh->graph.capture_end();
        } catch (...) {
        }
        at::autocast::clear_cache();
        throw;
      }
      fresh->graph.capture_end();
      at::autocast::clear_cache();  // the casts made in the capture live in the graph's memory
    }
    at::cuda::CUDAEvent done;
    done.record(side);
    done.block(current);
    ++captures_;
    g = fresh.get();
    graphs_[key] = std::move(fresh);
  }
  auto dst = g->in.tensors();
  auto src = host.tensors();
  for (size_t i = 0; i < dst.size(); ++i)
    if (src[i]->defined()) dst[i]->copy_(*src[i], /*non_blocking=*/true);
  for (size_t i = 0; i < extras.size(); ++i)
    if (extras[i].defined()) g->extras[i].copy_(extras[i], /*non_blocking=*/true);
  if (!events_) events_ = std::make_unique<Events>();
  auto stream = c10::cuda::getCurrentCUDAStream(device_.index());
  events_->start.record(stream);
  g->graph.replay();
  events_->end.record(stream);
  events_->recorded = true;
  ++replays_;
  return g->outs;
}

Sampler::Sampler(model::PolicyModuleImpl& module, model::PolicyShape shape, at::Device device, SamplerOptions options)
    : module_(module), shape_(std::move(shape)), device_(device), options_(options) {
  if (options_.max_graphs < 0 || options_.max_bucket < 1 || options_.text_multiple < 0)
    throw Error(ErrorKind::kInternal, "Sampler: negative limits");
  if (options_.mode) {
    mode_ = *options_.mode;
    if (mode_ == SamplerMode::kGraphs && !device_.is_cuda()) throw Error(ErrorKind::kInternal, "Sampler: CUDA graphs need a CUDA device");
  } else {
    mode_ = options_.cuda_graphs && device_.is_cuda() && module_.graph_safe() ? SamplerMode::kGraphs : SamplerMode::kEager;
  }
  if (mode_ == SamplerMode::kGraphs) graphs_ = std::make_unique<GraphCache>(device_, options_.max_graphs);
  // bf16 autocast casts the weights at every call; converted once, the graph reads them as they are
  if (options_.bf16_weights && device_.is_cuda()) module_.to_param_dtype(at::kBFloat16);
}

Sampler::~Sampler() = default;

at::Tensor Sampler::sample(std::span<const model::PolicySample* const> samples, const at::Tensor& noise) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto n = int64_t(samples.size());
  if (mode_ == SamplerMode::kEager || n > options_.max_bucket || n == 0) {
    ++stats_.eager;
    return sample_chunks(module_, shape_, samples, device_, noise);
  }
  return padded_sample(samples, noise);
}

at::Tensor Sampler::padded_sample(std::span<const model::PolicySample* const> samples, const at::Tensor& noise) {
  const auto n = int64_t(samples.size());
  const int64_t h = shape_.horizon, a = shape_.max_action_dim;
  check_noise(shape_, n, noise, "Sampler");
  const auto start = std::chrono::steady_clock::now();
  auto ms_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
  };
  auto batch = bucketed_batch(samples, shape_, options_.text_multiple, device_.is_cuda());
  // drawn as sample_actions draws it; the padding's rows repeat the last sample's
  auto x0 = noise.defined() ? noise.to(device_, at::kFloat) : at::randn({n, h, a}, at::TensorOptions().device(device_).dtype(at::kFloat));
  if (batch.bucket > n) x0 = at::cat({x0, x0.narrow(0, n - 1, 1).expand({batch.bucket - n, h, a})}, 0);
  const double prepare_ms = ms_since(start);
  at::NoGradGuard no_grad;
  Bf16Autocast bf16(device_.is_cuda());
  auto integrate = [this](const model::PolicyInputs& in, const std::vector<at::Tensor>& extras) {
    return std::vector<at::Tensor>{module_.sample_actions(in, extras[0].clone())};  // a copy: a policy may integrate in place
  };
  if (mode_ == SamplerMode::kStatic) {
    ++stats_.eager;
    return integrate(batch.host.to(device_), {x0})[0].narrow(0, 0, n).to(at::kFloat).cpu().contiguous();
  }
  std::optional<std::vector<at::Tensor>> outs;
  try {
    const auto before = graphs_->captures();
    outs = graphs_->run(batch.host, {x0}, integrate);
    stats_.captures += graphs_->captures() - before;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ember: capturing the sampler in a CUDA graph failed, sampling eagerly from now on: %s\n", e.what());
    mode_ = SamplerMode::kEager;
    graphs_.reset();
  }
  if (!outs) {
    ++stats_.eager;
    return sample_chunks(module_, shape_, samples, device_, x0.narrow(0, 0, n));
  }
  ++stats_.replays;
  auto chunks = (*outs)[0].narrow(0, 0, n).to(at::kFloat).cpu().contiguous();  // waits for the replay
  stats_.prepare_ms += prepare_ms;
  stats_.replay_gpu_ms += graphs_->last_replay_ms();
  stats_.total_ms += ms_since(start);
  return chunks;
}

}  // namespace ember::train
