// Data-parallel training on c10d's Gloo over loopback, the ranks as threads of this process
// (each with its own TCPStore client and process group; rank 0 serves the store):
// - 2 ranks give the same summed gradients and, after K steps, the same weights as one process
//   on the union of their batches (replicated AdamW and ZeRO-1);
// - the trainer's checkpoints resume 2 -> 1 and 1 -> 2 ranks covering every sample of the epoch
//   exactly once;
// - bucketing, shard ownership and the rank-naming failure of a collective.
#include <gtest/gtest.h>

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>

#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "ember/core/error.h"
#include "ember/data/dataset.h"
#include "ember/data/sampler.h"
#include "ember/data/shard_pack.h"
#include "ember/dist/process_group.h"
#include "ember/model/pi05.h"
#include "ember/model/tokenizer.h"
#include "ember/model/weights.h"
#include "ember/train/checkpoint_dir.h"
#include "ember/train/cuda_setup.h"
#include "ember/train/optimizer.h"
#include "ember/model/processor.h"
#include "ember/train/trainer.h"
#include "ember/train/zero_adamw.h"
#include "ranks_util.h"
#include "shard_fixture.h"
#include "test_util.h"

namespace ember::dist {
namespace {

namespace fs = std::filesystem;
using test::run_ranks;
using train::Collectives;
const std::string kFixture = std::string(EMBER_TEST_DATA) + "/lerobot_v3_0";

TEST(DistBuckets, SplitBySizeAndDtype) {
  std::vector<at::Tensor> t = {at::zeros({10}), at::zeros({10}), at::zeros({100}), at::zeros({5}, at::kDouble), at::zeros({1})};
  auto b = make_buckets(t, 20 * 4);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0], (std::vector<size_t>{0, 1}));
  EXPECT_EQ(b[1], (std::vector<size_t>{2}));  // larger than a bucket: alone
  EXPECT_EQ(b[2], (std::vector<size_t>{3}));  // another dtype
  EXPECT_EQ(b[3], (std::vector<size_t>{4}));
}

TEST(DistShards, ContiguousAndBalanced) {
  auto o = train::shard_owners({100, 100, 100, 100}, 2);
  EXPECT_EQ(o, (std::vector<int>{0, 0, 1, 1}));
  o = train::shard_owners({1000, 1, 1, 1}, 2);
  EXPECT_EQ(o, (std::vector<int>{0, 1, 1, 1}));
  o = train::shard_owners({5}, 3);
  EXPECT_EQ(o, (std::vector<int>{1}));
}

TEST(DistCollectives, AllReduceBroadcastBarrierOverLoopback) {
  run_ranks(2, [](int rank, std::shared_ptr<Collectives> c) {
    EXPECT_EQ(c->world_size(), 2);
    // more than one bucket, mixed dtypes, a non-contiguous tensor
    std::vector<at::Tensor> t = {at::full({3 << 20}, float(rank + 1)), at::full({7}, double(rank + 1), at::kDouble),
                                 at::full({4, 6}, float(rank + 1)).t()};
    c->all_reduce_sum(t);
    EXPECT_TRUE(at::all(t[0] == 3).item<bool>());
    EXPECT_TRUE(at::all(t[1] == 3).item<bool>());
    EXPECT_TRUE(at::all(t[2] == 3).item<bool>());
    EXPECT_EQ(c->all_reduce_sum(0.5 + rank), 2.0);
    std::vector<at::Tensor> b = {at::full({5}, float(rank)), at::full({2, 2}, float(rank * 10))};
    c->broadcast(b, 1);
    EXPECT_TRUE(at::all(b[0] == 1).item<bool>());
    EXPECT_TRUE(at::all(b[1] == 10).item<bool>());
    c->barrier();
  });
}

