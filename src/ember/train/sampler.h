// ember's inference engine: the function of sample_chunks (inference.h), with the whole sampler,
// the prefix and every Euler step, replayed as one CUDA graph per batch shape. `ember serve`,
// `ember eval --checkpoint`, `ember predict` and `ember bench inference` sample through it.
//
// Eager, one chunk costs a few thousand kernel launches (pi0.5: the vision tower, 18 language
// layers, then 10 x 18 action-expert layers), and at batch 1 the host's launching, not the GPU,
// sets the latency. A graph launches them at once. What a graph needs, it gets here:
//   - fixed shapes: a batch of n samples runs as the next power of two (the last sample
//     repeated; its rows dropped), and its prompt tokens are rounded up to `text_multiple` with
//     filler (model::CollateOptions::text_multiple), so the tensors' shapes depend only on the
//     bucket, the cameras and the prompts' length to the multiple;
//   - fixed host numbers: the attention plan's longest segments are set to what the policy's
//     shape allows (every camera, the longest prompt), which bounds every batch of the bucket;
//   - fixed addresses: each shape's inputs live in tensors of its own, which each batch is copied
//     into before the replay; the initial noise is an input, drawn outside the graph.
// Where the policy cannot be captured (model::PolicyModuleImpl::graph_safe), on the CPU, or once
// `max_graphs` shapes are held, a batch runs eagerly through sample_chunks.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ember/model/policy.h"
#include "ember/model/policy_inputs.h"

namespace ember::train {

// A batch laid out for a graph: the samples padded to the next power of two (the last one
// repeated), the prompts' tokens rounded up to text_multiple, the plan's longest segments set to
// what the shape allows. Rows n.. of whatever it computes are the padding's.
struct BucketedBatch {
  model::PolicyInputs host;  // collated on the host (images pinned when `pin`)
  int64_t n = 0, bucket = 0;
};
BucketedBatch bucketed_batch(std::span<const model::PolicySample* const> samples, const model::PolicyShape& shape,
                             int64_t text_multiple, bool pin);

// CUDA graphs of one function of a batch's inputs and some extra tensors, one graph per shape.
// The caller's autocast state holds during the capture (the cast cache is cleared around it, so
// that the graph casts the weights it reads itself and sees in-place weight updates).
class GraphCache {
 public:
  // fn(in, extras) -> outputs: device work only, no host synchronisation, shapes from the
  // inputs' shapes and the plan's host numbers alone
  using Fn = std::function<std::vector<at::Tensor>(const model::PolicyInputs& in, const std::vector<at::Tensor>& extras)>;
  GraphCache(at::Device device, int max_graphs);
  ~GraphCache();
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;
  // fn on `host` (copied to the device) and `extras` (device tensors; undefined ones allowed),
  // replayed from the graph of their shapes, captured (after one eager run) at the first batch
  // of a shape. The outputs live in the graph's memory: copy them before the next run. nullopt
  // (nothing run) when the shape is new and max_graphs are held. Throws what fn or the capture
  // throws.
  std::optional<std::vector<at::Tensor>> run(const model::PolicyInputs& host, const std::vector<at::Tensor>& extras, const Fn& fn);
  // drops every graph (weights replaced by new tensors: the graphs would read the old ones)
  void clear();
  int64_t captures() const { return captures_; }
  int64_t replays() const { return replays_; }
  // the GPU time of the last replay in ms (CUDA events; once its work has finished)
  double last_replay_ms();

 private:
  struct Graph;
  at::Device device_;
  int max_graphs_;
  std::map<std::string, std::unique_ptr<Graph>> graphs_;  // by the inputs' shape key
  int64_t captures_ = 0, replays_ = 0;
  struct Events;
  std::unique_ptr<Events> events_;  // around the last replay
};

enum class SamplerMode {
  kEager,   // sample_chunks as it is
  kStatic,  // the graph's bucketed, padded inputs, run eagerly (tests the padding on the CPU)
  kGraphs,  // the padded inputs through one captured CUDA graph per shape
};

struct SamplerOptions {
  // graphs where the device is CUDA and the policy is graph-safe, else eager
  bool cuda_graphs = true;
  // convert the module's weights to bf16 once (model::PolicyModuleImpl::to_param_dtype; the norms
  // stay float32): what bf16 autocast casts them to at every call anyway. Only for a module that
  // nothing trains (serve, eval, predict).
  bool bf16_weights = false;
  int max_graphs = 16;          // shapes captured, each holding its own memory; then eager
  int64_t max_bucket = 256;     // larger batches run eagerly
  int64_t text_multiple = 32;   // prompt tokens rounded up to this many per batch
  // tests: force a mode (kStatic on the CPU); unset: as the flags above and the device say
  std::optional<SamplerMode> mode = std::nullopt;
};

struct SamplerStats {
  int64_t captures = 0;  // graphs captured (one per new shape)
  int64_t replays = 0;   // batches run by a graph
  int64_t eager = 0;     // batches run eagerly
  // summed over the replayed batches, in ms: laying the batch out on the host (collate, noise),
  // the graph's GPU time, the whole call
  double prepare_ms = 0, replay_gpu_ms = 0, total_ms = 0;
};

class Sampler {
 public:
  // module: a policy on `device` in eval mode that outlives the sampler.
  Sampler(model::PolicyModuleImpl& module, model::PolicyShape shape, at::Device device, SamplerOptions options = {});
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // sample_chunks(module, shape, samples, device, noise): normalised chunks [n, H,
  // max_action_dim] float32 on the host. Undefined noise is drawn on the device from its
  // current generator, as sample_actions draws it. Callers are served one at a time.
  at::Tensor sample(std::span<const model::PolicySample* const> samples, const at::Tensor& noise = {});

  SamplerMode mode() const { return mode_; }
  const SamplerStats& stats() const { return stats_; }

 private:
  at::Tensor padded_sample(std::span<const model::PolicySample* const> samples, const at::Tensor& noise);

  model::PolicyModuleImpl& module_;
  model::PolicyShape shape_;
  at::Device device_;
  SamplerOptions options_;
  SamplerMode mode_ = SamplerMode::kEager;
  std::unique_ptr<GraphCache> graphs_;  // kGraphs
  SamplerStats stats_;
  std::mutex mu_;
};

}  // namespace ember::train
