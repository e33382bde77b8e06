#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <thread>

#include "ember/model/pi05.h"
#include "ember/model/policy_type.h"
#include "ember/rl/episode_feed.h"
#include "ember/rl/flow_noise.h"
#include "ember/rl/grpo.h"
#include "ember/rl/learner.h"
#include "ember/rl/policy_setup.h"
#include "ember/rl/rl_config.h"
#include "ember/rl/value_head.h"
#include "learner_util.h"
#include "test_util.h"

namespace ember::rl {
namespace {

// the tiny policy's operations are too small to split over threads
struct OneThread : ::testing::Environment {
  void SetUp() override { at::set_num_threads(1); }
};
const auto* const one_thread = ::testing::AddGlobalTestEnvironment(new OneThread);

// log N(y; mu, sigma^2) entry by entry in double precision over the first rows rows and d dims,
// sigma per entry [H, >= d]
double direct_log_prob_entries(const at::Tensor& y, const at::Tensor& mu, const at::Tensor& sigma, int64_t d, int64_t rows) {
  auto yy = y.to(at::kDouble).contiguous(), mm = mu.to(at::kDouble).contiguous(), ss = sigma.to(at::kDouble).contiguous();
  double sum = 0;
  for (int64_t h = 0; h < rows; ++h)
    for (int64_t a = 0; a < d; ++a) {
      const double sd = ss[h][a].item<double>(), z = (yy[h][a].item<double>() - mm[h][a].item<double>()) / sd;
      sum += -0.5 * z * z - std::log(sd) - 0.5 * std::log(2 * M_PI);
    }
  return sum;
}

// the same with one sigma, over every row
double direct_log_prob(const at::Tensor& y, const at::Tensor& mu, double sigma, int64_t d) {
  return direct_log_prob_entries(y, mu, at::full(y.sizes(), sigma, at::kDouble), d, y.size(0));
}

TEST(FlowNoise, LogProbIsTheGaussianOfEachEulerStep) {
  at::manual_seed(1);
  auto shape = tiny_shape();
  model::Pi05Policy policy(shape);
  policy->eval();
  auto s = samples(shape, 3);
  auto in = inputs(shape, s);
  FlowNoise noise{0.3, 7};
  Chain chain = sample_chain(*policy, in, noise, seeds(3));
  ASSERT_EQ(chain.x.sizes(), (at::IntArrayRef{3, 4, 4, 9}));
  ASSERT_EQ(chain.log_prob.sizes(), (at::IntArrayRef{3, 3}));
  at::NoGradGuard no_grad;
  const int K = shape.flow_steps;
  for (int i = 0; i < K; ++i) {
    // the uncached velocity (prefix recomputed), the Euler mean, the density by hand
    const double t = 1.0 - double(i) / K;
    auto xi = chain.x.select(1, i);
    auto mu = xi - policy->velocity(in, xi, at::full({3}, t)) / K;
    for (int j = 0; j < 3; ++j) {
      double want = direct_log_prob(chain.x[j][i + 1], mu[j], 0.3, 7);
      EXPECT_NEAR(chain.log_prob[j][i].item<double>(), want, 1e-3 * std::abs(want) + 1e-3) << "sample " << j << " step " << i;
    }
    // padded dims: on the trained path t * x_0, untouched by the policy or the noise
    const double t_next = 1.0 - double(i + 1) / K;
    EXPECT_TRUE(at::allclose(chain.x.select(1, i + 1).narrow(-1, 7, 2), t_next * chain.x.select(1, 0).narrow(-1, 7, 2)));
  }
  // the noise is really there: x_{i+1} - mu_i has std sigma on the real dims
  auto mu0 = chain.x.select(1, 0) - policy->velocity(in, chain.x.select(1, 0), at::ones({3})) / K;
  double sd = (chain.x.select(1, 1) - mu0).narrow(-1, 0, 7).std().item<double>();
  EXPECT_NEAR(sd, 0.3, 0.1);
}

TEST(FlowNoise, RecomputedLogProbMatchesAndFollowsTheWeights) {
  at::manual_seed(2);
  auto shape = tiny_shape();
  model::Pi05Policy policy(shape);
  policy->eval();
  auto s = samples(shape, 4);
  auto in = inputs(shape, s);
  FlowNoise noise{0.2, 7};
  Chain chain = sample_chain(*policy, in, noise, seeds(4));
  auto again = chain_log_prob(*policy, in, chain.x, {}, noise);
  EXPECT_TRUE(at::allclose(again, chain.log_prob, 1e-4, 1e-3)) << again - chain.log_prob;
  // other weights: the stored chain's density under them, against the direct computation
  {
    at::NoGradGuard no_grad;
    for (auto& p : policy->parameters()) p.add_(at::randn_like(p) * 0.02);
  }
  auto moved = chain_log_prob(*policy, in, chain.x, {}, noise);
  EXPECT_GT((moved - chain.log_prob).abs().max().item<double>(), 1e-3);
  at::NoGradGuard no_grad;
  auto x1 = chain.x.select(1, 1);
  auto mu = x1 - policy->velocity(in, x1, at::full({4}, 1.0 - 1.0 / 3)) / 3;
  double want = direct_log_prob(chain.x[2][2], mu[2], 0.2, 7);
  EXPECT_NEAR(moved[2][1].item<double>(), want, 1e-3 * std::abs(want) + 1e-3);
}

TEST(FlowNoise, SampleChainDoesNotDependOnTheBatch) {
  at::manual_seed(3);
  auto shape = tiny_shape();
  model::Pi05Policy policy(shape);
  policy->eval();
  auto s = samples(shape, 3);
  FlowNoise noise{0.2, 7};
  Chain all = sample_chain(*policy, inputs(shape, s), noise, seeds(3));
  std::vector<model::PolicySample> one{s[1]};
  Chain alone = sample_chain(*policy, inputs(shape, one), noise, {seeds(3)[1]});
  EXPECT_TRUE(at::allclose(all.x[1], alone.x[0], 1e-5, 1e-5));
  EXPECT_TRUE(at::allclose(all.log_prob[1], alone.log_prob[0], 1e-4, 1e-3));
}

// log N(y; mu, sigma^2) over the first rows rows and d dims, in double precision
double direct_log_prob_rows(const at::Tensor& y, const at::Tensor& mu, double sigma, int64_t d, int64_t rows) {
  return direct_log_prob(y.narrow(0, 0, rows), mu.narrow(0, 0, rows), sigma, d);
}

TEST(FlowSde, OneNoisyStepWithTheDriftCorrectedMeanAndItsLogProb) {
  at::manual_seed(4);
  auto shape = tiny_shape();
  shape.flow_steps = 4;
  model::Pi05Policy policy(shape);
  policy->eval();
  const int n = 6, K = 4;
  auto s = samples(shape, n);
  auto in = inputs(shape, s);
  FlowNoise noise{0.5, 7, NoiseMethod::kSde, /*rows=*/3};
  Chain chain = sample_chain(*policy, in, noise, seeds(n));
  ASSERT_EQ(chain.x.sizes(), (at::IntArrayRef{n, K + 1, 4, 9}));
  ASSERT_EQ(chain.log_prob.sizes(), (at::IntArrayRef{n, 1}));
  ASSERT_TRUE(chain.noisy_step.defined());
  at::NoGradGuard no_grad;
  std::set<int64_t> seen;
  for (int j = 0; j < n; ++j) seen.insert(chain.noisy_step[j].item<int64_t>());
  for (int i = 0; i < K; ++i) {
    // everything in double precision, the velocity uncached (prefix recomputed)
    const double t = 1.0 - double(i) / K, dt = 1.0 / K, t_next = t - dt;
    auto xi = chain.x.select(1, i);
    auto v_all = policy->velocity(in, xi, at::full({n}, t)).to(at::kDouble);
    for (int j = 0; j < n; ++j) {
      const int64_t noisy = chain.noisy_step[j].item<int64_t>();
      ASSERT_GE(noisy, 0);
      ASSERT_LT(noisy, K);
      auto x = xi[j].to(at::kDouble), v = v_all[j];
      auto next = chain.x[j][i + 1].to(at::kDouble);
      if (i != noisy) {
        // the deterministic Euler step on the real dims
        EXPECT_TRUE(at::allclose(next.narrow(-1, 0, 7), (x - dt * v).narrow(-1, 0, 7), 1e-4, 1e-4)) << "sample " << j << " step " << i;
        continue;
      }
      const double sigma = 0.5 * std::sqrt(t / (i == 0 ? dt : 1.0 - t));
      auto x0_hat = x - t * v, x1_hat = x + (1 - t) * v;
      auto mean = (1 - t_next) * x0_hat + (t_next - sigma * sigma * dt / (2 * t)) * x1_hat;
      const double sd = std::sqrt(dt) * sigma;
      double want = direct_log_prob_rows(next, mean, sd, 7, 3);
      EXPECT_NEAR(chain.log_prob[j][0].item<double>(), want, 1e-3 * std::abs(want) + 1e-3) << "sample " << j;
      // the noise is there: not the ODE's step
      EXPECT_GT((next - (x - dt * v)).narrow(-1, 0, 7).abs().max().item<double>(), 1e-3);
    }
  }
  // padded dims on the trained path: zero at t = 0
  EXPECT_TRUE(at::allclose(chain.x.select(1, K).narrow(-1, 7, 2), at::zeros({n, 4, 2})));
  EXPECT_GE(seen.size(), 2u) << "every sample drew the same noisy step";
  // recomputed by the learner's pass: the same; under moved weights: the direct density
  auto again = chain_log_prob(*policy, in, chain.x, chain.noisy_step, noise);
  EXPECT_TRUE(at::allclose(again, chain.log_prob, 1e-4, 1e-3)) << again - chain.log_prob;
  for (auto& p : policy->parameters()) p.add_(at::randn_like(p) * 0.02);
  auto moved = chain_log_prob(*policy, in, chain.x, chain.noisy_step, noise);
  EXPECT_GT((moved - chain.log_prob).abs().max().item<double>(), 1e-3);
}

TEST(FlowSde, SigmaMatchesPiRlSchedule) {
  // a * sqrt(t / (1 - t)), the first step's 1 - t taken as 1 - t_1
  EXPECT_NEAR(sde_sigma(0, 4, 0.5), 0.5 * std::sqrt(1.0 / 0.25), 1e-12);
  EXPECT_NEAR(sde_sigma(1, 4, 0.5), 0.5 * std::sqrt(0.75 / 0.25), 1e-12);
  EXPECT_NEAR(sde_sigma(3, 4, 0.5), 0.5 * std::sqrt(0.25 / 0.75), 1e-12);
  EXPECT_EQ(parse_noise_method("sde", "--x"), NoiseMethod::kSde);
  EXPECT_EQ(parse_noise_method("every_step", "--x"), NoiseMethod::kEveryStep);
  EXPECT_THROW(parse_noise_method("flow", "--rl.noise_method"), Error);
}

TEST(FlowSde, ExploresOnThePolicysOwnDistribution) {
  // the chunks' spread around the deterministic chunk: every_step's fixed std on all K steps
  // adds up, sde's one step keeps the flow's marginals (here: a fresh policy whose velocity
  // barely depends on x, so the ODE's chunk is x_0 minus a constant and sde's spread stays that
  // of x_0, where every_step's adds sigma * sqrt(K) on top)
  at::manual_seed(5);
  auto shape = tiny_shape();
  shape.flow_steps = 10;
  model::Pi05Policy policy(shape);
  policy->eval();
  const int n = 64;
  std::vector<model::PolicySample> one = samples(shape, 1);
  std::vector<model::PolicySample> s(n, one[0]);
  auto in = inputs(shape, s);
  auto sde = sample_chain(*policy, in, FlowNoise{0.5, 7, NoiseMethod::kSde}, seeds(n));
  auto every = sample_chain(*policy, in, FlowNoise{0.2, 7, NoiseMethod::kEveryStep}, seeds(n));
  const double sd_sde = sde.x.select(1, 10).narrow(-1, 0, 7).std(0).mean().item<double>();
  const double sd_every = every.x.select(1, 10).narrow(-1, 0, 7).std(0).mean().item<double>();
  EXPECT_LT(sd_sde, sd_every) << "sde " << sd_sde << " every_step " << sd_every;
}

TEST(Grpo, AdvantagesAreRelativeToTheGroup) {
  auto a = group_advantages({1, 0, 0, 1});
  ASSERT_EQ(a.size(), 4u);
  EXPECT_NEAR(a[0], 1, 1e-5);
  EXPECT_NEAR(a[1], -1, 1e-5);
  auto b = group_advantages({0.2, 0.5, 0.8});
  EXPECT_NEAR(b[0] + b[1] + b[2], 0, 1e-9);
  EXPECT_NEAR(b[1], 0, 1e-9);
  EXPECT_NEAR(b[2], 0.3 / std::sqrt(0.06), 1e-4);
  for (double x : group_advantages({1, 1, 1})) EXPECT_EQ(x, 0);
}

TEST(Grpo, ClippedSurrogateTakesThePessimisticTerm) {
  // ratios 1.5, 1.5, 0.5, 0.5, 1.1 with advantages +1, -1, +1, -1, +1; clip 0.2
  auto lp = at::log(at::tensor({1.5, 1.5, 0.5, 0.5, 1.1}, at::kDouble)).view({5, 1}).set_requires_grad(true);
  auto old = at::zeros({5, 1}, at::kDouble);
  auto adv = at::tensor({1.0, -1.0, 1.0, -1.0, 1.0}, at::kDouble);
  auto s = clipped_surrogate(lp, old, adv, 0.2, lp.detach());
  // terms: min(1.5, 1.2) = 1.2; min(-1.5, -1.2) = -1.5; min(0.5, 0.8) = 0.5; min(-0.5, -0.8) = -0.8; 1.1
  EXPECT_NEAR(s.loss_sum.item<double>(), -(1.2 - 1.5 + 0.5 - 0.8 + 1.1), 1e-9);
  EXPECT_EQ(s.clipped.item<double>(), 4);
  EXPECT_NEAR(s.kl_sum.item<double>(), 0, 1e-12);
  // k3 from the sampling policy: (r - 1) - log r, summed over the terms
  double old_kl = 0;
  for (double r : {1.5, 1.5, 0.5, 0.5, 1.1}) old_kl += r - 1 - std::log(r);
  EXPECT_NEAR(s.old_kl_sum.item<double>(), old_kl, 1e-9);
  s.loss_sum.backward();
  // d loss / d log_prob = -A r where the unclipped term is the minimum, else 0
  auto g = lp.grad().view({5});
  EXPECT_NEAR(g[0].item<double>(), 0, 1e-12);
  EXPECT_NEAR(g[1].item<double>(), 1.5, 1e-9);
  EXPECT_NEAR(g[2].item<double>(), -0.5, 1e-9);
  EXPECT_NEAR(g[3].item<double>(), 0, 1e-12);
  EXPECT_NEAR(g[4].item<double>(), -1.1, 1e-9);
  // k3 to a reference: (q - 1) - log q with q = p_ref / p
  auto k = clipped_surrogate(lp.detach(), old, adv, 0.2, lp.detach() + std::log(2.0));
  EXPECT_NEAR(k.kl_sum.item<double>(), 5 * (1 - std::log(2.0)), 1e-9);
}

// A chain whose log-probability moved by hundreds (the pi05 preset's first update on the H200,
// bench/results/rl_pi05_h200_2026-12-01.md): the ratio and q are capped at e^20, so the loss, its
// gradient and the KL stay finite in float; the capped term carries no gradient.
TEST(Grpo, HugeLogRatiosStayFinite) {
  auto lp = at::tensor({300.0f, 0.1f}).view({2, 1}).set_requires_grad(true);
  auto old = at::zeros({2, 1});
  auto adv = at::tensor({-1.0f, -1.0f});
  auto s = clipped_surrogate(lp, old, adv, 0.2, at::tensor({0.0f, 400.0f}).view({2, 1}));
  EXPECT_TRUE(std::isfinite(s.loss_sum.item<float>()));
  EXPECT_NEAR(s.loss_sum.item<double>(), std::exp(20.0) + std::exp(0.1), std::exp(20.0) * 1e-6);
  EXPECT_TRUE(std::isfinite(s.kl_sum.item<float>()));
  EXPECT_NEAR(s.kl_sum.item<double>(), (std::exp(-300.0) - 1 + 300) + (std::exp(20.0) - 1 - 20), std::exp(20.0) * 1e-6);
  s.loss_sum.backward();
  auto g = lp.grad().view({2});
  EXPECT_EQ(g[0].item<float>(), 0);                              // capped: no gradient
  EXPECT_NEAR(g[1].item<double>(), std::exp(0.1), 1e-5);         // -A r, unclipped (A < 0, r > 1 + eps)
  EXPECT_EQ(s.clipped.item<float>(), 1);  // r = e^20 is outside 1 +- eps; e^0.1 = 1.105 is inside
}

TEST(Grpo, StalenessRule) {
  EXPECT_FALSE(too_stale(5, 5, 0));
  EXPECT_TRUE(too_stale(5, 4, 0));
  EXPECT_FALSE(too_stale(5, 4, 1));
  EXPECT_TRUE(too_stale(5, 3, 1));
}

TEST(Grpo, LrWarmupRisesLinearlyThenHolds) {
  EXPECT_EQ(lr_warmup_scale(0, 0), 1.0);
  EXPECT_EQ(lr_warmup_scale(7, 0), 1.0);
  EXPECT_DOUBLE_EQ(lr_warmup_scale(0, 4), 0.25);
  EXPECT_DOUBLE_EQ(lr_warmup_scale(1, 4), 0.5);
  EXPECT_DOUBLE_EQ(lr_warmup_scale(3, 4), 1.0);
  EXPECT_DOUBLE_EQ(lr_warmup_scale(100, 4), 1.0);
  // a critic warm-up holds the policy still, then the ramp starts from its first step
  EXPECT_EQ(policy_lr_scale(0, 2, 4), 0.0);
  EXPECT_EQ(policy_lr_scale(1, 2, 4), 0.0);
  EXPECT_DOUBLE_EQ(policy_lr_scale(2, 2, 4), 0.25);
  EXPECT_DOUBLE_EQ(policy_lr_scale(5, 2, 4), 1.0);
  EXPECT_EQ(policy_lr_scale(3, 0, 0), 1.0);
}

TEST(EpisodeFeed, HandsOutGroupsWithinTheBudgetAndAssemblesThem) {
  const auto& suite = sim::find_suite("easy");
  EpisodeFeed feed({&suite.tasks[0]}, 2, 9, /*first_group=*/3);
  EXPECT_FALSE(feed.next());  // no budget yet: nothing, and no blocking
  feed.allow(1);
  auto a = feed.next(), b = feed.next();
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(feed.next());
  EXPECT_EQ(feed.group_of(a->id), 3);
  EXPECT_EQ(feed.member_of(a->id), 0);
  EXPECT_EQ(feed.member_of(b->id), 1);
  // one group: the same initial state, each member its own seed
  ASSERT_EQ(a->init.items.size(), b->init.items.size());
  for (size_t i = 0; i < a->init.items.size(); ++i) EXPECT_EQ(a->init.items[i].x, b->init.items[i].x);
  EXPECT_NE(a->seed, b->seed);
  // a group reaches the learner once every member finished, in any order
  Trajectory tb, ta;
  tb.group = ta.group = 3, tb.member = 1, ta.member = 0, tb.ret = 1;
  tb.chunks.resize(1), ta.chunks.resize(2);
  feed.finish(std::move(tb));
  feed.finish(std::move(ta));
  auto g = feed.pop();
  ASSERT_TRUE(g);
  EXPECT_EQ(g->id, 3);
  EXPECT_EQ(g->members[1].ret, 1);
  EXPECT_EQ(g->members[0].chunks.size(), 2u);
  // the next group: another initial state
  feed.allow(2);
  EXPECT_TRUE(feed.wait_for_episode());
  auto c = feed.next();
  ASSERT_TRUE(c);
  EXPECT_EQ(feed.group_of(c->id), 4);
  bool differs = false;
  for (size_t i = 0; i < c->init.items.size(); ++i) differs = differs || c->init.items[i].x != a->init.items[i].x;
  EXPECT_TRUE(differs);
  feed.stop();
  EXPECT_FALSE(feed.wait_for_episode());
  EXPECT_FALSE(feed.pop());
}

TEST(PolicySetup, DenoiseStepsRebuildThePolicyWithTheSameWeights) {
  auto shape = tiny_shape();  // 3 flow steps
  auto b = bundle_of(shape, 9);
  auto before = b.module;
  train::use_flow_steps(b, 5, at::kCPU, "--rl.denoise_steps");
  EXPECT_EQ(b.shape.flow_steps, 5);
  EXPECT_EQ(b.arch->base().flow_steps, 5);
  EXPECT_EQ(b.module->base_shape().flow_steps, 5);
  EXPECT_NE(b.module.get(), before.get());
  auto p = before->named_parameters(), q = b.module->named_parameters();
  ASSERT_EQ(p.size(), q.size());
  for (const auto& kv : p) EXPECT_TRUE(at::equal(kv.value(), q[kv.key()])) << kv.key();
  // the policy.json its checkpoints write records the steps
  EXPECT_EQ(model::arch_from_json(b.arch->to_json(), "test")->base().flow_steps, 5);
  train::use_flow_steps(b, 0, at::kCPU, "--rl.denoise_steps");  // 0: unchanged
  EXPECT_EQ(b.shape.flow_steps, 5);
}

TEST(Learner, SameUpdateStreamedOrBatched) {
  // async accumulates each group as it arrives in micro-batches; sync all at once: the same
  // trajectories must give the same step whatever the order and the split
  auto shape = tiny_shape();
  auto b = bundle_of(shape, 4);
  FlowNoise noise{0.2, 7};
  auto gs = groups(*b.module, noise, {{1, 0, 0.5}, {0.2, 0.9, 0.1}});
  at::Device cpu(at::kCPU);
  LearnerOptions o;
  o.noise = noise;
  o.micro_batch = 4;  // 6 chunks a group: micro-batches of 4, 4 (across the groups) and 4
  Learner streamed(train::copy_module(b, cpu), train::copy_module(b, cpu), cpu, o);
  o.micro_batch = 100;
  Learner batched(train::copy_module(b, cpu), train::copy_module(b, cpu), cpu, o);
  streamed.accumulate(gs[0]);
  streamed.accumulate(gs[1]);
  batched.accumulate(gs[1]);
  batched.accumulate(gs[0]);
  auto a = streamed.step(), c = batched.step();
  EXPECT_EQ(a.micro_batches, 3);
  EXPECT_EQ(c.micro_batches, 1);  // at step(): the partial micro-batch left
  EXPECT_EQ(a.terms, c.terms);
  EXPECT_EQ(a.terms, 2 * 3 * 2 * shape.flow_steps);
  EXPECT_NEAR(a.loss, c.loss, 1e-6);
  EXPECT_NEAR(a.grad_norm, c.grad_norm, 1e-5 * a.grad_norm);
  for (size_t i = 0; i < streamed.params().size(); ++i)
    EXPECT_TRUE(at::allclose(streamed.params()[i].second, batched.params()[i].second, 1e-5, 1e-6)) << streamed.params()[i].first;
}

// The warm-up's factor scales the step: AdamW's first update (and its decoupled weight decay)
// is proportional to the learning rate, so half the factor moves every weight half as far.
TEST(Learner, LrScaleScalesTheFirstUpdate) {
  auto shape = tiny_shape();
  auto b = bundle_of(shape, 4);
  FlowNoise noise{0.2, 7};
  auto gs = groups(*b.module, noise, {{1, 0, 0.5}});
  at::Device cpu(at::kCPU);
  LearnerOptions o;
  o.noise = noise;
  o.weight_decay = 0.01;
  Learner full(train::copy_module(b, cpu), train::copy_module(b, cpu), cpu, o);
  Learner half(train::copy_module(b, cpu), train::copy_module(b, cpu), cpu, o);
  full.accumulate(gs[0]);
  half.accumulate(gs[0]);
  full.step(1.0);
  half.step(0.5);
  auto start = b.module->named_parameters();
  int moved = 0;
  for (size_t i = 0; i < full.params().size(); ++i) {
    const auto& [name, w] = full.params()[i];
    auto d_full = w - start[name], d_half = half.params()[i].second - start[name];
    if (d_full.abs().max().item<double>() == 0) continue;
    ++moved;
    EXPECT_TRUE(at::allclose(d_half, 0.5 * d_full, 1e-3, 1e-7)) << name;
  }
  EXPECT_GT(moved, 0);
}

TEST(Learner, KlEveryChangesOnlyTheMeasurement) {
  auto shape = tiny_shape();
  auto b = bundle_of(shape, 4);
  FlowNoise noise{0.2, 7};
  auto gs = groups(*b.module, noise, {{1, 0, 0.5}});
  at::Device cpu(at::kCPU);
  LearnerOptions o;
  o.noise = noise;
  o.micro_batch = 2;  // 6 chunks: 3 micro-batches
  Learner every(train::copy_module(b, cpu), train::copy_module(b, cpu), cpu, o);
  o.kl_every = 1000;  // the first micro-batch of each step only
  Learner first(train::copy_module(b, cpu), train::copy_module(b, cpu), cpu, o);
  for (int k = 0; k < 2; ++k) {  // the second step is off-policy: KL > 0
    every.accumulate(gs[0]);
    first.accumulate(gs[0]);
    auto a = every.step(), c = first.step();
    EXPECT_NEAR(a.loss, c.loss, 1e-6);
    EXPECT_NEAR(a.grad_norm, c.grad_norm, 1e-6 * a.grad_norm);
    if (k == 1) {
      EXPECT_GT(c.kl, 0);
    }
  }
  for (size_t i = 0; i < every.params().size(); ++i)
    EXPECT_TRUE(at::equal(every.params()[i].second, first.params()[i].second)) << every.params()[i].first;
}

// One on-policy step on a group of two trajectories with returns 1 and 0 (states of state_dim
// where the type reads them): every ratio is 1 and the policy is the reference, the better
// chains gain likelihood and the worse lose it; a second step on the same (now off-policy)
// chains sees a KL > 0.
// head: flow_noise's std head (the learner trains a copy of it)
void expect_on_policy_step_raises_better_chains(const train::PolicyBundle& b, const FlowNoise& noise, int64_t state_dim,
                                                NoiseHead head = nullptr) {
  const std::string what = b.module->type() + (noise.method == NoiseMethod::kSde ? ", sde" : noise.method == NoiseMethod::kLearned ? ", flow_noise" : ", every_step");
  const auto& shape = b.shape;
  auto gs = groups(*b.module, noise, {{1, 0}}, state_dim, head ? head.get() : nullptr);
  at::Device cpu(at::kCPU);
  LearnerOptions o;
  o.noise = noise;
  o.lr = 1e-3;
  Learner learner(train::copy_module(b, cpu), train::copy_module(b, cpu), cpu, o, nullptr, nullptr, head ? clone_noise_head(*head, cpu) : nullptr);
  learner.accumulate(gs[0]);
  auto s = learner.step();
  EXPECT_EQ(s.clip_frac, 0) << what;   // on-policy: every ratio is 1
  EXPECT_NEAR(s.kl, 0, 1e-6) << what;  // and the policy is the reference
  EXPECT_GT(s.grad_norm, 0) << what;
  auto logp = [&](const Trajectory& t) {
    at::NoGradGuard no_grad;
    std::vector<model::PolicySample> ss{t.chunks[0].sample, t.chunks[1].sample};
    auto x = at::stack({t.chunks[0].chain, t.chunks[1].chain});
    at::Tensor steps;
    if (noise.method == NoiseMethod::kSde) steps = at::tensor(std::vector<int64_t>{t.chunks[0].noisy_step, t.chunks[1].noisy_step}, at::kLong);
    return chain_log_prob(*learner.policy(), inputs(shape, ss), x, steps, noise, {.head = learner.noise_head() ? learner.noise_head().get() : nullptr})
        .sum()
        .item<double>();
  };
  auto old = [](const Trajectory& t) { return (t.chunks[0].log_prob.sum() + t.chunks[1].log_prob.sum()).item<double>(); };
  EXPECT_GT(logp(gs[0].members[0]), old(gs[0].members[0])) << what;  // advantage +1
  EXPECT_LT(logp(gs[0].members[1]), old(gs[0].members[1])) << what;  // advantage -1
  if (head) {  // the step moved the head too (the surrogate's gradient through the std)
    auto before = head->parameters(), after = learner.noise_head()->parameters();
    double moved = 0;
    for (size_t i = 0; i < before.size(); ++i) moved += (after[i] - before[i]).abs().sum().item<double>();
    EXPECT_GT(moved, 0) << what;
    EXPECT_GT(s.entropy, 0.5 * std::log(2 * M_PI * M_E) + std::log(0.08) - 1e-6) << what;
    EXPECT_LT(s.entropy, 0.5 * std::log(2 * M_PI * M_E) + std::log(0.16) + 1e-6) << what;
    EXPECT_GT(s.noise_std, 0.08 - 1e-6) << what;
    EXPECT_LT(s.noise_std, 0.16 + 1e-6) << what;
  }
  learner.accumulate(gs[0]);
  EXPECT_GT(learner.step().kl, 0) << what;
}

TEST(Learner, OnPolicyStepRaisesTheLikelihoodOfBetterChains) {
  expect_on_policy_step_raises_better_chains(bundle_of(tiny_shape(), 5), FlowNoise{0.2, 7}, 0);
}

TEST(Learner, FlowNoiseStepRaisesTheLikelihoodOfBetterChainsAndTrainsTheHead) {
  auto b = bundle_of(tiny_shape(), 5);
  b.module->eval();
  at::manual_seed(8);
  NoiseHead head(b.module->expert_width(), 7, 0.08, 0.16);
  expect_on_policy_step_raises_better_chains(b, FlowNoise{0, 7, NoiseMethod::kLearned}, 0, head);
}

// Flow-Noise: every step's transition is the Gaussian around the ODE step with the head's std
// (read off the action expert's hidden state), bounded; the log-probability is the steps' mean,
// over the executed rows; recomputed by the learner as sampled; the entropy is the std's.
TEST(FlowNoise, LearnedStdIsTheHeadsAndTheLogProbTheStepsMean) {
  at::manual_seed(12);
  auto shape = tiny_shape();
  model::Pi05Policy policy(shape);
  policy->eval();
  NoiseHead head(policy->expert_width(), 7, 0.08, 0.16);
  auto s = samples(shape, 3);
  auto in = inputs(shape, s);
  FlowNoise noise{0, 7, NoiseMethod::kLearned, 2};  // the log-density over the first 2 of 4 rows
  Chain chain = sample_chain(*policy, in, noise, seeds(3), head.get());
  ASSERT_EQ(chain.log_prob.sizes(), (at::IntArrayRef{3, 1}));
  EXPECT_THROW(sample_chain(*policy, in, noise, seeds(3)), Error);  // no head
  const int K = shape.flow_steps;
  {
    at::NoGradGuard no_grad;
    auto masked = in;
    masked.plan = in.plan.with_mask();
    auto prefix = policy->encode_prefix(masked);
    std::vector<double> sum(3, 0.0);
    double z_sq = 0;
    int64_t z_n = 0;
    for (int i = 0; i < K; ++i) {
      const double t = 1.0 - double(i) / K;
      auto xi = chain.x.select(1, i);
      at::Tensor hidden;
      auto v = policy->prefix_velocity_hidden(masked, *prefix, xi, at::full({3}, t), hidden);
      // the velocity is the policy's own (the prefix recomputed: the uncached path)
      EXPECT_TRUE(at::allclose(v, policy->velocity(in, xi, at::full({3}, t)), 1e-4, 1e-4));
      auto sigma = head->forward(hidden);
      ASSERT_EQ(sigma.sizes(), (at::IntArrayRef{3, 4, 7}));
      EXPECT_GE(sigma.min().item<double>(), 0.08 - 1e-7);
      EXPECT_LE(sigma.max().item<double>(), 0.16 + 1e-7);
      auto mu = xi - v / K;
      for (int j = 0; j < 3; ++j) sum[size_t(j)] += direct_log_prob_entries(chain.x[j][i + 1], mu[j], sigma[j], 7, 2) / K;
      auto z = (chain.x.select(1, i + 1) - mu).narrow(-1, 0, 7) / sigma;
      z_sq += z.square().sum().item<double>(), z_n += z.numel();
    }
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(chain.log_prob[j][0].item<double>(), sum[size_t(j)], 1e-3 * std::abs(sum[size_t(j)]) + 1e-3) << j;
    EXPECT_NEAR(std::sqrt(z_sq / double(z_n)), 1.0, 0.25);  // the noise is there, at the head's std
  }
  // the learner's recomputation, with its gradient reaching the head, and the entropy
  at::Tensor entropy;
  auto again = chain_log_prob(*policy, in, chain.x, {}, noise, {.head = head.get(), .entropy = &entropy});
  EXPECT_TRUE(at::allclose(again, chain.log_prob, 1e-4, 1e-3)) << again - chain.log_prob;
  ASSERT_EQ(entropy.sizes(), (at::IntArrayRef{3}));
  EXPECT_GT(entropy.min().item<double>(), 0.5 * std::log(2 * M_PI * M_E) + std::log(0.08) - 1e-6);
  EXPECT_LT(entropy.max().item<double>(), 0.5 * std::log(2 * M_PI * M_E) + std::log(0.16) + 1e-6);
  (again.sum() + entropy.sum()).backward();
  EXPECT_GT(head->fc1->weight.grad().abs().sum().item<double>(), 0);
}

// With its noise set to zero the rollout's chain is the deterministic sampler `ember eval` runs:
// for each registered type, the chain's last state equals sample_actions from the same x_0, so
// RL optimises the policy that is deployed (GR00T: through prefix_velocity's conversion of its
// time convention and time buckets). Without padded action dims: there the chain keeps pi0.5's
// padded dims on their trained path t * x_0 where sample_actions integrates them, which differs
// by what a policy's padded velocity is off its target (0.05 for random tiny weights).
TEST(FlowNoise, ZeroNoiseChainIsTheDeployedSampler) {
  for (const auto& type : model::policy_types()) {
    auto b = tiny_of_type(type, 7, 11);
    auto& module = b.module;
    const auto& shape = b.shape;
    auto s = samples(shape, 3, 4, 7);
    auto in = inputs(shape, s);
    in.plan = in.plan.with_mask();
    auto x0 = at::randn({3, shape.horizon, shape.max_action_dim});
    FlowNoise noise{0.2, 7, NoiseMethod::kEveryStep};
    at::NoGradGuard no_grad;
    auto chain = integrate_chain(*module, in, x0, at::zeros({shape.flow_steps, 3, shape.horizon, 7}), {}, noise);
    auto last = chain[0].select(1, shape.flow_steps).narrow(-1, 0, 7);
    auto deployed = module->sample_actions(in, x0.clone()).narrow(-1, 0, 7);
    EXPECT_LT((last - deployed).abs().max().item<double>(), 1e-5) << type.name;
  }
}

// The same on-policy step through GR00T's velocity (its time convention turned into pi0's by
// prefix_velocity, its DiT in eval mode), under both noise methods.
TEST(Learner, GrootOnPolicyStepRaisesTheLikelihoodOfBetterChains) {
  for (auto method : {NoiseMethod::kEveryStep, NoiseMethod::kSde})
    expect_on_policy_step_raises_better_chains(tiny_of_type(model::policy_type("groot"), 9, 5),
                                               FlowNoise{method == NoiseMethod::kSde ? 0.5 : 0.2, 7, method}, 7);
  // flow_noise: the head on the DiT's output (before the embodiment's action decoder)
  auto b = tiny_of_type(model::policy_type("groot"), 9, 5);
  at::manual_seed(8);
  NoiseHead head(b.module->expert_width(), 7, 0.08, 0.16);
  expect_on_policy_step_raises_better_chains(b, FlowNoise{0, 7, NoiseMethod::kLearned}, 7, head);
}

// A pass's optimizer steps reported as one: counts summed, means weighted by what they are means over.
TEST(Learner, CombinedStepsWeighTheirFigures) {
  StepStats a, b;
  a.terms = 10, a.chunks = 5, a.groups = 1, a.micro_batches = 1, a.flat_groups = 1;
  a.success = 1.0, a.ret = 2.0, a.loss = 0.5, a.kl = 0.0, a.clip_frac = 0.0, a.grad_norm = 1.0, a.value_loss = 0.2;
  b.terms = 30, b.chunks = 15, b.groups = 3, b.micro_batches = 2, b.filtered_groups = 1;
  b.success = 0.0, b.ret = 1.0, b.loss = 1.5, b.kl = 0.4, b.clip_frac = 0.2, b.grad_norm = 3.0, b.value_loss = 0.6;
  auto c = combine({a, b});
  EXPECT_EQ(c.terms, 40);
  EXPECT_EQ(c.chunks, 20);
  EXPECT_EQ(c.groups, 4);
  EXPECT_EQ(c.micro_batches, 3);
  EXPECT_EQ(c.flat_groups, 1);
  EXPECT_EQ(c.filtered_groups, 1);
  EXPECT_DOUBLE_EQ(c.success, 0.25);
  EXPECT_DOUBLE_EQ(c.ret, 1.25);
  EXPECT_DOUBLE_EQ(c.loss, 1.25);
  EXPECT_DOUBLE_EQ(c.kl, 0.3);
  EXPECT_DOUBLE_EQ(c.clip_frac, 0.15);
  EXPECT_DOUBLE_EQ(c.grad_norm, 2.5);
  EXPECT_DOUBLE_EQ(c.value_loss, 0.5);
  EXPECT_EQ(combine({a}).loss, 0.5);
}

TEST(Ppo, GaeByHand) {
  const std::vector<double> r{0.5, -0.2, 1.0}, v{0.1, 0.3, -0.4};
  const double g = 0.9, l = 0.8;
  // deltas: r_k + g V_{k+1} - V_k, V_3 = 0
  const double d2 = 1.0 - -0.4, d1 = -0.2 + g * -0.4 - 0.3, d0 = 0.5 + g * 0.3 - 0.1;
  const double a2 = d2, a1 = d1 + g * l * a2, a0 = d0 + g * l * a1;
  Gae e = gae(r, v, g, l);
  ASSERT_EQ(e.advantages.size(), 3u);
  EXPECT_NEAR(e.advantages[0], a0, 1e-12);
  EXPECT_NEAR(e.advantages[1], a1, 1e-12);
  EXPECT_NEAR(e.advantages[2], a2, 1e-12);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(e.returns[size_t(k)], e.advantages[size_t(k)] + v[size_t(k)], 1e-12);
  // lambda 1: the discounted reward-to-go minus V; lambda 0: the one-step TD error
  Gae mc = gae(r, v, g, 1.0);
  EXPECT_NEAR(mc.returns[0], 0.5 + g * -0.2 + g * g * 1.0, 1e-12);
  Gae td = gae(r, v, g, 0.0);
  EXPECT_NEAR(td.advantages[0], d0, 1e-12);
  EXPECT_THROW(gae({1}, {1, 2}, g, l), Error);
}

TEST(Ppo, PooledFeaturesAreEachSamplesOwnPrefixMean) {
  auto shape = tiny_shape();
  auto b = bundle_of(shape, 3);
  at::NoGradGuard no_grad;
  auto s = samples(shape, 3);
  auto in = inputs(shape, s);
  auto prefix = b.module->encode_prefix(in);
  const auto& cache = dynamic_cast<const model::PrefixCache&>(*prefix);
  auto f = b.module->prefix_features(in, cache);
  ASSERT_EQ(f.size(0), 3);
  ASSERT_EQ(f.size(1), b.module->prefix_feature_dim());
  auto v = cache.values.back().reshape({cache.values.back().size(0), -1});
  int64_t at = 0;
  for (int j = 0; j < 3; ++j) {
    const int64_t len = in.plan.prefix_lens[size_t(j)];
    EXPECT_TRUE(at::allclose(f[j], v.narrow(0, at, len).mean(0), 1e-5, 1e-6)) << "sample " << j;
    at += len;
    // and the same alone in a batch of one
    std::vector<model::PolicySample> one{s[size_t(j)]};
    auto in1 = inputs(shape, one);
    auto f1 = b.module->prefix_features(in1, *b.module->encode_prefix(in1));
    EXPECT_TRUE(at::allclose(f[j], f1[0], 1e-4, 1e-5)) << "sample " << j;
  }
}

TEST(Learner, PpoFitsTheValueAndRaisesTheBetterChunk) {
  auto shape = tiny_shape();
  auto b = bundle_of(shape, 6);
  FlowNoise noise{0.2, 7};
  auto gs = groups(*b.module, noise, {{0, 0}});
  // member 0: the first chunk earns 1, the second nothing; member 1: the reverse
  gs[0].members[0].chunks[0].reward = 1, gs[0].members[1].chunks[1].reward = 1;
  at::Device cpu(at::kCPU);
  LearnerOptions o;
  o.noise = noise;
  o.lr = 1e-3;
  o.ppo = true;
  o.gamma = 0.5;
  o.gae_lambda = 1;
  at::manual_seed(2);
  ValueHead value(b.module->prefix_feature_dim());
  Learner learner(train::copy_module(b, cpu), train::copy_module(b, cpu), cpu, o, value);
  // values recorded at sampling are 0 (a fresh head): A = reward-to-go, normalised over the
  // group's 4 chunks: returns 1, 0, 0.5, 1 -> member 0's first chunk and member 1's second up
  auto logp = [&](const ChunkRecord& c) {
    at::NoGradGuard no_grad;
    std::vector<model::PolicySample> s{c.sample};
    return chain_log_prob(*learner.policy(), inputs(shape, s), c.chain.unsqueeze(0), {}, noise).sum().item<double>();
  };
  learner.accumulate(gs[0]);
  auto s = learner.step();
  EXPECT_EQ(s.clip_frac, 0);
  EXPECT_GT(s.grad_norm, 0);
  EXPECT_NEAR(s.value_loss, 0.5 * (1 + 0 + 0.25 + 1) / 4, 1e-6);  // V = 0 before the step
  EXPECT_GT(logp(gs[0].members[0].chunks[0]), gs[0].members[0].chunks[0].log_prob.sum().item<double>());
  EXPECT_LT(logp(gs[0].members[0].chunks[1]), gs[0].members[0].chunks[1].log_prob.sum().item<double>());
  // the critic fits its targets: the loss falls over steps on the same data
  double last = s.value_loss;
  for (int k = 0; k < 30; ++k) {
    learner.accumulate(gs[0]);
    last = learner.step().value_loss;
  }
  EXPECT_LT(last, 0.3 * s.value_loss);
  // a GRPO learner refuses nothing, a PPO one needs its head
  EXPECT_THROW(Learner(train::copy_module(b, cpu), train::copy_module(b, cpu), cpu, o), Error);
}

// The defaults left to the policy's size take the large-policy recipe from 10 M parameters on;
// flags given keep their values.
TEST(RlConfig, SizeDefaultsFollowThePolicyAndKeepGivenFlags) {
  RlConfig c;
  const auto small = with_size_defaults(c, kLargePolicyParameters - 1);
  EXPECT_EQ(small.optimizer.lr, 1e-4);
  EXPECT_EQ(small.lr_warmup, 0);
  EXPECT_EQ(small.train, "all");
  const auto large = with_size_defaults(c, kLargePolicyParameters);
  EXPECT_EQ(large.optimizer.lr, 1e-5);
  EXPECT_EQ(large.lr_warmup, 10);
  EXPECT_EQ(large.train, "expert");
  c.optimizer.lr = 3e-5, c.lr_warmup = 0, c.train = "all";
  const auto given = with_size_defaults(c, 145'000'000);
  EXPECT_EQ(given.optimizer.lr, 3e-5);
  EXPECT_EQ(given.lr_warmup, 0);
  EXPECT_EQ(given.train, "all");
  // the mode: sync where the rollout and the learner share a GPU, async with a GPU each; a given one stays
  EXPECT_EQ(small.mode, "sync");
  c.placement = "split";
  EXPECT_EQ(with_size_defaults(c, 1).mode, "async");
  c.mode = "sync";
  EXPECT_EQ(with_size_defaults(c, 1).mode, "sync");
}

TEST(ValueHead, LayersFromTheHiddenWidthsStartAtZero) {
  at::manual_seed(3);
  ValueHead one(12);  // the default: one hidden layer of 128, named as before the flag
  auto names = one->named_parameters().keys();
  EXPECT_EQ(names, (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(one->layers[0]->weight.size(0), 128);
  ValueHead deep(12, std::vector<int64_t>{16, 8, 4});
  ASSERT_EQ(deep->layers.size(), 4u);
  EXPECT_EQ(deep->layers[1]->weight.sizes(), (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(deep->layers[3]->weight.sizes(), (std::vector<int64_t>{1, 4}));
  auto x = at::randn({5, 12});
  auto v = deep->forward(x);
  EXPECT_EQ(v.sizes(), (std::vector<int64_t>{5}));
  EXPECT_EQ(v.abs().max().item<float>(), 0.0f);  // V = 0 everywhere at the start
  // once the output layer moves, the rows differ: every layer is on the path
  {
    at::NoGradGuard no_grad;
    deep->layers.back()->weight.fill_(1);
  }
  v = deep->forward(x);
  EXPECT_GT((v - v[0]).abs().max().item<float>(), 0.0f);
  EXPECT_THROW(ValueHead(12, std::vector<int64_t>{16, 0}), Error);
}

TEST(RlConfig, BadFlagsAreNamed) {
  RlConfig c;
  c.output_dir = "/tmp/x";
  EXPECT_NE(test::error_of([&] { validate(c); }, ErrorKind::kInvalidArgument).find("--checkpoint"), std::string::npos);
  c.policy.preset = "tiny";
  c.mode = "lockstep";
  EXPECT_NE(test::error_of([&] { validate(c); }, ErrorKind::kInvalidArgument).find("--rl.mode"), std::string::npos);
  c.mode = "sync";
  c.group_size = 1;
  EXPECT_NE(test::error_of([&] { validate(c); }, ErrorKind::kInvalidArgument).find("--rl.group_size"), std::string::npos);
  c.group_size = 4;
  c.algo = "a2c";
  EXPECT_NE(test::error_of([&] { validate(c); }, ErrorKind::kInvalidArgument).find("--rl.algo"), std::string::npos);
  c.algo = "ppo";
  c.gae_lambda = 1.5;
  EXPECT_NE(test::error_of([&] { validate(c); }, ErrorKind::kInvalidArgument).find("--rl.gae_lambda"), std::string::npos);
  c.gae_lambda = 0.95;
  c.render_layout = "gpu";
  EXPECT_NE(test::error_of([&] { validate(c); }, ErrorKind::kInvalidArgument).find("--rl.render_layout"), std::string::npos);
  c.render_layout = "auto";
  c.train = "vision";
  EXPECT_NE(test::error_of([&] { validate(c); }, ErrorKind::kInvalidArgument).find("--rl.train"), std::string::npos);
  c.train = "expert";
  c.epochs = 0;
  EXPECT_NE(test::error_of([&] { validate(c); }, ErrorKind::kInvalidArgument).find("--rl.epochs"), std::string::npos);
  c.epochs = 2;
  c.target_kl = -0.1;
  EXPECT_NE(test::error_of([&] { validate(c); }, ErrorKind::kInvalidArgument).find("--rl.target_kl"), std::string::npos);
  c.target_kl = 0.02;
  for (auto [flag, set] : std::vector<std::pair<std::string, std::function<void(RlConfig&)>>>{
           {"--rl.noise_method", [](RlConfig& x) { x.noise_method = "ode"; }},
           {"--rl.noise_level", [](RlConfig& x) { x.noise_level = 0; }},
           {"--rl.noise_std", [](RlConfig& x) { x.noise_std = std::nan(""); }},
           {"--rl.noise_min_std/rl.noise_max_std", [](RlConfig& x) { x.noise_min_std = 0.2, x.noise_max_std = 0.1; }},
           {"--rl.noise_min_std/rl.noise_max_std", [](RlConfig& x) { x.noise_min_std = 0; }},
           {"--rl.noise_min_std/rl.noise_max_std", [](RlConfig& x) { x.noise_max_std = std::nan(""); }},
           {"--rl.entropy_bonus", [](RlConfig& x) { x.entropy_bonus = -0.1; }},
           {"--rl.minibatches", [](RlConfig& x) { x.minibatches = 0; }},
           {"--rl.minibatches", [](RlConfig& x) { x.minibatches = x.groups_per_step + 1; }},
           {"--rl.prefix_cache_gb", [](RlConfig& x) { x.prefix_cache_gb = -1; }},
           {"--rl.prefix_cache_gb", [](RlConfig& x) { x.prefix_cache_gb = std::nan(""); }},
           {"--rl.denoise_steps", [](RlConfig& x) { x.denoise_steps = -1; }},
           {"--rl.logprob_rows", [](RlConfig& x) { x.logprob_rows = "all"; }},
           {"--rl.filter_low/rl.filter_high", [](RlConfig& x) { x.filter_low = 0.8, x.filter_high = 0.2; }},
           {"--optimizer.weight_decay", [](RlConfig& x) { x.optimizer.weight_decay = -1; }},
           {"--rl.lr_warmup", [](RlConfig& x) { x.lr_warmup = -2; }},
           {"--optimizer.lr", [](RlConfig& x) { x.optimizer.lr = -1e-4; }},
           {"--rl.critic_warmup", [](RlConfig& x) { x.critic_warmup = -1; }},
           {"--rl.critic_warmup", [](RlConfig& x) { x.algo = "grpo", x.critic_warmup = 3; }},  // no value head to warm up
           // every number finite and within what a run could use (issue 42's hostile values)
           {"--optimizer.lr", [](RlConfig& x) { x.optimizer.lr = std::numeric_limits<double>::infinity(); }},
           {"--optimizer.lr", [](RlConfig& x) { x.optimizer.lr = 1e308; }},
           {"--optimizer.betas", [](RlConfig& x) { x.optimizer.betas = {0.9, 1.0}; }},
           {"--rl.value_lr", [](RlConfig& x) { x.value_lr = std::nan(""); }},
           {"--rl.value_hidden", [](RlConfig& x) { x.value_hidden = {}; }},
           {"--rl.value_hidden", [](RlConfig& x) { x.value_hidden = {1024, 0}; }},
           {"--rl.noise_std", [](RlConfig& x) { x.noise_std = std::numeric_limits<double>::infinity(); }},
           {"--rl.iterations", [](RlConfig& x) { x.iterations = std::numeric_limits<int64_t>::max(); }},
           {"--rl.group_size", [](RlConfig& x) { x.group_size = 1000000000; }},
           {"--rl.groups_per_step", [](RlConfig& x) { x.groups_per_step = 1000000000; }},
           {"--rl.cpu_threads", [](RlConfig& x) { x.cpu_threads = 100000; }},
           {"--rl.micro_batch", [](RlConfig& x) { x.micro_batch = 1000000000; }},
           {"--rl.shaping", [](RlConfig& x) { x.shaping = std::nan(""); }},
           {"--rl.batch_timeout_ms", [](RlConfig& x) { x.batch_timeout_ms = std::numeric_limits<double>::infinity(); }},
           {"--dist.timeout_s", [](RlConfig& x) { x.dist.timeout_s = std::nan(""); }},
           {"--eval.trials", [](RlConfig& x) { x.eval.trials = std::numeric_limits<int64_t>::max(); }},
           {"--policy.horizon", [](RlConfig& x) { x.policy.horizon = 1000000; }}}) {
    RlConfig bad = c;
    set(bad);
    EXPECT_NE(test::error_of([&] { validate(bad); }, ErrorKind::kInvalidArgument).find(flag), std::string::npos) << flag;
  }
  c.placement = "ring";
  EXPECT_NE(test::error_of([&] { validate(c); }, ErrorKind::kInvalidArgument).find("--rl.placement"), std::string::npos);
  c.placement = "split";
  c.camera_size = 4;
  EXPECT_NE(test::error_of([&] { validate(c); }, ErrorKind::kInvalidArgument).find("--rl.camera_size"), std::string::npos);
  c.camera_size = 128;
  c.eval.trials = 0;
  EXPECT_NE(test::error_of([&] { validate(c); }, ErrorKind::kInvalidArgument).find("--eval.trials"), std::string::npos);
  c.eval.trials = 10;
  c.eval_freq = -1;
  EXPECT_NE(test::error_of([&] { validate(c); }, ErrorKind::kInvalidArgument).find("--eval_freq"), std::string::npos);
  c.eval_freq = 5;
  validate(c);
  auto back = rl_config_from_json(to_json(c), "rl_config.json");
  EXPECT_EQ(to_json(back), to_json(c));
  EXPECT_NE(test::error_of([&] { rl_config_from_json({{"rl_mode", 1}}, "f.json"); }, ErrorKind::kInvalidArgument).find("rl_mode"),
            std::string::npos);
}

// `ember rl`'s flags come from the one schema: names, types, choices, repeats, --help, the JSON
// sections, and the optimizer's renamed flags named with their new names.
TEST(RlConfig, FlagsParseThroughTheSchema) {
  auto c = parse_rl_flags({"--policy.preset=tiny", "--output_dir", "/tmp/rl_flags", "--task", "reach_red", "--task=push_cube",
                           "--resume", "--rl.mode=sync", "--optimizer.lr", "3e-5", "--optimizer.betas=[0.8,0.9]", "--eval.trials=7",
                           "--dist.timeout_s=30"});
  EXPECT_EQ(c.policy.preset, "tiny");
  EXPECT_EQ(c.tasks, (std::vector<std::string>{"reach_red", "push_cube"}));
  EXPECT_TRUE(c.resume);
  EXPECT_EQ(c.mode, "sync");
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 3e-5);
  EXPECT_DOUBLE_EQ(c.optimizer.betas[0], 0.8);
  EXPECT_EQ(c.eval.trials, 7);
  EXPECT_DOUBLE_EQ(c.dist.timeout_s, 30);
  EXPECT_DOUBLE_EQ(RlConfig{}.optimizer.weight_decay, 0.01);  // πRL's, not ember train's default
  auto j = to_json(c);
  EXPECT_EQ(j.at("rl").at("mode"), "sync");
  EXPECT_EQ(j.at("optimizer").at("lr"), 3e-5);
  EXPECT_EQ(to_json(rl_config_from_json(j, "rl_config.json")), j);
  auto error = [](std::vector<std::string> args) {
    args.insert(args.end(), {"--policy.preset=tiny", "--output_dir=/tmp/rl_flags"});
    return test::error_of([&] { parse_rl_flags(args); }, ErrorKind::kInvalidArgument);
  };
  EXPECT_NE(error({"--rl.lr=1e-4"}).find("now --optimizer.lr"), std::string::npos);
  EXPECT_NE(error({"--rl.epoch=2"}).find("did you mean --rl.epochs?"), std::string::npos);
  EXPECT_NE(error({"--rl.epochs=two"}).find("--rl.epochs: expected an integer, got 'two'"), std::string::npos);
  EXPECT_NE(error({"--rl.algo=a2c"}).find("expected one of grpo|ppo"), std::string::npos);
  EXPECT_NE(error({"--rl.epochs=0"}).find("--rl.epochs"), std::string::npos);  // validated
  EXPECT_NE(error({"stray"}).find("unexpected argument 'stray'"), std::string::npos);
  const std::string help = rl_flags_help();
  EXPECT_NE(help.find("  --optimizer.lr FLOAT (default 0.0)  "), std::string::npos) << help;
  EXPECT_NE(help.find("  --rl.mode auto|async|sync (default auto)  "), std::string::npos) << help;
}

// A resumed run compares its sampler with the saved config's, in today's sections or in the
// flat files written before the schema.
TEST(RlConfig, SavedFieldsReadBothLayouts) {
  RlConfig c;
  c.noise_method = "every_step";
  const auto now = nlohmann::json(to_json(c));
  ASSERT_NE(saved_rl_field(now, "rl.noise_method"), nullptr);
  EXPECT_EQ(*saved_rl_field(now, "rl.noise_method"), "every_step");
  const nlohmann::json flat{{"noise_method", "sde"}, {"denoise_steps", 4}, {"lr", 1e-4}};
  EXPECT_EQ(*saved_rl_field(flat, "rl.noise_method"), "sde");
  EXPECT_EQ(*saved_rl_field(flat, "rl.denoise_steps"), 4);
  EXPECT_EQ(saved_rl_field(flat, "rl.train"), nullptr);  // before the flag
}

}  // namespace
}  // namespace ember::rl
