// Packer: budget, coverage and order of pack(); packed layout offsets on hand examples; the
// dense packed mask against per-sample masks and against the padded layout's mask.
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
  EXPECT_THROW(make_packed_layout(s, std::vector<int64_t>{1}), Error);
  EXPECT_THROW(fixed_size_batches(3, 0), Error);
}

TEST(PackedLayout, OffsetsByHand) {
  // two samples: prefix 3 + suffix 2, prefix 1 + suffix 2; batch holds them in order 1, 0
  std::vector<PackSample> s = {{0, 3, 2}, {1, 1, 2}};
  const PackedLayout l = make_packed_layout(s, std::vector<int64_t>{1, 0});
  EXPECT_EQ(l.sample_indices, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(l.cu_seqlens, (std::vector<int32_t>{0, 3, 8}));
  EXPECT_EQ(l.max_seqlen, 5);
  EXPECT_EQ(l.cu_seqlens_prefix, (std::vector<int32_t>{0, 1, 4}));
  EXPECT_EQ(l.max_seqlen_prefix, 3);
  EXPECT_EQ(l.cu_seqlens_suffix, (std::vector<int32_t>{0, 2, 4}));
  EXPECT_EQ(l.max_seqlen_suffix, 2);
  EXPECT_EQ(l.positions, (std::vector<int32_t>{0, 1, 2, 0, 1, 2, 3, 4}));
  EXPECT_EQ(l.segment_ids, (std::vector<int32_t>{0, 0, 0, 1, 1, 1, 1, 1}));
  EXPECT_EQ(l.is_suffix, (std::vector<uint8_t>{0, 1, 1, 0, 0, 0, 1, 1}));
  EXPECT_EQ(l.prefix_token_index, (std::vector<int32_t>{0, 3, 4, 5}));
  EXPECT_EQ(l.suffix_token_index, (std::vector<int32_t>{1, 2, 6, 7}));
  EXPECT_EQ(l.total_tokens(), 8);
}

TEST(PackedLayout, SampleMaskByHand) {
  // prefix 2, suffix 2: prefix rows see only the prefix, action rows see everything
  const auto m = sample_attention_mask({0, 2, 2});
  EXPECT_EQ(m, (std::vector<uint8_t>{1, 1, 0, 0,  //
                                     1, 1, 0, 0,  //
                                     1, 1, 1, 1,  //
                                     1, 1, 1, 1}));
}

TEST(PackedLayout, DenseMaskIsBlockDiagonalOfSampleMasks) {
  const auto samples = random_samples(40, 3);
  for (const PackBatch& batch : pack(samples, 300, {.window = 16})) {
    const PackedLayout l = make_packed_layout(samples, batch);
    const auto mask = packed_attention_mask(l);
    const size_t T = size_t(l.total_tokens());
    ASSERT_EQ(mask.size(), T * T);
    std::vector<uint8_t> want(T * T, 0);
    for (size_t seg = 0; seg < batch.size(); ++seg) {
      const auto block = sample_attention_mask(samples[size_t(batch[seg])]);
      const size_t off = size_t(l.cu_seqlens[seg]), len = size_t(l.cu_seqlens[seg + 1]) - off;
      for (size_t q = 0; q < len; ++q)
        for (size_t k = 0; k < len; ++k) want[(off + q) * T + off + k] = block[q * len + k];
    }
    EXPECT_EQ(mask, want);
  }
}

TEST(PaddedLayout, AgreesWithPackedOnRealTokens) {
  const auto samples = random_samples(40, 5);
  for (const PackBatch& batch : pack(samples, 300, {.window = 16})) {
    const PackedLayout l = make_packed_layout(samples, batch);
    const PaddedLayout p = make_padded_layout(samples, batch);
    const auto packed = packed_attention_mask(l);
    const size_t T = size_t(l.total_tokens()), L = size_t(p.max_len);
    ASSERT_EQ(p.batch, int64_t(batch.size()));
    EXPECT_EQ(p.max_len, l.max_seqlen);
    int64_t real = 0;
    for (uint8_t v : p.valid) real += v;
    EXPECT_EQ(real, l.total_tokens());
    // packed token i is padded (b, t); pairs in different samples are 0 in packed, absent in padded
    for (size_t i = 0; i < T; ++i) {
      const size_t b = size_t(l.segment_ids[i]), t = size_t(l.positions[i]);
      ASSERT_TRUE(p.valid[b * L + t]);
      EXPECT_EQ(p.positions[b * L + t], l.positions[i]);
      EXPECT_EQ(p.is_suffix[b * L + t], l.is_suffix[i]);
      for (size_t j = 0; j < T; ++j) {
        if (size_t(l.segment_ids[j]) != b) {
          ASSERT_EQ(packed[i * T + j], 0);
          continue;
        }
        const size_t u = size_t(l.positions[j]);
        ASSERT_EQ(packed[i * T + j], p.attention_mask[(b * L + t) * L + u]) << i << "," << j;
      }
    }
    // padding neither attends nor is attended to
    for (size_t b = 0; b < size_t(p.batch); ++b)
      for (size_t t = size_t(p.lengths[b]); t < L; ++t)
        for (size_t u = 0; u < L; ++u) {
          ASSERT_EQ(p.attention_mask[(b * L + t) * L + u], 0);
          ASSERT_EQ(p.attention_mask[(b * L + u) * L + t], 0);
        }
  }
}

TEST(PackingStats, ByHandAndPackedBeatsPadded) {
  std::vector<PackSample> s = {{0, 3, 2}, {1, 1, 2}};  // lengths 5 and 3
  const std::vector<PackBatch> one = {{0, 1}};
  const PackingStats st = packing_stats(s, one);
  EXPECT_EQ(st.real_tokens, 8);
  EXPECT_EQ(st.padded_tokens, 10);
  EXPECT_EQ(st.packed_tokens, 8);
  EXPECT_DOUBLE_EQ(st.padded_padding_fraction(), 0.2);
  EXPECT_DOUBLE_EQ(st.packed_padding_fraction(), 0.0);
  EXPECT_EQ(st.real_attention, 9 + 2 * 5 + 1 + 2 * 3);
  EXPECT_EQ(st.packed_attention, 25 + 9);
  EXPECT_EQ(st.padded_attention, 2 * 25);
  EXPECT_DOUBLE_EQ(st.budget_fill(16), 0.5);
  // the real attention count equals the dense mask's ones
  const auto mask = packed_attention_mask(make_packed_layout(s, one[0]));
  int64_t ones = 0;
  for (uint8_t v : mask) ones += v;
  EXPECT_EQ(ones, st.real_attention);

  const auto samples = random_samples(256, 9);
  const PackingStats padded = packing_stats(samples, fixed_size_batches(256, 8));
  const PackingStats packed = packing_stats(samples, pack(samples, 8 * 160));
  EXPECT_EQ(padded.real_tokens, packed.real_tokens);
  EXPECT_GT(padded.padded_padding_fraction(), 0.0);
  EXPECT_EQ(packed.packed_padding_fraction(), 0.0);
}

TEST(FixedSizeBatches, LastIsShorter) {
  const auto b = fixed_size_batches(5, 2);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[2], (PackBatch{4}));
}

}  // namespace
}  // namespace ember::data
