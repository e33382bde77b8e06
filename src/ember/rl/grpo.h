// GRPO's math (value-free PPO): a group's returns become advantages relative to the group, and
// every denoising step of every chunk of a trajectory is one clipped-ratio term with its
// trajectory's advantage. Pure functions on tensors, so the learner and the tests share them.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace ember::rl {

// (R_i - mean) / (std + 1e-6) over one group's returns (population std); all zeros when the
// returns are equal within 1e-9 (no signal: the group teaches nothing).
std::vector<double> group_advantages(const std::vector<double>& returns);

// log r and log q are capped at this before exp (see clipped_surrogate): the loss and the KL stay
// finite when a chain's log-probability moves by more than float's exp range
constexpr double kMaxLogRatio = 20.0;

struct Surrogate {
  at::Tensor loss_sum;  // 0-d: - sum of min(r A, clip(r, 1 - eps, 1 + eps) A) over the terms
  at::Tensor clipped;   // 0-d: number of terms with |r - 1| > eps
  at::Tensor kl_sum;    // 0-d: sum of k3 = (q - 1) - log q, q = p_ref / p (0 without reference)
  at::Tensor old_kl_sum;  // 0-d: sum of k3 = (r - 1) - log r, r = p / p_old: the KL from the
                          // sampling policy to this one (--rl.target_kl)
};

// log_prob, old_log_prob, ref_log_prob (optional: undefined) [m, K]; advantages [m].
// Only loss_sum carries gradients (through log_prob).
Surrogate clipped_surrogate(const at::Tensor& log_prob, const at::Tensor& old_log_prob, const at::Tensor& advantages,
                            double clip, const at::Tensor& ref_log_prob = {});

// Staleness rule: a group whose oldest chunk was sampled by weights more than max_staleness
// versions behind `current` is dropped (see the README: the clipped ratio corrects the rest).
inline bool too_stale(int64_t current, int64_t oldest, int64_t max_staleness) { return current - oldest > max_staleness; }

// The learning rate's factor at step `step` (0-based) of a linear warm-up over `warmup` steps
// (--rl.lr_warmup): (step + 1) / warmup, then 1; 1 throughout when warmup is 0. A function of
// the step alone, so that a resumed run continues the schedule.
inline double lr_warmup_scale(int64_t step, int64_t warmup) {
  return warmup <= 0 || step + 1 >= warmup ? 1.0 : double(step + 1) / double(warmup);
}

// The policy's learning-rate factor at step `step` (0-based): 0 over the first critic_warmup
// steps (--rl.critic_warmup: PPO's value head learns the returns of the starting policy before
// the policy moves on its advantages), then the linear warm-up counted from there.
inline double policy_lr_scale(int64_t step, int64_t critic_warmup, int64_t lr_warmup) {
  return step < critic_warmup ? 0.0 : lr_warmup_scale(step - critic_warmup, lr_warmup);
}

}  // namespace ember::rl