// --dist.reduce_dtype=bf16: the gradient buckets travel as bf16 and come back into the fp32
// gradients; other all-reduces stay exact.
TEST(DistCollectives, Bf16GradientsAreSummedAsBf16Copies) {
  run_ranks(
      2,
      [](int rank, std::shared_ptr<Collectives> c) {
        // 1 + 2^-12 is not a bf16 value (8 significant bits): a bf16 sum rounds it away
        const float fine = 1.0f + 1.0f / 4096;
        std::vector<at::Tensor> params = {at::zeros({1000}).requires_grad_(), at::zeros({3, 5}).requires_grad_()};
        c->attach_gradients(params);
        c->arm_gradient_sync();
        auto loss = (params[0] * fine * float(rank + 1)).sum() + (params[1] * fine).sum();
        loss.backward();
        std::vector<at::Tensor> grads = {params[0].grad(), params[1].grad()};
        c->reduce_gradients(grads);
        for (const auto& g : grads) EXPECT_EQ(g.scalar_type(), at::kFloat);
        // exact fp32 sums would be 3 * fine and 2 * fine; bf16 rounds fine to 1 before summing
        EXPECT_TRUE(at::all(params[0].grad() == 3.0f).item<bool>()) << params[0].grad()[0].item<float>();
        EXPECT_TRUE(at::all(params[1].grad() == 2.0f).item<bool>()) << params[1].grad()[0][0].item<float>();
        std::vector<at::Tensor> exact = {at::full({4}, fine)};
        c->all_reduce_sum(exact);
        EXPECT_TRUE(at::all(exact[0] == 2 * fine).item<bool>());
      },
      std::chrono::seconds(30), /*bf16_gradients=*/true);
}

TEST(DistCollectives, DeadRankIsNamedWithinTheTimeout) {
  auto t0 = std::chrono::steady_clock::now();
  std::string message;
  run_ranks(
      2,
      [&](int rank, std::shared_ptr<Collectives> c) {
        c->barrier();
        if (rank == 1) return;  // rank 1 "dies": it never joins the next collective
        try {
          c->all_reduce_sum(1.0);
        } catch (const Error& e) {
          message = e.what();
        }
      },
      std::chrono::seconds(3));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("error after %.1f s: %s\n", took, message.c_str());
  EXPECT_NE(message.find("rank 1 (at collective #1) never reached it"), std::string::npos) << message;
  EXPECT_LT(took, 15.0);
}

// The fixture's tiny policy, its data, and a step that draws each sample's noise and time from
// its frame index (so any split of a batch over ranks sees the same noise per sample).
struct Fixture {
  data::Metadata meta = data::Dataset(kFixture, {}).meta();
  model::Tokenizer tokenizer = model::train_tokenizer(model::tokenizer_training_texts(meta), {.vocab_size = 512});
  model::PolicyShape shape = [this] {
    auto s = model::preset_shape("tiny");
    s.horizon = 10;
    s.vision.image_size = 32;
    s.vocab = tokenizer.vocab_size();
    return s;
  }();
  model::SampleBuilder builder{model::feature_spec(meta, shape), shape, tokenizer};
  data::Dataset dataset{kFixture, builder.dataset_options()};
  data::FrameSampler sampler{dataset.meta().episodes, data::SamplerOptions{}};

  model::Pi05Policy make_policy() const {
    at::manual_seed(7);
    return model::Pi05Policy(shape);
  }

  // One step's loss gradients (not yet reduced), this rank's share of global batch B.
  void backward(model::Pi05Policy& policy, const data::LoaderPosition& pos, int64_t global_batch, int rank, int world,
                Collectives* c, int64_t step, data::LoaderPosition* next) const {
    auto share = sampler.next_batch(pos, global_batch, rank, world);
    *next = share.next;
    std::vector<model::PolicySample> samples;
    for (int64_t f : share.frames) samples.push_back(builder.build(dataset.get(f)));
    std::vector<const model::PolicySample*> ptrs;
    for (auto& s : samples) ptrs.push_back(&s);
    auto in = model::collate(ptrs, shape, model::AttentionBackend::kVarlen);
    std::vector<at::Tensor> noise, time;
    for (int64_t f : share.frames) {
      auto g = at::make_generator<at::CPUGeneratorImpl>(uint64_t(step * 1000003 + f));
      noise.push_back(at::randn({shape.horizon, in.actions.size(2)}, g));
      time.push_back(at::rand({1}, g) * 0.998 + 0.001);
    }
    double count = in.action_mask.sum().item<double>();
    double global = c ? c->all_reduce_sum(count) : count;
    auto out = policy->loss(in, at::stack(noise), at::cat(time));
    (out.loss_sum / global).backward();
  }
};

