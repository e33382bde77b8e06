#include "ember/rl/flow_noise.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <cmath>

#include "ember/core/error.h"
#include "ember/rl/noise_head.h"

namespace ember::rl {

NoiseMethod parse_noise_method(const std::string& name, const std::string& flag) {
  if (name == "every_step") return NoiseMethod::kEveryStep;
  if (name == "sde") return NoiseMethod::kSde;
  if (name == "flow_noise") return NoiseMethod::kLearned;
  throw Error(ErrorKind::kInvalidArgument, flag + ": expected sde, flow_noise or every_step, got '" + name + "'");
}

double sde_sigma(int s, int K, double a) {
  const double t = 1.0 - double(s) / K;
  const double one_minus_t = double(std::max(s, 1)) / K;  // at t = 1: 1 - t_1
  return a * std::sqrt(t / one_minus_t);
}

namespace {

double step_time(int i, int steps) { return 1.0 - double(i) / steps; }

void check(const FlowNoise& noise, const model::PolicyShape& shape) {
  if (noise.method != NoiseMethod::kLearned && !(noise.sigma > 0)) throw Error(ErrorKind::kInvalidArgument, "--rl.noise_std: must be > 0");
  if (noise.action_dim < 1 || noise.action_dim > shape.max_action_dim)
    throw Error(ErrorKind::kInvalidArgument, "flow noise: action_dim " + std::to_string(noise.action_dim) + " outside 1.." +
                                                 std::to_string(shape.max_action_dim));
  if (noise.rows < 0) throw Error(ErrorKind::kInvalidArgument, "flow noise: rows must be >= 0");
}

// x_{i+1}: the real dims from their new values, the padded dims on the trained path t_{i+1} * x_0
at::Tensor with_padding(const at::Tensor& real, const at::Tensor& x0, double t_next) {
  const int64_t d = real.size(-1), A = x0.size(-1);
  if (d == A) return real;
  return at::cat({real, t_next * x0.narrow(-1, d, A - d)}, -1);
}

// kSde's transition at per-sample times: x [m, H, A], v its velocity, t [m] (t_s), sigma [m]
// (sigma_s), dt = 1/K; returns the mean [m, H, A]
at::Tensor sde_mean(const at::Tensor& x, const at::Tensor& v, const at::Tensor& t, const at::Tensor& sigma, double dt) {
  auto tt = t.view({-1, 1, 1}), ss = sigma.view({-1, 1, 1});
  auto x0_hat = x - tt * v, x1_hat = x + (1 - tt) * v;
  auto t_next = tt - dt;
  return (1 - t_next) * x0_hat + (t_next - ss.square() * dt / (2 * tt)) * x1_hat;
}

}  // namespace

at::Tensor gaussian_log_prob(const at::Tensor& y, const at::Tensor& mu, const at::Tensor& std, int64_t action_dim, int64_t rows) {
  const int64_t h = rows > 0 ? std::min(rows, y.size(-2)) : y.size(-2);
  auto diff = (y.narrow(-1, 0, action_dim) - mu.narrow(-1, 0, action_dim)).narrow(-2, 0, h);
  if (std.dim() > 0 && y.dim() != 3) throw Error(ErrorKind::kInternal, "gaussian_log_prob: a per-sample std needs [n, H, A]");
  // a number; one per sample; or one per entry of the real dims
  at::Tensor s = std.dim() == 0 ? std : std.dim() == 3 ? std.narrow(-1, 0, action_dim).narrow(-2, 0, h) : std.view({-1, 1, 1});
  auto z = diff / s;
  auto log_s = at::log(s.to(at::kDouble)).to(diff.scalar_type());
  return (-0.5 * z.square() - log_s - 0.5 * std::log(2 * M_PI)).sum({-2, -1});
}

ChainDraws draw_chain(const model::PolicyShape& shape, const FlowNoise& noise, const std::vector<uint64_t>& seeds) {
  check(noise, shape);
  const int K = shape.flow_steps;
  const bool sde = noise.method == NoiseMethod::kSde;
  const int64_t H = shape.horizon, A = shape.max_action_dim, d = noise.action_dim;
  // each sample's noise from its own stream: x_0 [H, A], then (sde) its step s and eps [H, d],
  // (every step) eps [K, H, d]
  std::vector<at::Tensor> x0s, epss;
  std::vector<int64_t> steps;
  for (uint64_t s : seeds) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(s);
    x0s.push_back(at::randn({H, A}, gen, at::kFloat));
    if (sde) {
      steps.push_back(at::randint(K, {1}, gen, at::kLong).item<int64_t>());
      epss.push_back(at::randn({1, H, d}, gen, at::kFloat));
    } else {
      epss.push_back(at::randn({K, H, d}, gen, at::kFloat));
    }
  }
  ChainDraws out;
  out.x0 = at::stack(x0s);
  out.eps = at::stack(epss, 1);
  if (sde) out.noisy_step = at::tensor(steps, at::kLong);
  return out;
}

