#include "ember/train/loader.h"

#include <chrono>

#include "ember/core/error.h"
#include "ember/data/packer.h"
#include "ember/data/sampler.h"

namespace ember::train {

Loader::Loader(const data::Dataset& dataset, const data::FrameSampler& sampler, const model::SampleBuilder& builder,
               const model::PolicyShape& shape, LoaderOptions options, data::LoaderPosition start)
    : dataset_(dataset), sampler_(sampler), builder_(builder), shape_(shape), options_(options),
      pool_(size_t(std::max(1, options.workers))) {
  // a request the sampler refuses (e.g. more ranks than shards) fails here, not at the first step
  sampler_.next_batch(start, step_samples(), options_.rank, options_.world_size);
  producer_ = std::thread([this, start] { produce(start); });
}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  producer_.join();
}

TrainBatch Loader::build(const data::LoaderPosition& position) {
  const auto t0 = std::chrono::steady_clock::now();
  auto share = sampler_.next_batch(position, step_samples(), options_.rank, options_.world_size);
  // build this rank's samples on the pool
  std::vector<std::future<model::PolicySample>> futures;
  const uint64_t epoch_seed = data::mix64(data::mix64(options_.seed) + uint64_t(position.epoch));
  for (int64_t frame : share.frames) {
    futures.push_back(pool_.submit([this, frame, epoch_seed] {
      if (options_.image_shift <= 0) return builder_.build(dataset_.get(frame));
      model::SampleBuilder::RandomShift shift{options_.image_shift, data::mix64(epoch_seed + uint64_t(frame))};
      return builder_.build(dataset_.get(frame), /*with_actions=*/true, &shift);
    }));
  }
  std::vector<model::PolicySample> samples;
  for (auto& f : futures) samples.push_back(f.get());
  const auto t1 = std::chrono::steady_clock::now();

  TrainBatch batch;
  batch.build_s = std::chrono::duration<double>(t1 - t0).count();
  batch.position = position;
  batch.next = share.next;
  batch.samples = int64_t(samples.size());
  std::vector<data::PackSample> lens;
  for (size_t i = 0; i < samples.size(); ++i) {
    data::PackSample p;
    p.id = share.frames[i];
    p.prefix_len = int32_t(samples[i].prefix_len(shape_));
    p.suffix_len = shape_.horizon;
    lens.push_back(p);
    batch.tokens += p.length();
  }
  // gradient accumulation: consecutive runs of batch_size samples, each packed on its own
  std::vector<data::PackBatch> groups;
  for (size_t first = 0; first < lens.size(); first += size_t(options_.batch_size)) {
    const size_t count = std::min(lens.size() - first, size_t(options_.batch_size));
    std::span<const data::PackSample> part(lens.data() + first, count);
    std::vector<data::PackBatch> part_groups;
    if (options_.token_budget > 0) {
      try {
        part_groups = data::pack(part, options_.token_budget, {.window = 0, .max_samples_per_batch = 0});
      } catch (const Error& e) {
        throw Error(e.kind(), "--policy.token_budget=" + std::to_string(options_.token_budget) + ": " + e.what());
      }
    } else {
      part_groups = data::fixed_size_batches(int64_t(count), int64_t(count));
    }
    for (auto& g : part_groups) {
      for (auto& i : g) i += int64_t(first);
      groups.push_back(std::move(g));
    }
  }
  for (const auto& g : groups) {
    std::vector<const model::PolicySample*> ptrs;
    for (int64_t i : g) ptrs.push_back(&samples[i]);
    // the images straight into pinned memory, copied on the pool (idle until the next step)
    auto in = model::collate(ptrs, shape_, options_.backend,
                             {.pin_images = options_.pin_memory, .pool = &pool_, .prefix_multiple = options_.prefix_multiple});
    batch.loss_count += in.action_mask.sum().item<double>();
    batch.micro.push_back(options_.pin_memory ? in.pin_memory() : std::move(in));
  }
  batch.collate_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  return batch;
}

void Loader::produce(data::LoaderPosition position) {
  try {
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || int(queue_.size()) < options_.prefetch; });
        if (stop_) return;
      }
      if (options_.lookahead) {
        std::vector<int64_t> coming;  // this rank's frames of the next steps, in reading order
        data::LoaderPosition at = position;
        const int64_t global = step_samples();
        for (int k = 0; k < options_.lookahead_steps; ++k) {
          auto share = sampler_.next_batch(at, global, options_.rank, options_.world_size);
          coming.insert(coming.end(), share.frames.begin(), share.frames.end());
          at = share.next;
        }
        // owned shards: a window's worth of the rank's frames too, so that the next window's
        // shards are asked for when the current window starts, not 16 steps before they are read
        auto more = sampler_.ahead(position, global, options_.rank, options_.world_size, sampler_.window_frames());
        coming.insert(coming.end(), more.begin(), more.end());
        options_.lookahead(coming);
      }
      auto batch = build(position);
      position = batch.next;
      {
        std::lock_guard<std::mutex> lock(mu_);
        queue_.push_back(std::move(batch));
      }
      cv_.notify_all();
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = std::current_exception();
    cv_.notify_all();
  }
}

TrainBatch Loader::next(double* wait_s) {
  auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !queue_.empty() || error_; });
  if (queue_.empty() && error_) std::rethrow_exception(error_);
  auto batch = std::move(queue_.front());
  queue_.pop_front();
  lock.unlock();
  cv_.notify_all();
  if (wait_s) *wait_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return batch;
}

}  // namespace ember::train