const Fixture& fixture() {
  static Fixture f;
  return f;
}

// The fixture's cameras are videos: builds without FFmpeg (GPU nodes) cannot decode them.
bool can_decode_fixture() {
  try {
    fixture().dataset.get(0);
    return true;
  } catch (const Error& e) {
    if (std::string(e.what()).find("built without video support") == std::string::npos) throw;
    return false;
  }
}
#define SKIP_WITHOUT_VIDEO() \
  if (!can_decode_fixture()) GTEST_SKIP() << "ember was built without FFmpeg: the fixture's videos cannot be decoded"

using Weights = std::map<std::string, at::Tensor>;

// K steps of `world` ranks (threads); returns rank 0's weights, first-step gradients, and the
// full optimizer state; checks that every rank ends with the same weights bit for bit.
struct RunResult {
  Weights weights, grads, state;
  int64_t local_state_bytes = 0;
};
RunResult run_steps(int world, int64_t zero, int steps, int64_t global_batch, bool bf16_params = false) {
  const auto& fx = fixture();
  std::vector<RunResult> per_rank(world);
  std::vector<model::Pi05Policy> policies;
  for (int r = 0; r < world; ++r) {
    policies.push_back(fx.make_policy());  // same seed: same weights
    if (bf16_params) model::set_param_dtype(policies.back(), at::kBFloat16);
  }
  auto body = [&](int rank, std::shared_ptr<Collectives> c) {
    auto& policy = policies[rank];
    model::NamedTensors params;
    std::vector<at::Tensor> list;
    for (const auto& p : policy->named_parameters()) params.emplace_back(p.key(), p.value()), list.push_back(p.value());
    auto opt = train::make_optimizer(params, {0.9, 0.95, 1e-3, 0.01}, zero, c);
    data::LoaderPosition pos;
    if (c) c->attach_gradients(list);  // buckets all-reduce during the backward pass
    // ZeRO-1: each gradient is summed onto its owner only; clipping sums the ranks' norms
    Collectives* norm_over = nullptr;
    if (auto* z = dynamic_cast<train::ZeroAdamW*>(opt.get())) {
      EXPECT_TRUE(c->set_gradient_owners(z->owners()));
      norm_over = c.get();
    }
    for (int step = 0; step < steps; ++step) {
      opt->zero_grad();
      if (c) c->arm_gradient_sync();
      {
        train::Bf16Autocast autocast(bf16_params, at::kCPU);  // thread-local: this rank's thread
        fx.backward(policy, pos, global_batch, rank, world, c.get(), step, &pos);
      }
      std::vector<at::Tensor> grads;
      for (auto& p : list) {
        if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
        grads.push_back(p.grad());
      }
      if (c) c->reduce_gradients(grads);
      if (step == 0)
        for (auto& [n, p] : params) {
          if (p.grad().defined()) per_rank[rank].grads[n] = p.grad().clone();
          else EXPECT_TRUE(norm_over) << n << ": no gradient after the all-reduce";
        }
      train::clip_grad_norm(list, 1.0, {}, norm_over);
      opt->step(1e-3);
    }
    if (c) {
      // the tiny policy's gradients fit one bucket per dtype (under ZeRO, per owner: 2); every
      // parameter gets a gradient, so at every step each bucket starts from the hook of its
      // last gradient to arrive, inside the backward pass
      auto stats = grad_sync_stats(*c);
      EXPECT_EQ(stats.syncs, steps);
      EXPECT_EQ(stats.buckets, steps * (norm_over ? world : 1) * (bf16_params ? 2 : 1));
      EXPECT_EQ(stats.launched_in_backward, stats.buckets);
      // under ZeRO this rank received the sums of its own shard only
      if (norm_over) {
        EXPECT_LT(per_rank[rank].grads.size(), params.size());
      }
    }
    for (auto& [n, p] : params) per_rank[rank].weights[n] = p.detach().clone();
    for (auto& [n, t] : opt->state()) per_rank[rank].state[n] = t.clone();
    per_rank[rank].local_state_bytes = opt->local_state_bytes();
  };
  at::set_num_threads(1);
  if (world == 1) {
    body(0, nullptr);
  } else {
    run_ranks(world, body);
  }
  for (int r = 1; r < world; ++r)
    for (auto& [n, w] : per_rank[0].weights) EXPECT_TRUE(at::equal(w, per_rank[r].weights.at(n))) << "rank " << r << " " << n;
  // under ZeRO each rank holds the summed gradients of its own parameters only: together, all
  for (int r = 1; r < world; ++r)
    for (auto& [n, g] : per_rank[r].grads) per_rank[0].grads.emplace(n, g);
  return per_rank[0];
}

