// With the prefix frozen (--rl.train expert) the learner encodes each micro-batch's prefix once,
// without gradients, for the trained policy and the reference, and keeps it for the later passes
// over the same chunks (model::PolicyModuleImpl::refresh_prefix, LearnerOptions::reuse_prefix).
// The steps must be the ones that encoding everything again gives.
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>

#include "ember/rl/learner.h"
#include "learner_util.h"

namespace ember::rl {
namespace {

struct OneThread : ::testing::Environment {
  void SetUp() override { at::set_num_threads(1); }
};
const auto* const one_thread = ::testing::AddGlobalTestEnvironment(new OneThread);

double max_difference(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<double>(); }

// Adds noise to the parameters that `prefix` says (true: the prefix's, false: the others).
void perturb(model::PolicyModuleImpl& m, bool prefix) {
  at::NoGradGuard no_grad;
  for (auto& p : m.named_parameters())
    if (m.is_prefix_parameter(p.key()) == prefix) p.value().add_(0.05 * at::randn_like(p.value()));
}

// For every registered type: a prefix encoded by one module serves another whose prefix
// parameters are the same and whose others differ, once refreshed, as that module's own prefix
// does; and it would not serve one whose prefix parameters differ (the prefix matters).
TEST(PrefixReuse, ARefreshedPrefixIsTheModulesOwn) {
  for (const auto& type : model::policy_types()) {
    auto b = tiny_of_type(type, 9, 3);
    const auto& shape = b.shape;
    auto s = samples(shape, 3, 2, 7);
    auto in = inputs(shape, s);
    in.plan = in.plan.with_mask();
    at::NoGradGuard no_grad;
    auto frozen = b.module->encode_prefix(in);
    EXPECT_GT(frozen->bytes(), 0) << type.name;
    auto x = at::randn({3, shape.horizon, shape.max_action_dim});
    auto t = at::full({3}, 0.6);
    const auto start = b.module->prefix_velocity(in, *frozen, x, t);
    at::Device cpu(at::kCPU);

    auto trained = train::copy_module(b, cpu);  // the action expert moved, the prefix not
    trained->eval();
    perturb(*trained, false);
    const auto own = trained->prefix_velocity(in, *trained->encode_prefix(in), x, t);
    EXPECT_GT(max_difference(own, start), 1e-3) << type.name;  // the expert's change shows
    EXPECT_LT(max_difference(trained->prefix_velocity(in, *trained->refresh_prefix(in, frozen), x, t), own), 1e-6) << type.name;

    auto other = train::copy_module(b, cpu);  // the prefix moved: the old prefix is not its own
    other->eval();
    perturb(*other, true);
    const auto other_own = other->prefix_velocity(in, *other->encode_prefix(in), x, t);
    EXPECT_GT(max_difference(other->prefix_velocity(in, *other->refresh_prefix(in, frozen), x, t), other_own), 1e-4) << type.name;
  }
}

// Three passes (the second over the first's chunks, the third over others) of a learner that
// encodes each prefix once and keeps it, against one that encodes it for every call: the same
// losses, KLs and weights. keep: the bytes of prefixes it may keep.
void expect_same_steps(const train::PolicyBundle& b, const FlowNoise& noise, int64_t state_dim, int64_t keep) {
  const std::string what = b.module->type() + ", keep " + std::to_string(keep);
  auto first = groups(*b.module, noise, {{1, 0, 0.5}, {0.2, 0.9, 0.1}}, state_dim);
  auto second = groups(*b.module, noise, {{0, 1, 0.3}}, state_dim);
  at::Device cpu(at::kCPU);
  LearnerOptions o;
  o.noise = noise;
  o.lr = 1e-3;
  o.micro_batch = 4;  // 12 chunks: 3 micro-batches a pass
  o.train_prefix = false;
  o.reuse_prefix = false;
  Learner again(train::copy_module(b, cpu), train::copy_module(b, cpu), cpu, o);
  o.reuse_prefix = true;
  o.prefix_cache_bytes = keep;
  Learner once(train::copy_module(b, cpu), train::copy_module(b, cpu), cpu, o);
  int64_t kept = 0;
  for (const auto* pass : {&first, &first, &second}) {
    for (const auto& g : *pass) again.accumulate(g), once.accumulate(g);
    auto a = again.step(), c = once.step();
    EXPECT_NEAR(a.loss, c.loss, 1e-6 * (1 + std::abs(a.loss))) << what;
    EXPECT_NEAR(a.kl, c.kl, 1e-7) << what;
    EXPECT_NEAR(a.grad_norm, c.grad_norm, 1e-5 * a.grad_norm) << what;
    EXPECT_EQ(again.kept_prefix_bytes(), 0) << what;
    if (pass == &first && kept == 0) kept = once.kept_prefix_bytes();
  }
  if (keep >= (int64_t(1) << 30)) {
    EXPECT_GT(kept, 0) << what;  // the first pass's three micro-batches
  } else {
    EXPECT_LE(once.kept_prefix_bytes(), keep) << what;
  }
  for (size_t i = 0; i < again.params().size(); ++i)
    EXPECT_TRUE(at::allclose(again.params()[i].second, once.params()[i].second, 1e-5, 1e-7)) << what << ": " << again.params()[i].first;
  once.forget_prefixes();
  EXPECT_EQ(once.kept_prefix_bytes(), 0) << what;
}

TEST(PrefixReuse, LearnerStepsAreTheSameWithThePrefixEncodedOnce) {
  const int64_t all = int64_t(1) << 30;
  expect_same_steps(bundle_of(tiny_shape(), 4), FlowNoise{0.5, 7, NoiseMethod::kSde}, 0, all);
  expect_same_steps(bundle_of(tiny_shape(), 4), FlowNoise{0.2, 7, NoiseMethod::kEveryStep}, 0, 0);  // encoded once, none kept
  // GR00T: its state tokens (the action head's) computed again from the shared backbone context
  expect_same_steps(tiny_of_type(model::policy_type("groot"), 9, 5), FlowNoise{0.5, 7, NoiseMethod::kSde}, 7, all);
}

// A bound smaller than the pass's prefixes keeps what fits; the rest is encoded again.
TEST(PrefixReuse, KeepsNoMoreThanItsBound) {
  auto b = bundle_of(tiny_shape(), 4);
  FlowNoise noise{0.5, 7, NoiseMethod::kSde};
  auto gs = groups(*b.module, noise, {{1, 0, 0.5}, {0.2, 0.9, 0.1}});
  at::Device cpu(at::kCPU);
  LearnerOptions o;
  o.noise = noise;
  o.micro_batch = 4;
  o.train_prefix = false;
  o.prefix_cache_bytes = int64_t(1) << 30;
  Learner all(train::copy_module(b, cpu), train::copy_module(b, cpu), cpu, o);
  for (const auto& g : gs) all.accumulate(g);
  all.step();
  const int64_t three = all.kept_prefix_bytes();  // three micro-batches of four chunks
  ASSERT_GT(three, 0);
  o.prefix_cache_bytes = three / 2;
  Learner some(train::copy_module(b, cpu), train::copy_module(b, cpu), cpu, o);
  for (const auto& g : gs) some.accumulate(g);
  some.step();
  EXPECT_GT(some.kept_prefix_bytes(), 0);
  EXPECT_LE(some.kept_prefix_bytes(), three / 2);
  // the whole policy trained: nothing is shared or kept
  o.train_prefix = true;
  Learner whole(train::copy_module(b, cpu), train::copy_module(b, cpu), cpu, o);
  for (const auto& g : gs) whole.accumulate(g);
  whole.step();
  EXPECT_EQ(whole.kept_prefix_bytes(), 0);
}

}  // namespace
}  // namespace ember::rl
