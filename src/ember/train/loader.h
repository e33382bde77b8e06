// The training data loader: the sampler's frames for each step, built into policy samples on a
// thread pool (frame decoding, normalisation, tokenisation, action chunks), split into
// micro-batches under a token budget (varlen packing), collated, pinned on CUDA, and queued a
// few steps ahead by a producer thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "ember/core/thread_pool.h"
#include "ember/data/dataset.h"
#include "ember/data/sampler.h"
#include "ember/model/policy_inputs.h"
#include "ember/model/processor.h"

namespace ember::train {

struct LoaderOptions {
  int64_t batch_size = 8;  // samples per micro-batch per rank
  int64_t accumulation = 1;  // micro-batches of batch_size per step (--gradient_accumulation_steps)
  int rank = 0, world_size = 1;
  int workers = 4;         // sample-building threads
  int prefetch = 4;        // steps queued ahead
  int64_t token_budget = 0;  // > 0: micro-batches of at most this many tokens (prefix + suffix)
  int64_t prefix_multiple = 0;  // varlen: prefix rounded up with filler (model::CollateOptions)
  model::AttentionBackend backend = model::AttentionBackend::kVarlen;
  bool pin_memory = false;
  // > 0: random image shifts (model::SampleBuilder::RandomShift) seeded by (seed, epoch, frame)
  double image_shift = 0;
  uint64_t seed = 0;
  // Called by the producer before each step with this rank's frames of the next
  // lookahead_steps steps and, in the owned-shard order, of its next window's worth of frames
  // (FrameSampler::ahead): remote shards fetch theirs ahead; may be empty.
  std::function<void(const std::vector<int64_t>&)> lookahead;
  int lookahead_steps = 16;
};

struct TrainBatch {
  std::vector<model::PolicyInputs> micro;  // this rank's micro-batches of the step
  int64_t samples = 0;                     // this rank's samples
  int64_t tokens = 0;                      // real prefix + suffix tokens
  double loss_count = 0;                   // entries the loss counts (action mask sum)
  data::LoaderPosition position;           // where this step started
  data::LoaderPosition next;               // the global position after this step
  // the producer's wall time on this step: building the samples on the pool (decode, tokenise)
  // and laying them out (pack, collate, pin)
  double build_s = 0, collate_s = 0;
};

class Loader {
 public:
  // Starts producing at `start`. dataset, sampler and builder must outlive the loader. Throws
  // the sampler's kInvalidArgument when it refuses the request (batch, ranks, shards).
  Loader(const data::Dataset& dataset, const data::FrameSampler& sampler, const model::SampleBuilder& builder,
         const model::PolicyShape& shape, LoaderOptions options, data::LoaderPosition start);
  ~Loader();  // stops the producer (in-flight work finishes)

  // The next step's batch; blocks until it is ready. Rethrows a producer's error (e.g. a
  // corrupt frame, naming the file). wait_s: how long this call waited.
  TrainBatch next(double* wait_s = nullptr);

 private:
  void produce(data::LoaderPosition position);
  TrainBatch build(const data::LoaderPosition& position);
  // samples of one optimizer step over all ranks
  int64_t step_samples() const { return options_.batch_size * options_.accumulation * options_.world_size; }

  const data::Dataset& dataset_;
  const data::FrameSampler& sampler_;
  const model::SampleBuilder& builder_;
  model::PolicyShape shape_;
  LoaderOptions options_;
  ThreadPool pool_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<TrainBatch> queue_;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread producer_;
};

}  // namespace ember::train
