#include "ember/rl/grpo.h"

#include <cmath>

namespace ember::rl {

std::vector<double> group_advantages(const std::vector<double>& returns) {
  const double n = double(returns.size());
  std::vector<double> adv(returns.size(), 0.0);
  if (returns.size() < 2) return adv;
  double mean = 0, var = 0;
  for (double r : returns) mean += r / n;
  for (double r : returns) var += (r - mean) * (r - mean) / n;
  const double sd = std::sqrt(var);
  if (sd < 1e-9) return adv;
  for (size_t i = 0; i < returns.size(); ++i) adv[i] = (returns[i] - mean) / (sd + 1e-6);
  return adv;
}

Surrogate clipped_surrogate(const at::Tensor& log_prob, const at::Tensor& old_log_prob, const at::Tensor& advantages,
                            double clip, const at::Tensor& ref_log_prob) {
  auto a = advantages.to(log_prob.dtype()).unsqueeze(1);  // [m, 1]
  // a log-ratio of a whole denoising chain can pass float's exp range (88) when the policy moves
  // far in one step: above kMaxLogRatio the ratio stays e^20 (no gradient), so neither the loss
  // nor the KL becomes inf
  auto log_ratio = at::clamp_max(log_prob - old_log_prob, kMaxLogRatio);
  auto ratio = at::exp(log_ratio);  // [m, K]
  auto surr = at::minimum(ratio * a, at::clamp(ratio, 1 - clip, 1 + clip) * a);
  Surrogate s;
  s.loss_sum = -surr.sum();
  auto r = ratio.detach();
  s.clipped = ((r - 1).abs() > clip).sum().to(at::kFloat);
  s.old_kl_sum = (r - 1 - log_ratio.detach()).sum();
  if (ref_log_prob.defined()) {
    auto log_q = at::clamp_max(ref_log_prob - log_prob.detach(), kMaxLogRatio);
    s.kl_sum = (at::exp(log_q) - 1 - log_q).sum();
  } else {
    s.kl_sum = at::zeros({}, log_prob.options());
  }
  return s;
}

}  // namespace ember::rl