void expect_close(const Weights& a, const Weights& b, double rtol, double atol, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  double worst = 0;
  std::string worst_name;
  for (const auto& [n, x] : a) {
    auto y = b.at(n);
    double err = ((x - y).abs() - rtol * y.abs()).max().item<double>();
    if (err > worst) worst = err, worst_name = n;
  }
  std::printf("%s: worst excess over rtol %.0e: %.3g (%s)\n", what, rtol, worst, worst_name.c_str());
  EXPECT_LE(worst, atol) << what << ": " << worst_name;
}

void expect_same_as_one_process(int64_t zero) {
  const int kSteps = 4;
  auto one = run_steps(1, 0, kSteps, 8);
  // the steps moved the weights (so agreeing is not trivial)
  double moved = 0;
  for (const auto& p : fixture().make_policy()->named_parameters())
    moved = std::max(moved, (p.value() - one.weights.at(p.key())).abs().max().item<double>());
  EXPECT_GT(moved, 1e-3);
  auto two = run_steps(2, zero, kSteps, 8);
  expect_close(two.grads, one.grads, 1e-4, 1e-7, "first-step gradients");
  expect_close(two.weights, one.weights, 1e-4, 1e-6, "weights after 4 steps");
  expect_close(two.state, one.state, 1e-3, 1e-7, "optimizer state");
  if (zero) {
    std::printf("optimizer state on rank 0: %lld bytes sharded vs %lld replicated\n", (long long)two.local_state_bytes,
                (long long)one.local_state_bytes);
    EXPECT_LT(two.local_state_bytes, one.local_state_bytes * 3 / 4);
  }
}

// bf16 parameters (--policy.param_dtype=bf16): their gradients are summed as bf16 buckets
// beside the fp32 norms' buckets; the ranks stay identical and agree with one process within
// bf16's resolution.
TEST(DistTrain, Bf16ParametersMatchOneProcess) {
  SKIP_WITHOUT_VIDEO();
  auto one = run_steps(1, 0, 3, 8, /*bf16_params=*/true);
  auto two = run_steps(2, 0, 3, 8, /*bf16_params=*/true);
  int bf16 = 0;
  for (const auto& [n, g] : two.grads) {
    EXPECT_EQ(g.scalar_type(), one.weights.at(n).scalar_type()) << n;
    bf16 += g.scalar_type() == at::kBFloat16;
  }
  EXPECT_GT(bf16, 0);
  auto as_float = [](Weights w) {
    for (auto& [n, t] : w) t = t.to(at::kFloat);
    return w;
  };
  expect_close(as_float(two.grads), as_float(one.grads), 2e-2, 5e-4, "bf16: first-step gradients");
  expect_close(as_float(two.weights), as_float(one.weights), 1e-2, 1e-4, "bf16: weights after 3 steps");
}

