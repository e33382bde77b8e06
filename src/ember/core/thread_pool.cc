#include "ember/core/thread_pool.h"

#include <sched.h>

#include <algorithm>

namespace ember {

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

ThreadPool::ThreadPool(size_t threads) {
  if (threads == 0) threads = size_t(usable_cores());
  for (size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { run(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
  const int64_t tasks = std::min<int64_t>(n, int64_t(workers_.size()));
  std::vector<std::future<void>> done;
  for (int64_t t = 0; t < tasks; ++t)
    done.push_back(submit([&fn, t, tasks, n] {
      for (int64_t i = t; i < n; i += tasks) fn(i);
    }));
  std::exception_ptr first;
  for (auto& d : done) {  // every task finishes before fn goes out of scope
    try {
      d.get();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

void ThreadPool::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to do
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace ember
