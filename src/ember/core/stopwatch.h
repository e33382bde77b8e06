// Wall-clock timing on the steady clock.
#pragma once

#include <chrono>

namespace ember {

class Stopwatch {
 public:
  Stopwatch() : start_(Clock::now()), lap_(start_) {}
  void reset() { start_ = lap_ = Clock::now(); }
  // Seconds since construction or reset().
  double elapsed_s() const { return seconds(Clock::now() - start_); }
  // Seconds since the previous lap_s() (or construction / reset), and starts a new lap.
  double lap_s() {
    auto now = Clock::now();
    double s = seconds(now - lap_);
    lap_ = now;
    return s;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
  Clock::time_point start_, lap_;
};

}  // namespace ember
