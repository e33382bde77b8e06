// Packer: budget, coverage and order of pack(), and fixed-size batches.
#include <gtest/gtest.h>

#include <random>

#include "ember/core/error.h"
#include "ember/data/packer.h"

namespace ember::data {
namespace {

std::vector<PackSample> random_samples(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> cameras(1, 3), prompt(5, 48);
  std::vector<PackSample> out;
  for (int i = 0; i < n; ++i) out.push_back({100 + i, int32_t(cameras(rng) * 16 + prompt(rng)), 10});
  return out;
}

void expect_valid_packing(const std::vector<PackSample>& samples, const std::vector<PackBatch>& batches,
                          int64_t budget, int64_t window) {
  std::vector<int> seen(samples.size(), 0);
  int64_t prev_window = 0;
  int64_t prev_first = -1;
  for (const PackBatch& b : batches) {
    ASSERT_FALSE(b.empty());
    int64_t tokens = 0;
    for (size_t j = 0; j < b.size(); ++j) {
      tokens += samples[size_t(b[j])].length();
      seen[size_t(b[j])] += 1;
      if (j > 0) {
        EXPECT_LT(b[j - 1], b[j]);  // sampler's order inside a batch
      }
      EXPECT_EQ(b[j] / window, b[0] / window) << "batch mixes windows";
    }
    EXPECT_LE(tokens, budget);
    EXPECT_GE(b[0] / window, prev_window) << "windows out of order";
    if (b[0] / window == prev_window) {
      EXPECT_GT(b[0], prev_first);
    }
    prev_window = b[0] / window;
    prev_first = b[0];
  }
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << "sample " << i;
}

TEST(Pack, RespectsBudgetAndCoversEverySampleOnceInWindows) {
  const auto samples = random_samples(500, 7);
  for (int64_t window : {1, 8, 64, 500}) {
    const auto batches = pack(samples, 512, {.window = window});
    expect_valid_packing(samples, batches, 512, window);
  }
}

TEST(Pack, FirstFitDecreasingByHand) {
  // budget 10; window of 4: lengths 3, 7, 5, 5 -> FFD: 7 -> bin0, 5 -> bin1, 5 -> bin1, 3 -> bin0
  std::vector<PackSample> s = {{0, 2, 1}, {1, 5, 2}, {2, 3, 2}, {3, 4, 1}, {4, 9, 1}};
  const auto batches = pack(s, 10, {.window = 4});
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0], (PackBatch{0, 1}));
  EXPECT_EQ(batches[1], (PackBatch{2, 3}));
  EXPECT_EQ(batches[2], (PackBatch{4}));  // the next window, never mixed with the first
}

TEST(Pack, MaxSamplesPerBatch) {
  std::vector<PackSample> s(7, PackSample{0, 1, 1});
  const auto batches = pack(s, 100, {.window = 0, .max_samples_per_batch = 3});
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0], (PackBatch{0, 1, 2}));
  EXPECT_EQ(batches[2], (PackBatch{6}));
}

TEST(Pack, Deterministic) {
  const auto samples = random_samples(300, 11);
  EXPECT_EQ(pack(samples, 400, {.window = 32}), pack(samples, 400, {.window = 32}));
}

TEST(Pack, EmptyInput) { EXPECT_TRUE(pack({}, 10).empty()); }

TEST(Pack, TooLongSampleIsAnError) {
  std::vector<PackSample> s = {{0, 3, 2}, {42, 60, 10}};
  try {
    pack(s, 64);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("sample 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("id 42"), std::string::npos) << msg;
    EXPECT_NE(msg.find("prefix 60 + suffix 10"), std::string::npos) << msg;
    EXPECT_NE(msg.find("70 tokens"), std::string::npos) << msg;
    EXPECT_NE(msg.find("64"), std::string::npos) << msg;
  }
}

TEST(Pack, BadArguments) {
  std::vector<PackSample> s = {{0, 3, 2}};
  EXPECT_THROW(pack(s, 0), Error);
  EXPECT_THROW(pack(s, 10, {.window = -1}), Error);
  std::vector<PackSample> empty_sample = {{0, 0, 0}};
  EXPECT_THROW(pack(empty_sample, 10), Error);
  EXPECT_THROW(fixed_size_batches(3, 0), Error);
}

TEST(FixedSizeBatches, LastIsShorter) {
  const auto b = fixed_size_batches(5, 2);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[2], (PackBatch{4}));
}

}  // namespace
}  // namespace ember::data
