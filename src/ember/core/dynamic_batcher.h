// A dynamic batcher: requests arrive from many producers (RL's environment workers, `ember
// serve`'s connections); the consumer (the one thread that runs the policy) takes a batch as soon
// as `max_batch` requests wait, or when the oldest has waited `timeout` (--rl.max_batch /
// --rl.batch_timeout_ms, serve's --max_batch / --batch_timeout_ms). Thread-safe: any number of
// producers, one consumer.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <cstddef>
#include <mutex>
#include <vector>

namespace ember::core {

template <typename T>
class DynamicBatcher {
 public:
  using Clock = std::chrono::steady_clock;

  DynamicBatcher(int max_batch, std::chrono::microseconds timeout) : max_batch_(max_batch), timeout_(timeout) {}

  void push(T item) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back({std::move(item), Clock::now()});
    }
    cv_.notify_one();
  }

  // The next batch, oldest first: up to max_batch items, once max_batch wait or the oldest has
  // waited the timeout. Empty only after close() with nothing left.
  std::vector<T> take() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (int(queue_.size()) >= max_batch_ || (closed_ && !queue_.empty())) break;
      if (closed_) return {};
      if (queue_.empty()) {
        cv_.wait(lock);
        continue;
      }
      const auto due = queue_.front().arrived + timeout_;
      if (Clock::now() >= due) break;
      cv_.wait_until(lock, due);
    }
    std::vector<T> batch;
    while (!queue_.empty() && int(batch.size()) < max_batch_) {
      batch.push_back(std::move(queue_.front().item));
      queue_.pop_front();
    }
    return batch;
  }

  // Requests waiting for take().
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return queue_.size();
  }

  // Wakes the consumer; take() drains what is left, then returns empty.
  void close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  struct Entry {
    T item;
    Clock::time_point arrived;
  };
  const int max_batch_;
  const std::chrono::microseconds timeout_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Entry> queue_;
  bool closed_ = false;
};

}  // namespace ember::core
