// A fixed pool of worker threads running submitted tasks in FIFO order.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace ember {

// The cores this process may run on: its CPU affinity mask (taskset, cgroup cpusets, Slurm's
// --cpus-per-task), which std::thread::hardware_concurrency() ignores. At least 1.
int usable_cores();

class ThreadPool {
 public:
  // threads == 0: one per usable core.
  explicit ThreadPool(size_t threads = 0);
  // Finishes the queued tasks, then joins the workers.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return workers_.size(); }

  // Runs f on a worker; the future carries its result or its exception. Thread-safe.
  template <class F>
  auto submit(F&& f) -> std::future<decltype(f())> {
    using R = decltype(f());
    auto task = std::make_shared<std::packaged_task<R()>>(std::forward<F>(f));
    std::future<R> result = task->get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.emplace_back([task] { (*task)(); });
    }
    cv_.notify_one();
    return result;
  }

  // Runs fn(i) for every i in [0, n) on the workers (one task per worker, interleaved indices)
  // and returns when all are done; rethrows the first exception after the others have finished.
  // Must not be called from one of this pool's own tasks (it would wait on itself).
  void parallel_for(int64_t n, const std::function<void(int64_t)>& fn);

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace ember
