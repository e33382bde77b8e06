// The owned-shard order (data/shard_order.h): each rank reads only the whole shards dealt to
// it, every rank takes the same number of steps, and a resume on the same world size continues
// bit-exactly while one on another world size reads each unread sample once and nothing read.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "ember/core/error.h"
#include "ember/data/sampler.h"

namespace ember::data {
namespace {

// 14 episodes laid end to end, one shard each (of 9-40 frames: uneven), window 2.
struct Fixture {
  std::vector<Episode> episodes;
  SamplerOptions options;
  Fixture(bool drop_last = false, int64_t window = 2) {
    const std::vector<int64_t> lengths = {23, 40, 17, 31, 9, 26, 33, 12, 38, 21, 15, 29, 35, 19};
    int64_t at = 0;
    for (size_t e = 0; e < lengths.size(); ++e) {
      Episode ep;
      ep.index = int64_t(e), ep.length = lengths[e], ep.from_index = at, ep.to_index = at += lengths[e];
      options.shard_starts.push_back(ep.from_index);
      episodes.push_back(ep);
    }
    options.seed = 11;
    options.shard_window = window;
    options.drop_last_batch = drop_last;
    options.drop_n_last_frames = 2;
  }
  int shard_of(int64_t f) const {
    return int(std::upper_bound(options.shard_starts.begin(), options.shard_starts.end(), f) - options.shard_starts.begin()) - 1;
  }
};

// Every rank's frames of each step from `at` until the epoch ends (or `steps` steps), appended
// to frames[rank]; returns the position after the last step.
LoaderPosition run(const FrameSampler& s, LoaderPosition at, int64_t batch, int world,
                   std::vector<std::vector<int64_t>>& frames, int64_t steps = -1) {
  frames.resize(size_t(world));
  const int64_t epoch = at.epoch;
  for (int64_t k = 0; steps < 0 || k < steps; ++k) {
    LoaderPosition next;
    for (int r = 0; r < world; ++r) {
      auto b = s.next_batch(at, batch * world, r, world);
      EXPECT_EQ(int64_t(b.frames.size()), batch);
      if (r > 0) {
        EXPECT_EQ(b.next, next) << "ranks disagree on the next position";
      }
      next = b.next;
      frames[size_t(r)].insert(frames[size_t(r)].end(), b.frames.begin(), b.frames.end());
    }
    at = next;
    if (at.epoch != epoch) break;
  }
  return at;
}

// through the checkpoint's JSON, as a resume reads it
LoaderPosition saved(const LoaderPosition& p) {
  nlohmann::json j = p;
  return nlohmann::json::parse(j.dump()).get<LoaderPosition>();
}

std::map<int64_t, int> counts(const std::vector<std::vector<int64_t>>& frames) {
  std::map<int64_t, int> c;
  for (const auto& f : frames)
    for (int64_t x : f) ++c[x];
  return c;
}

TEST(OwnedShardOrder, RanksReadDisjointWholeShardsThatCoverTheEpoch) {
  Fixture fx;
  FrameSampler s(fx.episodes, fx.options);
  for (int world : {1, 2, 4, 8}) {
    std::vector<std::vector<int64_t>> frames;
    LoaderPosition end = run(s, {}, 5, world, frames);
    EXPECT_EQ(end, (LoaderPosition{1, 0, {}}));
    // each rank touches only the shards dealt to it, and those are disjoint across ranks
    std::set<int> all;
    for (int r = 0; r < world; ++r) {
      std::set<int> touched;
      for (int64_t f : frames[size_t(r)]) touched.insert(fx.shard_of(f));
      for (int sh : touched) EXPECT_TRUE(all.insert(sh).second) << "shard " << sh << " read by two ranks, world " << world;
    }
    // every eligible frame read; any repeat is padding, and only the padding is repeated
    auto c = counts(frames);
    std::vector<int64_t> seen;
    int64_t repeats = 0;
    for (auto [f, n] : c) seen.push_back(f), repeats += n - 1;
    EXPECT_EQ(seen, s.eligible()) << "world " << world;
    int64_t total = 0;
    for (const auto& f : frames) total += int64_t(f.size());
    EXPECT_EQ(total - s.size(), repeats);
  }
}

TEST(OwnedShardOrder, EveryRankTakesTheSameStepsPaddedOrDropped) {
  for (bool drop : {false, true}) {
    Fixture fx(drop);
    FrameSampler s(fx.episodes, fx.options);
    const int world = 4;
    const int64_t b = 6;
    std::vector<std::vector<int64_t>> frames;
    run(s, {}, b, world, frames);
    std::vector<int64_t> owned(world, 0);  // each rank's eligible frames
    for (int r = 0; r < world; ++r) {
      std::set<int> shards;
      for (int64_t f : frames[size_t(r)]) shards.insert(fx.shard_of(f));
      for (int64_t f : s.eligible()) owned[size_t(r)] += shards.count(fx.shard_of(f));
    }
    const auto [lo, hi] = std::minmax_element(owned.begin(), owned.end());
    const int64_t steps = drop ? *lo / b : (*hi + b - 1) / b;
    for (int r = 0; r < world; ++r) EXPECT_EQ(int64_t(frames[size_t(r)].size()), steps * b) << "rank " << r << (drop ? " drop" : " pad");
    auto c = counts(frames);
    if (drop) {
      for (auto [f, n] : c) EXPECT_EQ(n, 1) << "frame " << f << " read twice under drop_last_batch";
    } else {
      EXPECT_EQ(int64_t(c.size()), s.size());
    }
    // the dealing keeps ranks within one shard's frames of each other
    EXPECT_LE(*hi - *lo, 38);
  }
}

TEST(OwnedShardOrder, DeterministicBySeedEpochAndWorld) {
  Fixture fx;
  FrameSampler a(fx.episodes, fx.options), b(fx.episodes, fx.options);
  std::vector<std::vector<int64_t>> fa, fb, other_epoch, other_world;
  run(a, {}, 5, 4, fa);
  run(b, {}, 5, 4, fb);
  EXPECT_EQ(fa, fb);
  run(a, {1, 0, {}}, 5, 4, other_epoch);
  EXPECT_NE(fa, other_epoch);
  run(a, {}, 10, 2, other_world);
  EXPECT_NE(fa[0], other_world[0]);
  Fixture reseeded;
  reseeded.options.seed = 12;
  std::vector<std::vector<int64_t>> fc;
  run(FrameSampler(reseeded.episodes, reseeded.options), {}, 5, 4, fc);
  EXPECT_NE(fa, fc);
  // one rank alone reads the windowed order
  EXPECT_EQ(a.next_batch({}, a.size(), 0, 1).frames, a.order(0));
}

TEST(OwnedShardOrder, ResumeOnTheSameWorldSizeIsBitExact) {
  Fixture fx;
  FrameSampler s(fx.episodes, fx.options);
  std::vector<std::vector<int64_t>> whole, part;
  run(s, {}, 5, 4, whole);
  LoaderPosition at = run(s, {}, 5, 4, part, 7);
  ASSERT_EQ(at.layout.size(), 1u);
  EXPECT_EQ(at.layout[0], (LayoutSegment{4, 5, 7}));
  run(FrameSampler(fx.episodes, fx.options), saved(at), 5, 4, part);
  EXPECT_EQ(part, whole);
}

// Runs `steps[k]` steps on worlds[k] ranks (the last until the epoch ends), resuming through
// JSON between them; checks each stretch reads nothing an earlier one read, and returns all.
std::vector<std::vector<int64_t>> elastic(const Fixture& fx, const std::vector<int>& worlds, const std::vector<int64_t>& steps,
                                          int64_t batch) {
  FrameSampler s(fx.episodes, fx.options);
  std::vector<std::vector<int64_t>> all;
  std::set<int64_t> before;
  LoaderPosition at;
  for (size_t k = 0; k < worlds.size(); ++k) {
    std::vector<std::vector<int64_t>> frames;
    at = saved(run(s, at, batch, worlds[k], frames, k + 1 < worlds.size() ? steps[k] : -1));
    std::set<int64_t> now;
    for (const auto& f : frames) now.insert(f.begin(), f.end());
    for (int64_t f : now) EXPECT_FALSE(before.count(f)) << "frame " << f << " read again after the resume on " << worlds[k] << " ranks";
    before.insert(now.begin(), now.end());
    all.insert(all.end(), frames.begin(), frames.end());
  }
  EXPECT_EQ(at, (LoaderPosition{1, 0, {}})) << "the epoch ends";
  return all;
}

TEST(OwnedShardOrder, ResumeOnAnotherWorldSizeReadsEachUnreadSampleOnce) {
  for (bool drop : {false, true}) {
    Fixture fx(drop);
    FrameSampler s(fx.episodes, fx.options);
    for (auto worlds : std::vector<std::vector<int>>{{4, 3}, {4, 8}, {2, 1}, {4, 3, 2}, {8, 5, 1}}) {
      auto frames = elastic(fx, worlds, {6, 3, 2}, 4);
      auto c = counts(frames);
      if (drop) {
        for (auto [f, n] : c) EXPECT_EQ(n, 1) << "frame " << f;
        // left: at most the final stretch's tails (its parts differ by one frame at most)
        EXPECT_GE(int64_t(c.size()), s.size() - worlds.back() * 5);
      } else {
        EXPECT_EQ(int64_t(c.size()), s.size()) << "every frame read, worlds " << worlds.front() << " then " << worlds[1];
      }
    }
  }
}

TEST(OwnedShardOrder, ChangingOnlyTheBatchIsANewStretchToo) {
  Fixture fx(true);
  FrameSampler s(fx.episodes, fx.options);
  std::vector<std::vector<int64_t>> first, second;
  LoaderPosition at = saved(run(s, {}, 4, 2, first, 3));
  run(s, at, 2, 2, second);  // per-rank batch 4 -> 2
  auto c = counts(first);
  for (auto [f, n] : counts(second)) EXPECT_FALSE(c.count(f)) << "frame " << f << " read again";
}

// What the loader prefetches by: a rank's coming frames, in its reading order, a window ahead.
TEST(OwnedShardOrder, AheadIsWhatTheRankReadsNext) {
  Fixture fx;
  FrameSampler s(fx.episodes, fx.options);
  std::vector<std::vector<int64_t>> frames;
  LoaderPosition at = run(s, {}, 3, 4, frames, 2);
  std::vector<std::vector<int64_t>> rest;
  run(s, at, 3, 4, rest);
  EXPECT_EQ(s.window_frames(), 2 * 38);  // window 2 x the largest shard's 38 eligible frames
  for (int r = 0; r < 4; ++r) {
    auto next = s.ahead(at, 12, r, 4, s.window_frames());
    ASSERT_FALSE(next.empty());
    const size_t n = std::min(next.size(), rest[size_t(r)].size());
    EXPECT_EQ(std::vector<int64_t>(next.begin(), next.begin() + long(n)), std::vector<int64_t>(rest[size_t(r)].begin(), rest[size_t(r)].begin() + long(n)))
        << "rank " << r;
  }
  // the global order has none (its lookahead is the next steps')
  SamplerOptions global = fx.options;
  global.shard_window = 0;
  EXPECT_TRUE(FrameSampler(fx.episodes, global).ahead({}, 12, 0, 4, 100).empty());
}

TEST(OwnedShardOrder, PositionsRoundTripAndBadOnesAreNamed) {
  LoaderPosition p{2, 40, {{4, 5, 3}, {2, 10, 1}}};
  EXPECT_EQ(saved(p), p);
  EXPECT_FALSE(nlohmann::json(LoaderPosition{1, 0, {}}).contains("layout"));
  auto message = [](const char* text) {
    try {
      nlohmann::json::parse(text).get<LoaderPosition>();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(R"({"epoch":0,"consumed":0,"layout":[{"world":0,"batch":5,"steps":1}]})").find("\"layout\"[0]: \"world\" must be >= 1"),
            std::string::npos);
  EXPECT_NE(message(R"({"epoch":0,"consumed":0,"layout":{}})").find("\"layout\" must be an array"), std::string::npos);
  // a finished stretch that claims more steps than it had
  Fixture fx;
  FrameSampler s(fx.episodes, fx.options);
  EXPECT_THROW(s.next_batch({0, 0, {{4, 5, 1000}, {2, 5, 0}}}, 4, 0, 2), Error);
}

TEST(OwnedShardOrder, MoreRanksThanShardsIsAnError) {
  Fixture fx;
  FrameSampler s(fx.episodes, fx.options);
  try {
    s.next_batch({}, 16, 0, 16);
    FAIL() << "16 ranks over 14 shards";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("16 ranks, but only 14 shards"), std::string::npos) << e.what();
  }
}

// What the owned order saves: 8 ranks each read their own shards, where strided shares of one
// windowed order (the order before it) had every rank read nearly every shard.
TEST(OwnedShardOrder, EightRanksReadAnEighthOfTheShards) {
  Fixture fx;
  FrameSampler s(fx.episodes, fx.options);
  const int world = 8;
  std::vector<std::vector<int64_t>> frames;
  run(s, {}, 2, world, frames);
  auto global = s.order(0);  // strided shares of it: rank r reads positions r, r + 8, ...
  int64_t owned_sum = 0, strided_sum = 0;
  for (int r = 0; r < world; ++r) {
    std::set<int> owned, strided;
    for (int64_t f : frames[size_t(r)]) owned.insert(fx.shard_of(f));
    for (size_t p = size_t(r); p < global.size(); p += world) strided.insert(fx.shard_of(global[p]));
    owned_sum += int64_t(owned.size()), strided_sum += int64_t(strided.size());
  }
  std::printf("8 ranks, 14 shards: shards read per rank, owned %.2f, strided %.2f\n", owned_sum / 8.0, strided_sum / 8.0);
  EXPECT_EQ(owned_sum, 14);
  EXPECT_GE(strided_sum, 8 * 12);
}

}  // namespace
}  // namespace ember::data
