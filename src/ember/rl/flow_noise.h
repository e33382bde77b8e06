// The policy's Euler integration of the flow made stochastic, so that the sampled actions have a
// log-probability the learner can take a ratio of (πRL, arXiv 2510.25889). pi0's time convention
// (t = 1 noise, t = 0 action; x_{t - dt} = x_t - dt * v), K steps, t_i = 1 - i/K, dt = 1/K:
//
//   x_0 ~ N(0, I)                                          [n, H, A], the usual initial noise
//
// Two noise methods (docs/rl.md says what each ratio is exact for):
//
// kEveryStep (ReinFlow-like, a fixed std): every step is a Gaussian transition
//     mu_i = x_i - dt * v(x_i, t_i),  x_{i+1} = mu_i + sigma * eps_i
//   log p = the K transitions' log-densities, one clipped-ratio term each.
//
// kSde (πRL's Flow-SDE, their LIBERO default): one step s per sample, drawn uniformly from
// 0..K-1, is the Euler-Maruyama step of the SDE whose marginals equal the ODE's; the others are
// the deterministic ODE step. With a the noise level (sigma here), at step s:
//     sigma_s = a * sqrt(t_s / (1 - t_s))      (1 - t_0 taken as 1 - t_1 = 1/K: finite at t = 1)
//     x0_hat  = x_s - t_s * v,  x1_hat = x_s + (1 - t_s) * v        (the action and noise guesses)
//     mean    = (1 - t_{s+1}) * x0_hat + (t_{s+1} - sigma_s^2 * dt / (2 t_s)) * x1_hat
//     x_{s+1} = mean + sqrt(dt) * sigma_s * eps
//   log p = that one transition's log-density: one term per chunk. Exploration stays on the
//   policy's own action distribution (the SDE keeps the flow's marginals), where a fixed std on
//   every step moves the chunk off it.
//
// kLearned (πRL's Flow-Noise, their ManiSkill setting): every step is a Gaussian transition
// around the ODE step whose std, per row and real dim, a learned head reads off the action
// expert's last hidden state (noise_head.h; bounded, e.g. [0.08, 0.16]):
//     mu_i = x_i - dt * v(x_i, t_i),  sigma_i = head(hidden(x_i, t_i)),  x_{i+1} = mu_i + sigma_i * eps_i
//   log p = the mean over the K steps of their log-densities: one term per chunk (πRL's joint
//   log-probability over the steps); the ratio's gradient reaches the head through sigma_i.
//
// Either way the padded dims (>= action_dim) follow the path the policy was trained on
// (x_{i+1} = t_{i+1} * x_0: its targets are zero there), policy-independent, and the
// log-density covers only the real dims of the chunk's first `rows` rows (the rows the
// environment executes). x_K[:, :, :action_dim] is the action chunk (normalised).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ember/model/policy.h"

namespace ember::rl {

enum class NoiseMethod { kEveryStep, kSde, kLearned };
// "every_step" | "sde" | "flow_noise"; anything else a user error naming flag
NoiseMethod parse_noise_method(const std::string& name, const std::string& flag);

class NoiseHeadImpl;

struct FlowNoise {
  double sigma = 0.1;      // kEveryStep: each step's std; kSde: the noise level a (> 0); kLearned: unused
  int64_t action_dim = 7;  // the real action dims (<= shape.max_action_dim)
  NoiseMethod method = NoiseMethod::kEveryStep;
  int64_t rows = 0;        // the log-density over the chunk's first `rows` rows (0: all H)
};

struct Chain {
  at::Tensor x;           // [n, K+1, H, A] float32: x_0 .. x_K
  at::Tensor log_prob;    // [n, T] float32: the terms' log p under the sampling policy (T: K, or 1 for kSde and kLearned)
  at::Tensor noisy_step;  // kSde: [n] int64, each sample's noisy step s (host); kEveryStep: undefined
  at::Tensor features;    // [n, F] float32 (on the device): the prefix's pooled features (PolicyModuleImpl::prefix_features)
};

// Samples the chain for a batch, the prefix computed once. seeds[j] (n of them) seeds sample j's
// noise (x_0, kSde's step s and every eps, drawn on the CPU), so a sample's chain does not depend
// on which batch it was in. No gradients. draw_chain, then integrate_chain. head: kLearned's
// std head (required for it, ignored otherwise).
Chain sample_chain(model::PolicyModuleImpl& policy, const model::PolicyInputs& in, const FlowNoise& noise,
                   const std::vector<uint64_t>& seeds, NoiseHeadImpl* head = nullptr);

// sample_chain's draws, on the host: x0 [n, H, A], eps [T, n, H, action_dim] (T: K, or 1 for
// kSde; K for kLearned), noisy_step [n] int64 (kSde; else undefined).
struct ChainDraws {
  at::Tensor x0, eps, noisy_step;
};
ChainDraws draw_chain(const model::PolicyShape& shape, const FlowNoise& noise, const std::vector<uint64_t>& seeds);

// sample_chain's device work on draws already on the inputs' device: {x [n, K+1, H, A],
// log_prob [n, T], features [n, F]}, all on the device. No host copy or synchronisation (a
// CUDA graph can hold it, rollout_server.cc); the caller disables gradients.
std::vector<at::Tensor> integrate_chain(model::PolicyModuleImpl& policy, const model::PolicyInputs& in, const at::Tensor& x0,
                                        const at::Tensor& eps, const at::Tensor& noisy_step, const FlowNoise& noise,
                                        NoiseHeadImpl* head = nullptr);

// What chain_log_prob hands back besides log p, and what it may use.
struct LogProbExtras {
  at::Tensor* features = nullptr;  // set to the prefix's pooled features [n, F] (on the policy's device, no gradient; value_head.h)
  NoiseHeadImpl* head = nullptr;   // kLearned's std head (its gradient flows through the log p)
  // kLearned: set to each chain's mean Gaussian entropy per step, row and real dim,
  // 0.5 log(2 pi e) + log sigma, over the rows the log p covers [n] (differentiable)
  at::Tensor* entropy = nullptr;
  // The policy's prefix parameters frozen: *frozen_prefix is the prefix encoded for these
  // inputs before (by this policy or one whose prefix parameters are the same), reused through
  // PolicyModuleImpl::refresh_prefix; when null, the prefix is encoded here without gradients
  // and stored in it. Null pointer: the prefix is encoded under the current grad mode.
  std::shared_ptr<const model::PrefixState>* frozen_prefix = nullptr;
};

// log p [n, T] of stored chains x [n, K+1, H, A] (kSde: with their noisy steps [n] int64) under
// the policy's current weights, the prefix computed once; differentiable when grad mode is on.
at::Tensor chain_log_prob(model::PolicyModuleImpl& policy, const model::PolicyInputs& in, const at::Tensor& x,
                          const at::Tensor& noisy_step, const FlowNoise& noise, const LogProbExtras& extras = {});

// log N(y; mu, std^2) summed over the real dims (the first action_dim columns) of the first rows
// rows (0: all): [.., H, A] -> [..]. std: a number, a tensor of the leading dims' shape, or one
// per entry [n, H, action_dim].
at::Tensor gaussian_log_prob(const at::Tensor& y, const at::Tensor& mu, const at::Tensor& std, int64_t action_dim, int64_t rows);

// kSde's step s: sigma_s (before sqrt(dt)) for K steps and noise level a
double sde_sigma(int s, int K, double a);

}  // namespace ember::rl
