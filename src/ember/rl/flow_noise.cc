#include "ember/rl/flow_noise.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <cmath>

#include "ember/core/error.h"

namespace ember::rl {

namespace {

double step_time(int i, int steps) { return 1.0 - double(i) / steps; }

void check(const FlowNoise& noise, const model::PolicyShape& shape) {
  if (!(noise.sigma > 0)) throw Error(ErrorKind::kInvalidArgument, "--rl.noise_std: must be > 0");
  if (noise.action_dim < 1 || noise.action_dim > shape.max_action_dim)
    throw Error(ErrorKind::kInvalidArgument, "flow noise: action_dim " + std::to_string(noise.action_dim) + " outside 1.." +
                                                 std::to_string(shape.max_action_dim));
}

// x_{i+1} from mu_i: noisy real dims, padded dims on the trained path t_{i+1} * x_0
at::Tensor next_state(const at::Tensor& mu, const at::Tensor& eps, const at::Tensor& x0, double t_next, const FlowNoise& noise) {
  const int64_t d = noise.action_dim;
  auto real = mu.narrow(-1, 0, d) + noise.sigma * eps;
  if (d == mu.size(-1)) return real;
  auto pad = t_next * x0.narrow(-1, d, mu.size(-1) - d);
  return at::cat({real, pad}, -1);
}

}  // namespace

at::Tensor gaussian_log_prob(const at::Tensor& y, const at::Tensor& mu, double sigma, int64_t action_dim) {
  auto z = (y.narrow(-1, 0, action_dim) - mu.narrow(-1, 0, action_dim)) / sigma;
  const double c = -std::log(sigma) - 0.5 * std::log(2 * M_PI);
  return (-0.5 * z.square() + c).sum({-2, -1});
}

Chain sample_chain(model::PolicyModuleImpl& policy, const model::PolicyInputs& inputs, const FlowNoise& noise,
                   const std::vector<uint64_t>& seeds) {
  const auto& shape = policy.base_shape();
  check(noise, shape);
  if (int64_t(seeds.size()) != inputs.samples)
    throw Error(ErrorKind::kInternal, "sample_chain: " + std::to_string(seeds.size()) + " seeds for " + std::to_string(inputs.samples) + " samples");
  at::NoGradGuard no_grad;
  model::PolicyInputs in = inputs;
  in.plan = inputs.plan.with_mask();  // once, not at every step
  const int K = shape.flow_steps;
  const int64_t n = in.samples, H = shape.horizon, A = shape.max_action_dim, d = noise.action_dim;
  // each sample's noise from its own stream: x_0 [H, A], then eps [K, H, d]
  std::vector<at::Tensor> x0s, epss;
  for (uint64_t s : seeds) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(s);
    x0s.push_back(at::randn({H, A}, gen, at::kFloat));
    epss.push_back(at::randn({K, H, d}, gen, at::kFloat));
  }
  const auto device = in.prefix_gather.device();
  auto x0 = at::stack(x0s).to(device);             // [n, H, A]
  auto eps = at::stack(epss, 1).to(device);        // [K, n, H, d]
  auto prefix = policy.encode_prefix(in);
  auto features = policy.prefix_features(in, *prefix);
  std::vector<at::Tensor> xs{x0}, lps;
  at::Tensor x = x0;
  for (int i = 0; i < K; ++i) {
    auto t = at::full({n}, step_time(i, K), x.options());
    auto mu = x + (-1.0 / K) * policy.prefix_velocity(in, *prefix, x, t).to(at::kFloat);
    auto next = next_state(mu, eps[i], x0, step_time(i + 1, K), noise);
    lps.push_back(gaussian_log_prob(next, mu, noise.sigma, d));
    xs.push_back(next);
    x = next;
  }
  return {at::stack(xs, 1).cpu(), at::stack(lps, 1).cpu(), features};
}

at::Tensor chain_log_prob(model::PolicyModuleImpl& policy, const model::PolicyInputs& inputs, const at::Tensor& x,
                          const FlowNoise& noise, at::Tensor* features) {
  const auto& shape = policy.base_shape();
  check(noise, shape);
  const int K = shape.flow_steps;
  if (x.dim() != 4 || x.size(0) != inputs.samples || x.size(1) != K + 1 || x.size(2) != shape.horizon || x.size(3) != shape.max_action_dim)
    throw Error(ErrorKind::kInternal, "chain_log_prob: chains are not [n, K+1, H, A]");
  model::PolicyInputs in = inputs;
  in.plan = inputs.plan.with_mask();
  const int64_t n = in.samples, H = shape.horizon, A = shape.max_action_dim;
  auto prefix = policy.encode_prefix(in);
  if (features) *features = policy.prefix_features(in, *prefix);
  // the K steps as K * n suffixes over the one prefix (step-major: row i * n + j is sample j at
  // step i): pi05 runs them as one pass of the action expert instead of K
  auto states = x.narrow(1, 0, K).transpose(0, 1).reshape({K * n, H, A});
  std::vector<at::Tensor> times;
  for (int i = 0; i < K; ++i) times.push_back(at::full({n}, step_time(i, K), x.options()));
  auto v = policy.prefix_velocity(in, *prefix, states, at::cat(times)).to(at::kFloat);
  auto mu = states + (-1.0 / K) * v;
  auto next = x.narrow(1, 1, K).transpose(0, 1).reshape({K * n, H, A});
  return gaussian_log_prob(next, mu, noise.sigma, noise.action_dim).view({K, n}).t();  // [n, K]
}

}  // namespace ember::rl
