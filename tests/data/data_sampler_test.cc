#include "ember/data/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "ember/core/error.h"

namespace ember::data {
namespace {

// Episodes of the given lengths, laid end to end from global frame 0.
std::vector<Episode> episodes_of(const std::vector<int64_t>& lengths) {
  std::vector<Episode> out;
  int64_t from = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    Episode e;
    e.index = static_cast<int64_t>(i);
    e.length = lengths[i];
    e.from_index = from;
    e.to_index = from + lengths[i];
    from = e.to_index;
    out.push_back(e);
  }
  return out;
}

// Options set by `f` on top of the defaults (designated initialisers trip
// -Wmissing-field-initializers on older GCC).
template <class F>
SamplerOptions opts(F f) {
  SamplerOptions o;
  f(o);
  return o;
}

SamplerOptions seeded(uint64_t seed) {
  return opts([&](SamplerOptions& o) { o.seed = seed; });
}

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<int64_t> iota(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (int64_t i = from; i < to; ++i) v.push_back(i);
  return v;
}

// Runs `steps` global batches on `world` ranks from `pos`, appending every rank's frames in
// global order (position by position) to `out`; returns the final position.
LoaderPosition run(const FrameSampler& s, LoaderPosition pos, int64_t batch, int world,
                   int steps, std::vector<int64_t>& out) {
  for (int step = 0; step < steps; ++step) {
    std::vector<SamplerBatch> shares;
    for (int r = 0; r < world; ++r) shares.push_back(s.next_batch(pos, batch, r, world));
    for (int r = 1; r < world; ++r) EXPECT_EQ(shares[r].next, shares[0].next);
    // interleave the strided shares back into global order
    for (size_t k = 0;; ++k) {
      bool any = false;
      for (int r = 0; r < world; ++r) {
        if (k < shares[r].frames.size()) {
          out.push_back(shares[r].frames[k]);
          any = true;
        }
      }
      if (!any) break;
    }
    pos = shares[0].next;
  }
  return pos;
}

TEST(FrameSampler, DeterministicAcrossInstances) {
  auto eps = episodes_of({10, 7, 12});
  FrameSampler a(eps, seeded(42)), b(eps, seeded(42));
  EXPECT_EQ(a.order(0), b.order(0));
  EXPECT_EQ(a.order(3), b.order(3));
  EXPECT_EQ(a.order(3), a.order(3));
}

TEST(FrameSampler, SeedsAndEpochsDiffer) {
  auto eps = episodes_of({100, 100});
  FrameSampler a(eps, seeded(1)), b(eps, seeded(2));
  EXPECT_NE(a.order(0), b.order(0));
  EXPECT_NE(a.order(0), a.order(1));
  EXPECT_NE(a.order(0), a.eligible());  // shuffled
}

TEST(FrameSampler, NoShuffleIsAscending) {
  FrameSampler s(episodes_of({5, 5}), opts([](SamplerOptions& o) { o.shuffle = false; }));
  EXPECT_EQ(s.order(0), iota(0, 10));
  EXPECT_EQ(s.order(7), iota(0, 10));
}

TEST(FrameSampler, EveryFrameOncePerEpoch) {
  FrameSampler s(episodes_of({10, 7, 12}), seeded(5));
  EXPECT_EQ(s.size(), 29);
  for (int64_t epoch = 0; epoch < 5; ++epoch) EXPECT_EQ(sorted(s.order(epoch)), iota(0, 29));
}

TEST(FrameSampler, DropsFirstAndLastFramesPerEpisode) {
  // episodes [0,10), [10,17), [17,29); drop 1 first, 2 last
  FrameSampler s(episodes_of({10, 7, 12}), opts([](SamplerOptions& o) {
                   o.seed = 3;
                   o.drop_n_first_frames = 1;
                   o.drop_n_last_frames = 2;
                 }));
  std::vector<int64_t> expected;
  for (auto f : iota(1, 8)) expected.push_back(f);
  for (auto f : iota(11, 15)) expected.push_back(f);
  for (auto f : iota(18, 27)) expected.push_back(f);
  EXPECT_EQ(s.eligible(), expected);
  EXPECT_EQ(sorted(s.order(0)), expected);
}

TEST(FrameSampler, EpisodeShorterThanDropContributesNothing) {
  FrameSampler s(episodes_of({3, 10}), opts([](SamplerOptions& o) {
                   o.drop_n_first_frames = 2;
                   o.drop_n_last_frames = 1;
                 }));
  EXPECT_EQ(s.eligible(), iota(5, 12));
}

TEST(FrameSampler, EpisodeSubset) {
  FrameSampler s(episodes_of({10, 7, 12}), opts([](SamplerOptions& o) { o.episodes = {2, 0}; }));
  std::vector<int64_t> expected = iota(0, 10);
  for (auto f : iota(17, 29)) expected.push_back(f);
  EXPECT_EQ(s.eligible(), expected);
}

TEST(FrameSampler, RejectsBadOptions) {
  auto eps = episodes_of({10});
  EXPECT_THROW(FrameSampler(eps, opts([](SamplerOptions& o) { o.episodes = {4}; })), Error);
  EXPECT_THROW(FrameSampler(eps, opts([](SamplerOptions& o) { o.drop_n_first_frames = -1; })),
               Error);
  FrameSampler s(eps);
  EXPECT_THROW(s.next_batch({}, 6, 0, 4), Error);   // 6 not a multiple of 4
  EXPECT_THROW(s.next_batch({}, 4, 4, 4), Error);   // rank out of range
  EXPECT_THROW(s.next_batch({}, 0, 0, 1), Error);
  EXPECT_THROW(s.order(-1), Error);
  FrameSampler empty(eps, opts([](SamplerOptions& o) { o.drop_n_first_frames = 10; }));
  EXPECT_EQ(empty.size(), 0);
  EXPECT_THROW(empty.next_batch({}, 1, 0, 1), Error);
}

TEST(FrameSampler, TwoRanksAreDisjointAndCoverTheBatch) {
  FrameSampler s(episodes_of({10, 7, 12}), seeded(9));
  const auto order = s.order(0);
  auto r0 = s.next_batch({0, 4}, 8, 0, 2);
  auto r1 = s.next_batch({0, 4}, 8, 1, 2);
  EXPECT_EQ(r0.frames, (std::vector<int64_t>{order[4], order[6], order[8], order[10]}));
  EXPECT_EQ(r1.frames, (std::vector<int64_t>{order[5], order[7], order[9], order[11]}));
  EXPECT_EQ(r0.next, (LoaderPosition{0, 12}));
  // a whole epoch on 2 ranks reproduces the global order
  std::vector<int64_t> seen;
  LoaderPosition end = run(s, {}, 8, 2, 4, seen);  // 8+8+8+5
  EXPECT_EQ(seen, order);
  EXPECT_EQ(end, (LoaderPosition{1, 0}));
}

TEST(FrameSampler, PartialLastBatchAndRollover) {
  FrameSampler s(episodes_of({10}), seeded(1));
  auto order0 = s.order(0), order1 = s.order(1);
  auto r0 = s.next_batch({0, 8}, 4, 0, 2);  // positions 8, 9: one each
  auto r1 = s.next_batch({0, 8}, 4, 1, 2);
  EXPECT_EQ(r0.frames, (std::vector<int64_t>{order0[8]}));
  EXPECT_EQ(r1.frames, (std::vector<int64_t>{order0[9]}));
  EXPECT_EQ(r0.next, (LoaderPosition{1, 0}));
  // a position saved at the epoch's end starts the next epoch
  auto rolled = s.next_batch({0, 10}, 2, 0, 1);
  EXPECT_EQ(rolled.frames, (std::vector<int64_t>{order1[0], order1[1]}));
  EXPECT_EQ(rolled.next, (LoaderPosition{1, 2}));
}

TEST(FrameSampler, DropLastBatchSkipsTheRemainder) {
  FrameSampler s(episodes_of({10}), opts([](SamplerOptions& o) {
                   o.seed = 1;
                   o.drop_last_batch = true;
                 }));
  auto b = s.next_batch({0, 8}, 4, 0, 1);
  const auto order1 = s.order(1);
  EXPECT_EQ(b.frames, (std::vector<int64_t>(order1.begin(), order1.begin() + 4)));
  EXPECT_EQ(b.next, (LoaderPosition{1, 4}));
  EXPECT_THROW(s.next_batch({}, 12, 0, 1), Error);
}

TEST(FrameSampler, ElasticResumeCoversTheEpochOnce) {
  FrameSampler s(episodes_of({37, 20, 43}), opts([](SamplerOptions& o) {
                   o.seed = 11;
                   o.drop_n_last_frames = 3;
                 }));
  ASSERT_EQ(s.size(), 91);
  std::vector<int64_t> seen;
  LoaderPosition pos = run(s, {}, 8, 4, 3, seen);  // 4 ranks, 24 samples
  EXPECT_EQ(pos, (LoaderPosition{0, 24}));
  // save and restore through JSON, as a checkpoint does
  pos = nlohmann::json(pos).get<LoaderPosition>();
  pos = run(s, pos, 8, 2, 5, seen);  // 2 ranks, 40 more
  EXPECT_EQ(pos, (LoaderPosition{0, 64}));
  pos = run(s, pos, 8, 1, 4, seen);  // 1 rank: 8+8+8+3 to the end
  EXPECT_EQ(pos, (LoaderPosition{1, 0}));
  EXPECT_EQ(seen, s.order(0));
  EXPECT_EQ(sorted(seen), s.eligible());
}

TEST(LoaderPosition, JsonRoundTrip) {
  LoaderPosition p{3, 12345678901};
  nlohmann::json j = p;
  EXPECT_EQ(j.dump(), R"({"consumed":12345678901,"epoch":3})");
  EXPECT_EQ(nlohmann::json::parse(j.dump()).get<LoaderPosition>(), p);
}

TEST(LoaderPosition, JsonRejectsBadFields) {
  auto parse = [](const char* text) { return nlohmann::json::parse(text).get<LoaderPosition>(); };
  EXPECT_THROW(parse(R"({"epoch": 1})"), Error);
  EXPECT_THROW(parse(R"({"epoch": 1, "consumed": "2"})"), Error);
  EXPECT_THROW(parse(R"({"epoch": -1, "consumed": 2})"), Error);
  EXPECT_THROW(parse("[]"), Error);
}

// Golden values from an independent Python implementation of the documented algorithm
// (splitmix64 from mix64(seed) ^ epoch, rejection draw, Fisher-Yates from the back). A change
// here changes every run's data order: do it only on purpose.
TEST(FrameSampler, GoldenOrderSeed0) {
  FrameSampler small(episodes_of({10, 7, 12}), seeded(0));
  auto o0 = small.order(0), o1 = small.order(1);
  EXPECT_EQ(std::vector<int64_t>(o0.begin(), o0.begin() + 8),
            (std::vector<int64_t>{7, 0, 11, 24, 1, 9, 28, 5}));
  EXPECT_EQ(std::vector<int64_t>(o1.begin(), o1.begin() + 8),
            (std::vector<int64_t>{28, 13, 23, 6, 21, 9, 27, 17}));
  FrameSampler big(episodes_of({1000}), seeded(0));
  auto b0 = big.order(0);
  EXPECT_EQ(std::vector<int64_t>(b0.begin(), b0.begin() + 8),
            (std::vector<int64_t>{501, 996, 135, 909, 733, 285, 707, 923}));
}

}  // namespace
}  // namespace ember::data