TEST(DistTrain, TwoRanksMatchOneProcessOnTheUnionOfTheirBatches) {
  SKIP_WITHOUT_VIDEO();
  expect_same_as_one_process(0);
}
TEST(DistTrain, ZeroOneMatchesOneProcess) {
  SKIP_WITHOUT_VIDEO();
  expect_same_as_one_process(1);
}

// ---- the trainer: elastic resume ----

train::TrainConfig tiny_config(const std::string& out, int64_t steps, int64_t batch, int64_t zero) {
  auto c = train::parse_train_flags({"--dataset.root=" + kFixture, "--output_dir=" + out, "--device=cpu",
                                     "--steps=" + std::to_string(steps), "--batch_size=" + std::to_string(batch),
                                     "--optimizer.lr=1e-3", "--policy.horizon=10", "--dataset.image_size=32", "--num_workers=1",
                                     "--log_freq=1", "--save_freq=100000", "--dataset.episodes=[0]",
                                     "--dist.zero=" + std::to_string(zero)});
  return c;
}

// Runs the trainer on `world` ranks (threads) until `steps`.
void train_on(int world, const train::TrainConfig& config) {
  train::TrainerHooks hooks;
  hooks.quiet = true;
  if (world == 1) {
    train::train(config, hooks);
    return;
  }
  run_ranks(world, [&](int, std::shared_ptr<Collectives> c) {
    auto h = hooks;
    h.collectives = c;
    train::train(config, h);
  });
}

nlohmann::json trainer_state(const std::string& out) {
  auto latest = train::find_latest_checkpoint(out);
  EXPECT_TRUE(latest);
  std::ifstream in(latest->dir / "trainer_state.json");
  return nlohmann::json::parse(in);
}

// Frames of epoch 0 read by `steps` steps of `world` ranks from `pos` (every rank's share).
void read_frames(const data::FrameSampler& sampler, data::LoaderPosition& pos, int64_t steps, int64_t batch, int world,
                 std::map<int64_t, int>& seen) {
  for (int64_t s = 0; s < steps; ++s) {
    data::LoaderPosition next;
    for (int r = 0; r < world; ++r) {
      auto share = sampler.next_batch(pos, batch * world, r, world);
      if (pos.epoch == 0 && pos.consumed < sampler.size())
        for (int64_t f : share.frames) seen[f]++;
      next = share.next;
    }
    pos = next;
  }
}

// Segment 1 on world_a ranks, resumed on world_b ranks to the end of the first epoch; every
// eligible frame of epoch 0 read exactly once, and the checkpoints' positions are where the
// sampler says the steps end.
void expect_elastic(int world_a, int world_b, int64_t zero) {
  test::TempDir dir;
  const std::string out = dir.path() + "/run";
  data::SamplerOptions so;  // as the trainer makes it from tiny_config
  so.seed = 1000;
  so.episodes = {0};
  data::FrameSampler sampler(fixture().dataset.meta().episodes, so);
  const int64_t batch = 4;
  const int64_t steps_a = 2;
  // steps for the rest of the epoch on world_b ranks
  int64_t left = sampler.size() - steps_a * batch * world_a;
  ASSERT_GT(left, 0) << "the fixture's episode 0 is too short";
  const int64_t steps_b = (left + batch * world_b - 1) / (batch * world_b);

  train_on(world_a, tiny_config(out, steps_a, batch, zero));
  auto s1 = trainer_state(out);
  EXPECT_EQ(s1["world_size"], world_a);
  auto resumed = tiny_config(out, steps_a + steps_b, batch, zero);
  resumed.resume = true;
  train_on(world_b, resumed);
  auto s2 = trainer_state(out);
  EXPECT_EQ(s2["step"], steps_a + steps_b);

  std::map<int64_t, int> seen;
  data::LoaderPosition pos;
  read_frames(sampler, pos, steps_a, batch, world_a, seen);
  EXPECT_EQ(pos, s1["loader"].get<data::LoaderPosition>());
  read_frames(sampler, pos, steps_b, batch, world_b, seen);
  EXPECT_EQ(pos, s2["loader"].get<data::LoaderPosition>());
  // the last checkpoint holds the full optimizer state (gathered under ZeRO-1)
  auto latest = train::find_latest_checkpoint(out);
  auto state = model::load_tensors((latest->dir / "optimizer.safetensors").string());
  auto weights = model::load_tensors((latest->dir / "model.safetensors").string());
  EXPECT_EQ(state.size(), 3 * weights.size());
  EXPECT_EQ(int64_t(seen.size()), sampler.size());
  for (int64_t f : sampler.eligible()) EXPECT_EQ(seen[f], 1) << "frame " << f;
}

