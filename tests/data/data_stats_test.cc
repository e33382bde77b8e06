// Statistics (per episode, aggregated, stats.json layout) against hand-computed values and
// values LeRobot 0.4.4's compute_stats.py gives for the same float64 input; normalisation
// formulas and their round trips.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/core/error.h"
#include "ember/data/normalize.h"
#include "ember/data/stats.h"

namespace ember::data {
namespace {

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << what << "[" << i << "]";
}

TEST(Stats, OneToFourByHand) {
  FeatureStats s = compute_stats(std::vector<double>{1, 2, 3, 4}, 1);
  EXPECT_EQ(s.at("min"), std::vector<double>{1});
  EXPECT_EQ(s.at("max"), std::vector<double>{4});
  EXPECT_EQ(s.at("mean"), std::vector<double>{2.5});
  EXPECT_NEAR(s.at("std")[0], std::sqrt(1.25), 1e-15);
  EXPECT_EQ(s.at("count"), std::vector<double>{4});
  // 5000 bins over [1 - 1e-10, 4 + 1e-10]; the values sit in bins 0, 1666, 3333 and 4999
  const double lo = 1 - 1e-10, w = (3 + 2e-10) / 5000;
  EXPECT_NEAR(s.at("q01")[0], lo, 1e-15);                  // rank 0.04: inside bin 0 -> its left edge
  EXPECT_NEAR(s.at("q10")[0], lo, 1e-15);
  EXPECT_NEAR(s.at("q50")[0], lo + 1667 * w, 1e-12);       // rank 2: the whole of bin 1666
  EXPECT_NEAR(s.at("q90")[0], lo + (4999 + 0.6) * w, 1e-12);
  EXPECT_NEAR(s.at("q99")[0], lo + (4999 + 0.96) * w, 1e-12);
  // what LeRobot 0.4.4 prints for get_feature_stats([1, 2, 3, 4])
  EXPECT_NEAR(s.at("q50")[0], 2.00019999996668, 1e-12);
  EXPECT_NEAR(s.at("q90")[0], 3.999760000099984, 1e-12);
  EXPECT_NEAR(s.at("q99")[0], 3.9999760000999984, 1e-12);
}

// 37 rows of 2 dimensions (numpy default_rng(7) normals rounded to 1e-3) and LeRobot 0.4.4's
// statistics of them.
const std::vector<double> kRows = {
    0.001,  0.299,  -0.274, -0.891, -0.455, -0.992, 0.06,   1.34,   -0.492, -0.62,  0.49,   0.357,  0.105,
    -0.93,  -0.029, 0.695,  -1.344, -0.458, -1.901, -1.29,  -1.842, -0.235, -1.267, 0.271,  0.157,  -0.187,
    -2.517, -0.539, -0.049, 0.113,  -1.53,  -0.478, -0.979, -0.809, 1.061,  -0.808, -0.033, 0.884,  -0.584,
    -0.112, 0.11,   0.064,  -1.225, 0.076,  1.359,  -1.547, 0.859,  0.119,  -0.641, 2.0,    0.762,  -1.199,
    0.075,  0.577,  -0.189, 0.683,  -0.067, 0.667,  1.439,  -0.676, 0.203,  -0.463, 0.127,  -1.187, -0.579,
    -0.196, 0.899,  1.145,  -1.324, -0.795, 0.647,  -1.992, -0.463, -0.097};

TEST(Stats, MatchesLeRobotOnRandomRows) {
  FeatureStats s = compute_stats(kRows, 2);
  expect_near(s.at("min"), {-2.517, -1.992}, 0, "min");
  expect_near(s.at("max"), {1.439, 2.0}, 0, "max");
  expect_near(s.at("mean"), {-0.2548648648648648, -0.1948918918918919}, 1e-14, "mean");
  expect_near(s.at("std"), {0.9111411663302993, 0.8370859293868831}, 1e-14, "std");
  EXPECT_EQ(s.at("count"), std::vector<double>{37});
  expect_near(s.at("q01"), {-2.5170000001, -1.9920000001}, 1e-13, "q01");
  expect_near(s.at("q10"), {-1.529819760050092, -1.198629920060252}, 1e-12, "q10");
  expect_near(s.at("q50"), {-0.04885159997522015, -0.19599920001002002}, 1e-12, "q50");
  expect_near(s.at("q90"), {0.8988477600726918, 0.884076320044092}, 1e-12, "q90");
  expect_near(s.at("q99"), {1.4387072560999852, 1.9997045920999852}, 1e-12, "q99");
}

TEST(Stats, SingleRowUsesTheMeanForQuantiles) {
  FeatureStats s = compute_stats(std::vector<double>{0.5, -2}, 2);
  EXPECT_EQ(s.at("std"), (std::vector<double>{0, 0}));
  for (const char* q : kQuantileNames) EXPECT_EQ(s.at(q), (std::vector<double>{0.5, -2})) << q;
  EXPECT_EQ(s.at("count"), std::vector<double>{1});
}

TEST(Stats, CountOverridesRows) {
  // a frame of shape [2, 2] gives two rows; LeRobot's count is frames
  FeatureStats s = compute_stats(std::vector<double>{1, 2, 3, 4}, 2, 1);
  EXPECT_EQ(s.at("count"), std::vector<double>{1});
  EXPECT_EQ(s.at("mean"), (std::vector<double>{2, 3}));
}

TEST(Stats, BadShapesAreInvalidArguments) {
  EXPECT_THROW(compute_stats(std::vector<double>{1, 2, 3}, 2), Error);
  EXPECT_THROW(compute_stats(std::vector<double>{}, 1), Error);
  EXPECT_THROW(compute_stats(std::vector<double>{1}, 0), Error);
}

TEST(Stats, SampleIndicesAreLeRobots) {
  EXPECT_EQ(sample_frame_indices(5), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(sample_frame_indices(1), (std::vector<int64_t>{0}));
  EXPECT_TRUE(sample_frame_indices(0).empty());
  std::vector<int64_t> s = sample_frame_indices(1000);  // LeRobot: 177 samples
  ASSERT_EQ(s.size(), 177u);
  EXPECT_EQ(std::vector<int64_t>(s.begin(), s.begin() + 5), (std::vector<int64_t>{0, 6, 11, 17, 23}));
  // 88 * 999 / 176 = 499.5 rounds half to even, as numpy does
  EXPECT_EQ(std::vector<int64_t>(s.begin() + 85, s.begin() + 92), (std::vector<int64_t>{482, 488, 494, 500, 505, 511, 517}));
  EXPECT_EQ(s.back(), 999);
  EXPECT_EQ(sample_frame_indices(100).size(), 100u);
  EXPECT_EQ(sample_frame_indices(20000).size(), 1681u);
}

TEST(Stats, DownsampleStride) {
  EXPECT_EQ(image_downsample_stride(480, 640), 4);
  EXPECT_EQ(image_downsample_stride(200, 200), 1);
  EXPECT_EQ(image_downsample_stride(299, 299), 1);
  EXPECT_EQ(image_downsample_stride(300, 100), 2);
}

TEST(Stats, ImageChannelsScaledToUnitRange) {
  io::Image im;
  im.width = 2;
  im.height = 1;
  im.rgb = {0, 0, 0, 255, 128, 64};
  FeatureStats s = compute_image_stats(std::span<const io::Image>(&im, 1));
  expect_near(s.at("min"), {0, 0, 0}, 0, "min");
  expect_near(s.at("max"), {1, 128 / 255.0, 64 / 255.0}, 1e-15, "max");
  expect_near(s.at("mean"), {0.5, 64 / 255.0, 32 / 255.0}, 1e-15, "mean");
  expect_near(s.at("std"), {0.5, 64 / 255.0, 32 / 255.0}, 1e-15, "std");  // the true std (no uint8 wrap)
  EXPECT_EQ(s.at("count"), std::vector<double>{1});
  // half the pixels at each end: q50 is the end of the lower pixel's bin, as for numbers
  FeatureStats n = compute_stats(std::vector<double>{0, 255}, 1);
  EXPECT_NEAR(s.at("q50")[0], n.at("q50")[0] / 255, 1e-15);
  EXPECT_NEAR(s.at("q99")[0], n.at("q99")[0] / 255, 1e-15);
}

TEST(Stats, ImageStatsSubsampleLargeFrames) {
  io::Image im;
  im.width = 600;  // stride 4: pixels at x = 0, 4, ...
  im.height = 300;
  im.rgb.assign(size_t(im.width) * im.height * 3, 0);
  for (int y = 0; y < im.height; ++y)
    for (int x = 0; x < im.width; ++x)
      if (x % 4 != 0 || y % 4 != 0) im.rgb[(size_t(y) * im.width + x) * 3] = 255;  // skipped pixels are bright
  PixelHistogram h;
  h.add(im);
  EXPECT_EQ(h.pixels(), 150 * 75);
  FeatureStats s = image_stats(h);
  EXPECT_EQ(s.at("max")[0], 0.0);
}

TEST(Stats, AggregateByHand) {
  FeatureStats a{{"min", {1}}, {"max", {1}}, {"mean", {1}}, {"std", {0}}, {"count", {2}}, {"q50", {1}}};
  FeatureStats b{{"min", {2}}, {"max", {4}}, {"mean", {3}}, {"std", {1}}, {"count", {2}}, {"q50", {3}}};
  FeatureStats s = aggregate_feature_stats({a, b});
  EXPECT_EQ(s.at("min"), std::vector<double>{1});
  EXPECT_EQ(s.at("max"), std::vector<double>{4});
  EXPECT_EQ(s.at("mean"), std::vector<double>{2});
  EXPECT_NEAR(s.at("std")[0], std::sqrt(1.5), 1e-15);  // ((0 + 1) * 2 + (1 + 1) * 2) / 4
  EXPECT_EQ(s.at("count"), std::vector<double>{4});
  EXPECT_EQ(s.at("q50"), std::vector<double>{2});
}

TEST(Stats, AggregateEqualsWholeForMoments) {
  // rows 0..9 and 10..36 as two episodes: mean, std, min, max equal those of all 37 rows
  std::vector<double> first(kRows.begin(), kRows.begin() + 20), rest(kRows.begin() + 20, kRows.end());
  FeatureStats whole = compute_stats(kRows, 2);
  FeatureStats agg = aggregate_feature_stats({compute_stats(first, 2), compute_stats(rest, 2)});
  for (const char* k : {"min", "max", "mean", "std", "count"}) expect_near(agg.at(k), whole.at(k), 1e-14, k);
  // quantiles: count-weighted means of the parts' quantiles (LeRobot's approximation)
  FeatureStats p = compute_stats(first, 2), q = compute_stats(rest, 2);
  for (const char* k : kQuantileNames)
    for (int j = 0; j < 2; ++j) EXPECT_NEAR(agg.at(k)[j], (p.at(k)[j] * 10 + q.at(k)[j] * 27) / 37, 1e-14);
}

TEST(Stats, AggregateDropsQuantilesNotEverywhereAndChecksSizes) {
  FeatureStats a{{"min", {1}}, {"max", {1}}, {"mean", {1}}, {"std", {0}}, {"count", {2}}, {"q01", {1}}};
  FeatureStats b{{"min", {2}}, {"max", {4}}, {"mean", {3}}, {"std", {1}}, {"count", {2}}};
  EXPECT_FALSE(aggregate_feature_stats({a, b}).count("q01"));
  FeatureStats c = b;
  c["mean"] = {1, 2};
  try {
    aggregate_feature_stats({a, c}, "stats of 'x'");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("stats of 'x'"), std::string::npos) << e.what();
  }
  FeatureStats d = b;
  d.erase("count");
  EXPECT_THROW(aggregate_feature_stats({a, d}), Error);
}

TEST(Stats, AggregateStatsUnionOfKeys) {
  FeatureStats a{{"min", {1}}, {"max", {1}}, {"mean", {1}}, {"std", {0}}, {"count", {2}}};
  auto out = aggregate_stats({{{"x", a}}, {{"x", a}, {"y", a}}});
  EXPECT_EQ(out.at("x").at("count"), std::vector<double>{4});
  EXPECT_EQ(out.at("y").at("count"), std::vector<double>{2});
}

TEST(Stats, JsonLayoutIsLeRobots) {
  Feature img, idx, st;
  img.key = "observation.images.top", img.dtype = "image", img.shape = {4, 4, 3};
  idx.key = "frame_index", idx.dtype = "int64", idx.shape = {1};
  st.key = "observation.state", st.dtype = "float32", st.shape = {2};
  std::map<std::string, FeatureStats> stats;
  stats["frame_index"] = compute_stats(std::vector<double>{0, 1, 2}, 1);
  stats["observation.state"] = compute_stats(std::vector<double>{0, 1, 2, 3}, 2);
  io::Image im{2, 1, {0, 0, 0, 255, 128, 64}};
  stats["observation.images.top"] = compute_image_stats(std::span<const io::Image>(&im, 1));
  auto j = stats_to_json(stats, {st, img, idx});
  std::vector<std::string> order;
  for (const auto& it : j.items()) order.push_back(it.key());
  EXPECT_EQ(order, (std::vector<std::string>{"observation.state", "observation.images.top", "frame_index"}));
  std::vector<std::string> names;
  for (const auto& it : j["observation.state"].items()) names.push_back(it.key());
  EXPECT_EQ(names, (std::vector<std::string>{"min", "max", "mean", "std", "count", "q01", "q10", "q50", "q90", "q99"}));
  EXPECT_EQ(j["observation.images.top"]["mean"].dump(), "[[[0.5]],[[0.25098039215686274]],[[0.12549019607843137]]]");
  EXPECT_EQ(j["observation.images.top"]["count"].dump(), "[1]");
  EXPECT_EQ(j["frame_index"]["min"].dump(), "[0]");
  EXPECT_EQ(j["frame_index"]["max"].dump(), "[2]");
  EXPECT_EQ(j["frame_index"]["mean"].dump(), "[1.0]");
  EXPECT_EQ(j["observation.state"]["count"].dump(), "[2]");
}

// --- normalisation ---

FeatureStats norm_stats() {
  return {{"mean", {1, -1}},  {"std", {2, 0.5}}, {"min", {0, -4}},  {"max", {10, 4}},
          {"q01", {1, -3}},   {"q99", {3, 3}},   {"q10", {2, -2}},  {"q90", {4, 2}}};
}

TEST(Normalize, FormulasAreLeRobots) {
  const FeatureStats s = norm_stats();
  std::vector<float> x = {5, 0};
  FeatureNormalizer(NormMode::kMeanStd, s).normalize(x);
  EXPECT_FLOAT_EQ(x[0], 4 / (2 + 1e-8f));
  EXPECT_FLOAT_EQ(x[1], 1 / (0.5f + 1e-8f));
  x = {5, 4};
  FeatureNormalizer(NormMode::kMinMax, s).normalize(x);
  EXPECT_FLOAT_EQ(x[0], 0);
  EXPECT_FLOAT_EQ(x[1], 1);
  x = {2, 3};
  FeatureNormalizer(NormMode::kQuantiles, s).normalize(x);
  EXPECT_FLOAT_EQ(x[0], 0);
  EXPECT_FLOAT_EQ(x[1], 1);
  x = {3, -2};
  FeatureNormalizer(NormMode::kQuantile10, s).normalize(x);
  EXPECT_FLOAT_EQ(x[0], 0);
  EXPECT_FLOAT_EQ(x[1], -1);
  x = {3, 7};
  FeatureNormalizer(NormMode::kIdentity, {}).normalize(x);
  EXPECT_EQ(x, (std::vector<float>{3, 7}));
}

TEST(Normalize, ZeroRangeUsesEpsilon) {
  FeatureStats s{{"min", {3}}, {"max", {3}}};
  std::vector<float> x = {3};
  FeatureNormalizer n(NormMode::kMinMax, s);
  n.normalize(x);
  EXPECT_EQ(x[0], -1.0f);  // LeRobot 0.4: a constant feature maps to -1
  n.unnormalize(x);
  EXPECT_EQ(x[0], 3.0f);
}

TEST(Normalize, GrootRuleMapsAZeroRangeToZero) {
  // Isaac-GR00T's min-max Normalizer and LeRobot's groot pack step: max == min gives 0, and the
  // inverse gives min back; other dims and other modes as LeRobot 0.4
  FeatureStats s{{"min", {3, 0}}, {"max", {3, 10}}, {"q01", {3, 0}}, {"q99", {3, 10}}};
  const NormalizeOptions groot{.eps = 1e-8, .rule = EpsilonRule::kZeroRangeToZero};
  std::vector<float> x = {4, 10};
  FeatureNormalizer n(NormMode::kMinMax, s, "a", groot);
  n.normalize(x);
  EXPECT_EQ(x[0], 0.0f);
  EXPECT_EQ(x[1], 1.0f);
  x = {0.5f, 0.0f};
  n.unnormalize(x);
  EXPECT_EQ(x[0], 3.0f);
  EXPECT_EQ(x[1], 5.0f);
  x = {3, 10};
  FeatureNormalizer(NormMode::kQuantiles, s, "a", groot).normalize(x);
  EXPECT_EQ(x[0], -1.0f);  // not MIN_MAX: LeRobot 0.4's eps
  EXPECT_EQ(x[1], 1.0f);
}

TEST(Normalize, LegacyRuleAddsEpsilonToTheRange) {
  FeatureStats s{{"min", {0}}, {"max", {10}}};
  std::vector<float> x = {10};
  FeatureNormalizer(NormMode::kMinMax, s, "a", {.eps = 1e-8, .rule = EpsilonRule::kAddToRange}).normalize(x);
  EXPECT_FLOAT_EQ(x[0], 10 / (10 + 1e-8f) * 2 - 1);
  FeatureStats z{{"min", {3}}, {"max", {3}}};
  x = {4};
  FeatureNormalizer(NormMode::kMinMax, z, "a", {.eps = 1e-8, .rule = EpsilonRule::kAddToRange}).normalize(x);
  EXPECT_FLOAT_EQ(x[0], 1 / 1e-8f * 2 - 1);
}

TEST(Normalize, RoundTripEveryMode) {
  const FeatureStats s = norm_stats();
  for (NormMode m : {NormMode::kIdentity, NormMode::kMeanStd, NormMode::kMinMax, NormMode::kQuantiles, NormMode::kQuantile10}) {
    for (EpsilonRule r : {EpsilonRule::kZeroRangeOnly, EpsilonRule::kAddToRange, EpsilonRule::kZeroRangeToZero}) {
      FeatureNormalizer n(m, s, "k", {.eps = 1e-8, .rule = r});
      std::vector<float> x, orig;
      for (int i = 0; i < 64; ++i) x.push_back(std::sin(0.37f * float(i)) * 5);
      orig = x;
      n.normalize(x);
      n.unnormalize(x);
      for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], orig[i], 1e-5) << norm_mode_name(m) << " " << i;
    }
  }
}

