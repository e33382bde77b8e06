#include "ember/data/normalize.h"

#include <cmath>
#include <initializer_list>
#include <utility>

#include "ember/core/error.h"

namespace ember::data {

const char* norm_mode_name(NormMode mode) {
  switch (mode) {
    case NormMode::kIdentity: return "IDENTITY";
    case NormMode::kMeanStd: return "MEAN_STD";
    case NormMode::kMinMax: return "MIN_MAX";
    case NormMode::kQuantiles: return "QUANTILES";
    case NormMode::kQuantile10: return "QUANTILE10";
  }
  return "?";
}

NormMode parse_norm_mode(std::string_view name, const std::string& what) {
  for (NormMode m : {NormMode::kIdentity, NormMode::kMeanStd, NormMode::kMinMax, NormMode::kQuantiles, NormMode::kQuantile10})
    if (name == norm_mode_name(m)) return m;
  fail(ErrorKind::kInvalidArgument, what + ": '" + std::string(name) +
                                        "' is not a normalization mode (IDENTITY, MEAN_STD, MIN_MAX, QUANTILES, QUANTILE10)");
}

std::array<const char*, 2> norm_mode_stats(NormMode mode) {
  switch (mode) {
    case NormMode::kIdentity: break;
    case NormMode::kMeanStd: return {"mean", "std"};
    case NormMode::kMinMax: return {"min", "max"};
    case NormMode::kQuantiles: return {"q01", "q99"};
    case NormMode::kQuantile10: return {"q10", "q90"};
  }
  return {nullptr, nullptr};
}

FeatureNormalizer::FeatureNormalizer(NormMode mode, const FeatureStats& stats, const std::string& key, NormalizeOptions options)
    : mode_(mode), rule_(options.rule), key_(key), eps_(float(options.eps)) {
  if (mode == NormMode::kIdentity) return;
  const auto [lo, hi] = norm_mode_stats(mode);
  auto get = [&](const char* name) -> const std::vector<double>& {
    auto it = stats.find(name);
    if (it == stats.end() || it->second.empty())
      fail(ErrorKind::kInvalidArgument, key + ": " + norm_mode_name(mode) + " normalization needs statistic '" + name +
                                            "', which the stats do not have");
    return it->second;
  };
  const std::vector<double>&a = get(lo), &b = get(hi);
  for (const auto& [name, values] : {std::pair<const char*, const std::vector<double>*>{lo, &a}, {hi, &b}})
    for (size_t i = 0; i < values->size(); ++i)
      if (!std::isfinite((*values)[i]))
        fail(ErrorKind::kInvalidArgument, key + ": statistic '" + name + "' value " + std::to_string(i) + " is " +
                                              std::to_string((*values)[i]) + " (not finite)");
  if (a.size() != b.size())
    fail(ErrorKind::kInvalidArgument, key + ": statistic '" + lo + "' has " + std::to_string(a.size()) + " values, '" + hi +
                                          "' has " + std::to_string(b.size()));
  lo_.assign(a.begin(), a.end());
  hi_.assign(b.begin(), b.end());
}

void FeatureNormalizer::check(size_t n, int64_t inner) const {
  if (mode_ == NormMode::kIdentity) return;
  if (inner < 1 || n % (lo_.size() * size_t(inner)) != 0)
    fail(ErrorKind::kInvalidArgument, key_ + ": " + std::to_string(n) + " values do not fit [..., " +
                                          std::to_string(lo_.size()) + ", " + std::to_string(inner) + "]");
}

void FeatureNormalizer::normalize(std::span<float> x, int64_t inner) const {
  check(x.size(), inner);
  if (mode_ == NormMode::kIdentity) return;
  const size_t d = lo_.size(), in = size_t(inner);
  const bool add_eps = rule_ == EpsilonRule::kAddToRange;
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t j = (i / in) % d;
    const float lo = lo_[j], hi = hi_[j];
    float& v = x[i];
    if (mode_ == NormMode::kMeanStd) {
      v = (v - lo) / (hi + eps_);
    } else if (add_eps) {
      v = (v - lo) / (hi - lo + eps_) * 2.0f - 1.0f;
    } else {
      float r = hi - lo;
      if (r == 0 && mode_ == NormMode::kMinMax && rule_ == EpsilonRule::kZeroRangeToZero) {
        v = 0.0f;
        continue;
      }
      if (r == 0) r = eps_;
      v = 2.0f * (v - lo) / r - 1.0f;
    }
  }
}

void FeatureNormalizer::unnormalize(std::span<float> x, int64_t inner) const {
  check(x.size(), inner);
  if (mode_ == NormMode::kIdentity) return;
  const size_t d = lo_.size(), in = size_t(inner);
  const bool add_eps = rule_ == EpsilonRule::kAddToRange;
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t j = (i / in) % d;
    const float lo = lo_[j], hi = hi_[j];
    float& v = x[i];
    if (mode_ == NormMode::kMeanStd) {
      v = v * hi + lo;
    } else if (add_eps) {
      v = (v + 1.0f) / 2.0f * (hi - lo) + lo;
    } else {
      float r = hi - lo;
      if (r == 0 && mode_ == NormMode::kMinMax && rule_ == EpsilonRule::kZeroRangeToZero) {
        v = lo;
        continue;
      }
      if (r == 0) r = eps_;
      // LeRobot's two inverse forms (MIN_MAX vs the quantile modes) differ in rounding only
      v = mode_ == NormMode::kMinMax ? (v + 1.0f) / 2.0f * r + lo : (v + 1.0f) * r / 2.0f + lo;
    }
  }
}

Normalizer::Normalizer(const std::map<std::string, FeatureStats>& stats, const std::map<std::string, NormMode>& modes,
                       NormalizeOptions options) {
  for (const auto& [key, mode] : modes) {
    if (mode == NormMode::kIdentity) continue;
    auto it = stats.find(key);
    if (it == stats.end())
      fail(ErrorKind::kInvalidArgument, key + ": " + norm_mode_name(mode) + " normalization asked for, but the dataset "
                                            "has no statistics for this feature");
    features_.emplace(key, FeatureNormalizer(mode, it->second, key, options));
  }
}

void Normalizer::normalize(const std::string& key, std::span<float> x, int64_t inner) const {
  if (auto it = features_.find(key); it != features_.end()) it->second.normalize(x, inner);
}

void Normalizer::unnormalize(const std::string& key, std::span<float> x, int64_t inner) const {
  if (auto it = features_.find(key); it != features_.end()) it->second.unnormalize(x, inner);
}

}  // namespace ember::data