TEST(DistElastic, TwoRanksToOneCoversTheEpochOnce) {
  SKIP_WITHOUT_VIDEO();
  expect_elastic(2, 1, 0);
}
TEST(DistElastic, OneRankToTwoWithZeroCoversTheEpochOnce) {
  SKIP_WITHOUT_VIDEO();
  expect_elastic(1, 2, 1);
}

// On training shards (the owned-shard order): 2 ranks for 2 steps, resumed on 3 to the end of
// epoch 0. The checkpoints hold the sampler's layout segments, and the resumed stretch reads
// every frame the first did not, none that it did.
TEST(DistElastic, ShardsTwoRanksToThreeReadEachUnreadFrameOnce) {
  test::TempDir dir;
  test::write_stripes_dataset(dir.path() + "/src", {9, 12, 7, 10, 8, 11});
  const std::string shards = dir.path() + "/shards", out = dir.path() + "/run";
  auto index = data::pack_shards(dir.path() + "/src", shards, test::pack_options(32, 0.01));
  ASSERT_EQ(index.shards.size(), 6u);
  auto config = [&](int64_t steps) {
    return train::parse_train_flags({"--dataset.root=" + shards, "--output_dir=" + out, "--device=cpu", "--steps=" + std::to_string(steps),
                                     "--batch_size=4", "--optimizer.lr=1e-3", "--policy.horizon=4", "--dataset.image_size=32",
                                     "--num_workers=1", "--log_freq=1", "--save_freq=100000", "--dataset.shard_window=2"});
  };
  data::SamplerOptions so;  // as the trainer makes it
  so.seed = uint64_t(config(1).seed);
  so.shard_starts = index.starts();
  so.shard_window = 2;
  data::FrameSampler sampler(data::load_metadata(shards).episodes, so);
  // what the two stretches read, by the sampler
  data::LoaderPosition pos;
  std::map<int64_t, int> first, second;
  auto step = [&](int world, std::map<int64_t, int>& seen) {
    data::LoaderPosition next;
    for (int r = 0; r < world; ++r) {
      auto share = sampler.next_batch(pos, 4 * world, r, world);
      for (int64_t f : share.frames) seen[f]++;
      next = share.next;
    }
    pos = next;
  };
  step(2, first), step(2, first);
  const data::LoaderPosition after_first = pos;
  int64_t steps_b = 0;
  while (pos.epoch == 0) step(3, second), ++steps_b;

  train_on(2, config(2));
  EXPECT_EQ(trainer_state(out)["loader"].get<data::LoaderPosition>(), after_first);
  EXPECT_EQ(after_first.layout, (std::vector<data::LayoutSegment>{{2, 4, 2}}));
  auto resumed = config(2 + steps_b);
  resumed.resume = true;
  train_on(3, resumed);
  EXPECT_EQ(trainer_state(out)["loader"].get<data::LoaderPosition>(), (data::LoaderPosition{1, 0, {}}));
  for (auto [f, n] : second) EXPECT_FALSE(first.count(f)) << "frame " << f << " read again after the resume";
  for (int64_t f : sampler.eligible()) EXPECT_TRUE(first.count(f) || second.count(f)) << "frame " << f << " never read";
}

}  // namespace
}  // namespace ember::dist