TEST(Normalize, ChannelFirstImagesUseInner) {
  FeatureStats s{{"mean", {0.5, 0.25, 0}}, {"std", {0.5, 0.25, 1}}};
  // [2 images, 3 channels, 2 pixels]
  std::vector<float> x = {1, 0, 0.5, 0.25, 3, 4, 0, 1, 0.25, 0.75, -1, 2};
  FeatureNormalizer(NormMode::kMeanStd, s).normalize(x, 2);
  std::vector<float> want = {1, -1, 1, 0, 3, 4, -1, 1, 0, 2, -1, 2};
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], want[i], 1e-6) << i;
  EXPECT_THROW(FeatureNormalizer(NormMode::kMeanStd, s).normalize(x, 5), Error);
}

TEST(Normalize, MissingStatisticsNameTheFeature) {
  FeatureStats s{{"mean", {0}}, {"std", {1}}};
  try {
    FeatureNormalizer(NormMode::kQuantiles, s, "action");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("action"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("q01"), std::string::npos);
  }
  FeatureStats bad{{"mean", {0, 1}}, {"std", {1}}};
  EXPECT_THROW(FeatureNormalizer(NormMode::kMeanStd, bad, "x"), Error);
  EXPECT_THROW(Normalizer({}, {{"action", NormMode::kMeanStd}}), Error);
  Normalizer none({}, {{"action", NormMode::kIdentity}});
  std::vector<float> x = {2};
  none.normalize("action", x);
  EXPECT_EQ(x[0], 2);
}

