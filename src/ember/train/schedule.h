// The learning-rate schedule: linear warmup, then cosine decay to a floor -- LeRobot's
// `cosine_decay_with_warmup` (CosineDecayWithWarmupSchedulerConfig, used for pi0 / pi0.5, after
// openpi's CosineDecaySchedule), reproduced exactly so that ember and LeRobot runs with the same
// settings see the same learning rates.
//
// With W warmup steps, D decay steps, peak lr P and floor ratio a (floor = a * P), the factor
// applied to P for optimizer update number `step` (0 for the first update, as torch's LambdaLR
// counts) is
//   step < W:  1/(W+1) + (1 - 1/(W+1)) * step/W          (1/(W+1) at step 0, reaching 1 at W)
//   step >= W: a + (1 - a) * 0.5 * (1 + cos(pi * min(step, D) / D))
// Note the cosine is measured from step 0, not from the end of the warmup (as LeRobot does):
// at step W the factor is already slightly below 1. After D steps it stays at the floor.
//
// Auto-scaling (also LeRobot's): when the run is shorter than D (training_steps < D), warmup is
// scaled to floor(W * training_steps / D) and D to training_steps, so the whole shape fits.
#pragma once

#include <cstdint>

namespace ember::train {

// The learning rate for update `step` (>= 0). warmup_steps >= 0; decay_steps >= 1 (values < 1
// are treated as 1); min_lr_ratio in [0, 1]. Pure, thread-safe. Does NOT auto-scale: pass
// steps from fit_schedule() for LeRobot's behaviour.
double lr_at(int64_t step, double base_lr, int64_t warmup_steps, int64_t decay_steps, double min_lr_ratio);

// Warmup and decay lengths after LeRobot's auto-scaling for a run of training_steps updates.
struct ScheduleSteps {
  int64_t warmup_steps = 0;
  int64_t decay_steps = 1;
};
ScheduleSteps fit_schedule(int64_t warmup_steps, int64_t decay_steps, int64_t training_steps);

// A resolved schedule: what the trainer keeps and queries every step.
struct LrSchedule {
  double base_lr = 0;
  double min_lr_ratio = 0;
  ScheduleSteps steps;
  double at(int64_t step) const { return lr_at(step, base_lr, steps.warmup_steps, steps.decay_steps, min_lr_ratio); }
};

}  // namespace ember::train
