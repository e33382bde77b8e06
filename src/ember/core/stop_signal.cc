#include "ember/core/stop_signal.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <initializer_list>

namespace ember {

namespace {

std::atomic<int> g_stop{0};
std::atomic<int64_t> g_first_ns{0};  // when the handler first ran (CLOCK_MONOTONIC)
static_assert(std::atomic<int>::is_always_lock_free, "read and written in a signal handler");
static_assert(std::atomic<int64_t>::is_always_lock_free, "read and written in a signal handler");

// a later signal sooner than this after the first repeats the request (`timeout`'s second copy)
constexpr int64_t kRepeatNs = 1'000'000'000;

const char* g_line = "\nember: stopping after this step (a checkpoint will be saved); send the signal again to end at once\n";

int64_t monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);  // async-signal-safe
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

void on_stop_signal(int sig) {
  const int64_t now = monotonic_ns();
  int64_t first = 0;  // after a failed exchange: when the first one came
  if (!g_first_ns.compare_exchange_strong(first, now)) {
    if (now - first < kRepeatNs) return;  // the same request again
    signal(sig, SIG_DFL);                // a second request: end at once
    raise(sig);
    return;
  }
  request_stop(sig);
  size_t n = 0;
  while (g_line[n]) ++n;  // strlen is not async-signal-safe by the letter
  ssize_t ignored = write(2, g_line, n);
  (void)ignored;
}

}  // namespace

void install_stop_signals(const char* line) {
  if (line) g_line = line;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESTART;  // blocking calls in other threads go on
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM}) sigaction(sig, &sa, nullptr);
}

int stop_requested() { return g_stop.load(std::memory_order_relaxed); }

void request_stop(int sig) {
  int none = 0;
  g_stop.compare_exchange_strong(none, sig);
}

void clear_stop_request() {
  g_stop.store(0);
  g_first_ns.store(0);
}

const char* stop_signal_name(int sig) {
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  return "a signal";
}

}  // namespace ember