TEST(Normalize, ModeNames) {
  EXPECT_EQ(parse_norm_mode("MEAN_STD"), NormMode::kMeanStd);
  EXPECT_EQ(parse_norm_mode("QUANTILE10"), NormMode::kQuantile10);
  EXPECT_STREQ(norm_mode_name(NormMode::kMinMax), "MIN_MAX");
  EXPECT_THROW(parse_norm_mode("mean_std", "--policy.normalization_mapping"), Error);
}

TEST(Normalize, NormalizerByKey) {
  std::map<std::string, FeatureStats> stats{{"action", norm_stats()}, {"observation.state", norm_stats()}};
  Normalizer n(stats, {{"action", NormMode::kMinMax}, {"observation.state", NormMode::kMeanStd}});
  std::vector<float> a = {5, 4}, st = {5, 0}, other = {9};
  n.normalize("action", a);
  n.normalize("observation.state", st);
  n.normalize("unknown", other);
  EXPECT_FLOAT_EQ(a[0], 0);
  EXPECT_FLOAT_EQ(st[0], 4 / (2 + 1e-8f));
  EXPECT_EQ(other[0], 9);
  EXPECT_TRUE(n.has("action"));
  EXPECT_FALSE(n.has("unknown"));
}

}  // namespace
}  // namespace ember::data