std::vector<at::Tensor> integrate_chain(model::PolicyModuleImpl& policy, const model::PolicyInputs& in, const at::Tensor& x0,
                                        const at::Tensor& eps, const at::Tensor& noisy_step, const FlowNoise& noise, NoiseHeadImpl* head) {
  const auto& shape = policy.base_shape();
  const bool learned = noise.method == NoiseMethod::kLearned;
  if (learned && !head) throw Error(ErrorKind::kInternal, "integrate_chain: flow_noise without its head");
  const int K = shape.flow_steps;
  const bool sde = noise.method == NoiseMethod::kSde;
  const int64_t n = in.samples, d = noise.action_dim;
  auto prefix = policy.encode_prefix(in);
  auto features = policy.prefix_features(in, *prefix);
  std::vector<at::Tensor> xs{x0}, lps;
  at::Tensor lp_sde = sde ? at::zeros({n}, x0.options()) : at::Tensor();
  const double dt = 1.0 / K;
  at::Tensor x = x0;
  for (int i = 0; i < K; ++i) {
    auto t = at::full({n}, step_time(i, K), x.options());
    at::Tensor hidden;
    auto v = (learned ? policy.prefix_velocity_hidden(in, *prefix, x, t, hidden) : policy.prefix_velocity(in, *prefix, x, t)).to(at::kFloat);
    auto ode = x - dt * v;
    at::Tensor real;
    if (sde) {
      auto sigma = at::full({n}, sde_sigma(i, K, noise.sigma), x.options());
      auto mean = sde_mean(x, v, t, sigma, dt);
      auto std = sigma * std::sqrt(dt);
      auto noisy = mean.narrow(-1, 0, d) + std.view({-1, 1, 1}) * eps[0];
      auto here = (noisy_step == i).view({-1, 1, 1});
      real = at::where(here, noisy, ode.narrow(-1, 0, d));
      auto lp = gaussian_log_prob(real, mean, std, d, noise.rows);
      lp_sde = at::where(here.view({-1}), lp, lp_sde);
    } else if (learned) {
      auto sigma = head->forward(hidden);  // [n, H, d]
      real = ode.narrow(-1, 0, d) + sigma * eps[i];
      lps.push_back(gaussian_log_prob(real, ode, sigma, d, noise.rows));
    } else {
      real = ode.narrow(-1, 0, d) + noise.sigma * eps[i];
      lps.push_back(gaussian_log_prob(real, ode, at::scalar_tensor(noise.sigma, x.options()), d, noise.rows));
    }
    x = with_padding(real, x0, step_time(i + 1, K));
    xs.push_back(x);
  }
  auto log_prob = sde ? lp_sde.unsqueeze(1) : learned ? at::stack(lps, 1).mean(1, /*keepdim=*/true) : at::stack(lps, 1);
  return {at::stack(xs, 1), log_prob, features};
}

Chain sample_chain(model::PolicyModuleImpl& policy, const model::PolicyInputs& inputs, const FlowNoise& noise,
                   const std::vector<uint64_t>& seeds, NoiseHeadImpl* head) {
  if (int64_t(seeds.size()) != inputs.samples)
    throw Error(ErrorKind::kInternal, "sample_chain: " + std::to_string(seeds.size()) + " seeds for " + std::to_string(inputs.samples) + " samples");
  auto draws = draw_chain(policy.base_shape(), noise, seeds);
  at::NoGradGuard no_grad;
  model::PolicyInputs in = inputs;
  in.plan = inputs.plan.with_mask();  // once, not at every step
  const auto device = in.prefix_gather.device();
  auto out = integrate_chain(policy, in, draws.x0.to(device), draws.eps.to(device),
                             draws.noisy_step.defined() ? draws.noisy_step.to(device) : at::Tensor(), noise, head);
  return {out[0].cpu(), out[1].cpu(), draws.noisy_step, out[2]};
}

