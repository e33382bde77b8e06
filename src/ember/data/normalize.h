// Normalisation of feature values with dataset statistics, as LeRobot's policies do it
// (lerobot/processor/normalize_processor.py, LeRobot 0.4), and its inverse.
//
//   MEAN_STD    y = (x - mean) / (std + eps)              x = y * std + mean
//   MIN_MAX     y = 2 (x - min) / r - 1,  r = max - min    x = (y + 1) / 2 * r + min
//   QUANTILES   y = 2 (x - q01) / r - 1,  r = q99 - q01    x = (y + 1) * r / 2 + q01
//   QUANTILE10  y = 2 (x - q10) / r - 1,  r = q90 - q10    x = (y + 1) * r / 2 + q10
//   IDENTITY    y = x
// LeRobot 0.4 replaces a range r of exactly 0 by eps (so a constant feature maps to -1) and
// leaves other ranges alone. LeRobot up to 0.3 (lerobot/policies/normalize.py) instead added
// eps to every range: EpsilonRule::kAddToRange, for checkpoints trained that way; the inverse
// then uses the plain range, as that code did. eps is 1e-8 in both. GR00T-N1.5 (Isaac-GR00T's
// min-max Normalizer, LeRobot's groot pack step) maps a MIN_MAX feature whose max equals its min
// to 0 and back to its min: EpsilonRule::kZeroRangeToZero (the other modes keep LeRobot 0.4's
// rule under it).
//
// Arithmetic is float32 in LeRobot's order of operations, the statistics cast to float32 first
// (LeRobot moves them to float32 tensors), so results match LeRobot's bit for bit in the
// common cases. A Normalizer is immutable after construction and safe to share across threads.
#pragma once

#include <array>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ember/data/metadata.h"

namespace ember::data {

enum class NormMode { kIdentity, kMeanStd, kMinMax, kQuantiles, kQuantile10 };

// "IDENTITY", "MEAN_STD", "MIN_MAX", "QUANTILES", "QUANTILE10" (LeRobot's NormalizationMode).
const char* norm_mode_name(NormMode mode);
// Parses those names; throws kInvalidArgument naming `what` for anything else.
NormMode parse_norm_mode(std::string_view name, const std::string& what = "normalization mode");
// The two statistics a mode reads ("mean"/"std", "min"/"max", "q01"/"q99", "q10"/"q90");
// {nullptr, nullptr} for IDENTITY.
std::array<const char*, 2> norm_mode_stats(NormMode mode);

enum class EpsilonRule {
  kZeroRangeOnly,  // LeRobot 0.4: eps replaces a zero range (MEAN_STD: std + eps always)
  kAddToRange,     // LeRobot <= 0.3: eps added to every range and std
  kZeroRangeToZero,  // GR00T-N1.5: MIN_MAX with max == min gives 0, and back min (else kZeroRangeOnly)
};

struct NormalizeOptions {
  double eps = 1e-8;
  EpsilonRule rule = EpsilonRule::kZeroRangeOnly;
};

// Normalises one feature. The statistics' values are per dimension (d values; images: one per
// channel, stored (3, 1, 1)). Values are laid out [..., d, inner]: element i uses statistic
// (i / inner) % d, so a state vector [batch, d] takes inner = 1 and a channel-first image
// [batch, 3, H, W] takes inner = H * W. x.size() must be a multiple of d * inner.
class FeatureNormalizer {
 public:
  // Throws kInvalidArgument naming `key` when the statistics the mode needs are missing or
  // their sizes differ. IDENTITY needs none.
  FeatureNormalizer(NormMode mode, const FeatureStats& stats, const std::string& key = "feature",
                    NormalizeOptions options = {});

  NormMode mode() const { return mode_; }
  int64_t dims() const { return int64_t(lo_.size()); }  // 0 for IDENTITY
  // In place. Throws kInvalidArgument when x does not fit [..., dims, inner].
  void normalize(std::span<float> x, int64_t inner = 1) const;
  void unnormalize(std::span<float> x, int64_t inner = 1) const;

 private:
  void check(size_t n, int64_t inner) const;

  NormMode mode_;
  EpsilonRule rule_;
  std::string key_;
  float eps_;
  std::vector<float> lo_, hi_;  // MEAN_STD: mean, std; the others: low and high statistic
};

// Normalisers for several features: key -> mode; keys without a mode, or with IDENTITY, pass
// through unchanged (as LeRobot does for features missing from its norm map).
class Normalizer {
 public:
  Normalizer() = default;
  // Throws kInvalidArgument naming the key whose statistics are missing or inconsistent.
  Normalizer(const std::map<std::string, FeatureStats>& stats, const std::map<std::string, NormMode>& modes,
             NormalizeOptions options = {});

  bool has(const std::string& key) const { return features_.count(key) != 0; }
  void normalize(const std::string& key, std::span<float> x, int64_t inner = 1) const;
  void unnormalize(const std::string& key, std::span<float> x, int64_t inner = 1) const;

 private:
  std::map<std::string, FeatureNormalizer> features_;
};

}  // namespace ember::data
