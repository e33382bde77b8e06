#include "ember/train/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ember::train {

double lr_at(int64_t step, double base_lr, int64_t warmup_steps, int64_t decay_steps, double min_lr_ratio) {
  // the expressions follow LeRobot's lr_lambda term by term, so the doubles agree exactly
  if (step < warmup_steps) {
    const double start = 1.0 / double(warmup_steps + 1);
    if (step <= 0) return base_lr * start;
    const double frac = 1.0 - double(step) / double(warmup_steps);
    return base_lr * ((start - 1.0) * frac + 1.0);
  }
  const int64_t d = std::max<int64_t>(decay_steps, 1);
  const double s = double(std::clamp<int64_t>(step, 0, d));
  const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * s / double(d)));
  return base_lr * ((1.0 - min_lr_ratio) * cosine + min_lr_ratio);
}

ScheduleSteps fit_schedule(int64_t warmup_steps, int64_t decay_steps, int64_t training_steps) {
  if (training_steps >= decay_steps || decay_steps <= 0) return {warmup_steps, std::max<int64_t>(decay_steps, 1)};
  // int(W * scale) in Python truncates towards zero; both factors are non-negative here
  const double scale = double(training_steps) / double(decay_steps);
  return {int64_t(double(warmup_steps) * scale), std::max<int64_t>(training_steps, 1)};
}

}  // namespace ember::train
