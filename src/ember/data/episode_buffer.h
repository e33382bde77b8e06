// Internal to DatasetWriter: how user features are stored, and the frames of the episode being
// recorded, column by column, until save_episode() turns them into a table and statistics.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ember/data/dataset_writer.h"
#include "ember/data/stats.h"
#include "ember/io/column.h"

namespace ember::data::detail {

// LeRobot's DEFAULT_FEATURES (timestamp, frame_index, episode_index, index, task_index).
std::vector<Feature> standard_features();

// How a user feature is stored in the data table.
// kVideo: a camera whose frames go to a video (not to the data table); statistics as kImage.
enum class Kind { kScalar, kList, kString, kImage, kVideo };

struct Slot {
  Feature feature;
  Kind kind = Kind::kScalar;
  io::TypeId type = io::TypeId::kFloat;  // element type of numeric features
  int64_t numel = 1;
  int height = 0, width = 0;             // image and video features
  bool camera() const { return kind == Kind::kImage || kind == Kind::kVideo; }
};

// Checks a user feature; throws kInvalidArgument / kUnsupported naming `what` and the key.
Slot make_slot(const Feature& f, const std::string& what);

class EpisodeBuffer {
 public:
  // jpeg_quality: 0 stores images as PNG, 1..100 as JPEG of that quality.
  EpisodeBuffer(std::vector<Slot> slots, double fps, int jpeg_quality = 0);

  const std::vector<Slot>& slots() const { return slots_; }
  int64_t size() const { return size_; }
  const std::vector<std::string>& frame_tasks() const { return tasks_; }

  // Throws kInvalidArgument naming `what` and the feature when f does not fit the slots.
  void validate(const Frame& f, const std::string& what) const;
  // Appends a validated frame (images are PNG-encoded here, video frames only counted for the
  // statistics); on an exception nothing is added.
  void add(const Frame& f);
  void clear();

  // The data table: user features in order (video cameras left out, as LeRobot does), then the
  // standard five. task_ids: [size()].
  io::Table table(int64_t episode, int64_t first_index, const std::vector<int64_t>& task_ids) const;
  // Statistics of every non-string feature, the standard ones included (see stats.h).
  std::map<std::string, FeatureStats> stats(int64_t episode, int64_t first_index, const std::vector<int64_t>& task_ids,
                                            const StatsOptions& options) const;

 private:
  std::vector<Slot> slots_;
  double fps_;
  int jpeg_quality_ = 0;
  int64_t size_ = 0;
  std::vector<std::vector<double>> numbers_;         // [slot] (frames x numel)
  std::vector<std::vector<std::string>> blobs_;      // [slot] strings or PNG bytes, per frame (none for video)
  std::vector<std::vector<PixelHistogram>> pixels_;  // [slot] per frame (camera slots)
  std::vector<double> timestamps_;
  std::vector<std::string> tasks_;                   // per frame; empty: the episode's task
};

}  // namespace ember::data::detail