at::Tensor chain_log_prob(model::PolicyModuleImpl& policy, const model::PolicyInputs& inputs, const at::Tensor& x,
                          const at::Tensor& noisy_step, const FlowNoise& noise, const LogProbExtras& extras) {
  const auto& shape = policy.base_shape();
  check(noise, shape);
  const int K = shape.flow_steps;
  if (x.dim() != 4 || x.size(0) != inputs.samples || x.size(1) != K + 1 || x.size(2) != shape.horizon || x.size(3) != shape.max_action_dim)
    throw Error(ErrorKind::kInternal, "chain_log_prob: chains are not [n, K+1, H, A]");
  model::PolicyInputs in = inputs;
  in.plan = inputs.plan.with_mask();
  const int64_t n = in.samples, H = shape.horizon, A = shape.max_action_dim, d = noise.action_dim;
  const double dt = 1.0 / K;
  std::shared_ptr<const model::PrefixState> prefix;
  if (auto* frozen = extras.frozen_prefix) {
    if (!*frozen) {
      at::NoGradGuard no_grad;
      *frozen = policy.encode_prefix(in);
    }
    prefix = policy.refresh_prefix(in, *frozen);
  } else {
    prefix = policy.encode_prefix(in);
  }
  if (extras.features) *extras.features = policy.prefix_features(in, *prefix);
  if (noise.method == NoiseMethod::kSde) {
    if (!noisy_step.defined() || noisy_step.numel() != n)
      throw Error(ErrorKind::kInternal, "chain_log_prob: sde chains need their noisy steps");
    auto s = noisy_step.to(at::kLong).to(x.device());
    auto rows = at::arange(n, s.options());
    auto state = x.index({rows, s}), next = x.index({rows, s + 1});  // [n, H, A]
    // each step's time and sigma, looked up by the samples' steps (no host round trip per sample)
    std::vector<double> ts, sigmas;
    for (int i = 0; i < K; ++i) ts.push_back(step_time(i, K)), sigmas.push_back(sde_sigma(i, K, noise.sigma));
    auto t = at::tensor(ts, at::kDouble).to(x.options()).index_select(0, s);
    auto sigma = at::tensor(sigmas, at::kDouble).to(x.options()).index_select(0, s);
    auto v = policy.prefix_velocity(in, *prefix, state, t).to(at::kFloat);
    auto mean = sde_mean(state, v, t, sigma, dt);
    return gaussian_log_prob(next, mean, sigma * std::sqrt(dt), d, noise.rows).unsqueeze(1);  // [n, 1]
  }
  // the K steps as K * n suffixes over the one prefix (step-major: row i * n + j is sample j at
  // step i): pi05 runs them as one pass of the action expert instead of K
  auto states = x.narrow(1, 0, K).transpose(0, 1).reshape({K * n, H, A});
  std::vector<at::Tensor> times;
  for (int i = 0; i < K; ++i) times.push_back(at::full({n}, step_time(i, K), x.options()));
  auto next = x.narrow(1, 1, K).transpose(0, 1).reshape({K * n, H, A});
  if (noise.method == NoiseMethod::kLearned) {
    auto* head = extras.head;
    if (!head) throw Error(ErrorKind::kInternal, "chain_log_prob: flow_noise without its head");
    at::Tensor hidden;
    auto v = policy.prefix_velocity_hidden(in, *prefix, states, at::cat(times), hidden).to(at::kFloat);
    auto sigma = head->forward(hidden);  // [K * n, H, d]
    if (extras.entropy) {
      const int64_t h = noise.rows > 0 ? std::min(noise.rows, H) : H;
      auto log_sigma = at::log(sigma.narrow(-2, 0, h)).view({K, n, -1});
      *extras.entropy = 0.5 * std::log(2 * M_PI * M_E) + log_sigma.mean(at::IntArrayRef{0, 2});  // [n]
    }
    return gaussian_log_prob(next, states - dt * v, sigma, d, noise.rows).view({K, n}).mean(0).unsqueeze(1);  // [n, 1]
  }
  auto v = policy.prefix_velocity(in, *prefix, states, at::cat(times)).to(at::kFloat);
  auto mu = states - dt * v;
  return gaussian_log_prob(next, mu, at::scalar_tensor(noise.sigma, x.options()), d, noise.rows).view({K, n}).t();  // [n, K]
}

}  // namespace ember::rl
