// Normalisation statistics of dataset features, computed as LeRobot computes them
// (lerobot/datasets/compute_stats.py, LeRobot 0.4): per episode, then aggregated over episodes.
//
// Per episode and feature the statistics are min, max, mean, std (population), count and the
// quantiles q01, q10, q50, q90, q99:
//   - numeric features (shape [d] or [1]): per dimension over the episode's frames; count is the
//     number of frames. Quantiles come from LeRobot's histogram estimate: 5000 equal bins over
//     [min - 1e-10, max + 1e-10] per dimension, linear interpolation inside the bin that holds
//     the target rank q * count. With fewer than two rows every quantile is the mean (std 0).
//   - camera images (8-bit RGB): per channel over the pixels of a sample of the episode's
//     frames, scaled to [0, 1]; stored with shape (3, 1, 1); count is the number of sampled
//     frames. The sample is LeRobot's: about n^0.75 frames (all of them below 100, at most
//     10000) evenly spaced by round-half-even over [0, n-1]; frames of 300 pixels or more on a
//     side are first subsampled with a stride of int(longer side / 150), as LeRobot does.
//
// Differences from LeRobot, all deliberate:
//   - ember accumulates in double (LeRobot: the data's own dtype, float32 for most features)
//     and computes the variance in two passes (numeric) or from exact integer sums (images);
//     results agree to float32 rounding. The histogram's bin edges are in double, so a value
//     within float32 rounding of an edge may land one bin over (a quantile shift of at most
//     (max - min) / 5000).
//   - image std is the true per-channel std. LeRobot 0.4.x squares the uint8 pixels before
//     widening them, which wraps around and gives a wrong (often zero) std for images
//     (huggingface/lerobot#3682, fixed upstream by #3697); ember matches the fixed version.
//
// Aggregation (aggregate_feature_stats) is LeRobot's aggregate_stats: min of mins, max of maxes,
// count-weighted mean, pooled variance sum(c_i * (var_i + (mean_i - mean)^2)) / sum(c_i), and
// quantiles as the count-weighted mean of the per-episode quantiles (an approximation that
// LeRobot makes too).
//
// All functions are pure and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "ember/data/info.h"
#include "ember/data/metadata.h"
#include "ember/io/png.h"

namespace ember::data {

// LeRobot's quantile probabilities and the names its files use for them.
inline constexpr std::array<double, 5> kQuantileProbs = {0.01, 0.10, 0.50, 0.90, 0.99};
inline constexpr std::array<const char*, 5> kQuantileNames = {"q01", "q10", "q50", "q90", "q99"};

struct StatsOptions {
  int num_bins = 5000;  // histogram bins per dimension for the quantile estimate (LeRobot's)
};

// Statistics of rows of `dims` values: values is (rows x dims), row-major. `count` is what the
// "count" entry says (LeRobot counts frames; a frame of shape [k, d] gives k rows); -1: rows.
// Throws kInvalidArgument when values.size() is not a multiple of dims or there are no rows.
FeatureStats compute_stats(std::span<const double> values, int64_t dims, int64_t count = -1,
                           const StatsOptions& options = {});

// The frames LeRobot samples from an episode of n frames for image statistics (sorted, may
// repeat when n is small). Empty for n <= 0.
std::vector<int64_t> sample_frame_indices(int64_t n);
// LeRobot's subsampling stride for an image of this size (1: none).
int image_downsample_stride(int height, int width);

// Per-channel pixel counts of 8-bit RGB images: everything the image statistics need, so an
// episode's frames can be counted one at a time (add) and the sampled ones summed later.
struct PixelHistogram {
  std::array<std::array<int64_t, 256>, 3> counts{};  // [channel][level]
  int64_t images = 0;

  // Counts the image's pixels after LeRobot's subsampling (image_downsample_stride).
  void add(const io::Image& image);
  void merge(const PixelHistogram& other);
  int64_t pixels() const;
};

// Image statistics, each of 3 values (one per channel, [0, 1] scale); count = h.images.
// Throws kInvalidArgument when h holds no image.
FeatureStats image_stats(const PixelHistogram& h, const StatsOptions& options = {});
// The same for images already sampled (no sampling here; subsampling applies).
FeatureStats compute_image_stats(std::span<const io::Image> images, const StatsOptions& options = {});

// Aggregates per-episode statistics of one feature. Every part needs min, max, mean, std and
// count of one size; quantiles are aggregated when every part has them. Throws
// kInvalidArgument naming `what` (and the statistic) on missing or mis-sized entries.
FeatureStats aggregate_feature_stats(const std::vector<FeatureStats>& parts, const std::string& what = "stats");
// Per feature key, over the parts that hold the key (LeRobot's aggregate_stats).
std::map<std::string, FeatureStats> aggregate_stats(const std::vector<std::map<std::string, FeatureStats>>& parts);

// Statistics as LeRobot's JSON files hold them (stats.json, episodes_stats.jsonl): in the
// order of `features` (keys without a feature follow, sorted), each feature's statistics in
// the order min, max, mean, std, count, q01..q99, then any others; image and video features as
// (3, 1, 1) nested lists; count, and min/max of integer and bool features, as integers.
nlohmann::ordered_json stats_to_json(const std::map<std::string, FeatureStats>& stats,
                                     const std::vector<Feature>& features);
// Writes stats_to_json(...) to `path` (indent 4), atomically. Throws kIO naming the path.
void write_stats_json(const std::string& path, const std::map<std::string, FeatureStats>& stats,
                      const std::vector<Feature>& features);

// The order LeRobot writes a feature's statistics in (min, max, mean, std, count, q01..q99).
std::vector<std::string> stat_names_in_order(const FeatureStats& s);
// Whether a statistic of this feature is written as integers (count; min/max of integer dtypes).
bool stat_is_integer(const Feature& f, const std::string& stat);

}  // namespace ember::data
