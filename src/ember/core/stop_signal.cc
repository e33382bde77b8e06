#include "ember/core/stop_signal.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace ember {

namespace {

std::atomic<int> g_stop{0};
static_assert(std::atomic<int>::is_always_lock_free, "read and written in a signal handler");

void on_stop_signal(int sig) {
  // SA_RESETHAND has restored the default action: a second signal ends the process
  request_stop(sig);
  static const char kLine[] = "\nember: stopping after this step (a checkpoint will be saved); send the signal again to end at once\n";
  ssize_t ignored = write(2, kLine, sizeof(kLine) - 1);
  (void)ignored;
}

}  // namespace

void install_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESETHAND | SA_RESTART;  // blocking calls in other threads go on
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM}) sigaction(sig, &sa, nullptr);
}

int stop_requested() { return g_stop.load(std::memory_order_relaxed); }

void request_stop(int sig) {
  int none = 0;
  g_stop.compare_exchange_strong(none, sig);
}

void clear_stop_request() { g_stop.store(0); }

const char* stop_signal_name(int sig) {
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  return "a signal";
}

}  // namespace ember
