// Frame access to a LeRobot dataset, as LeRobot's LeRobotDataset gives it: item i holds every
// non-camera feature of global frame i, its task string, and each camera's image.
// delta_timestamps per key return values stacked over time offsets (multiples of 1/fps),
// clamped to the episode, with a `<key>_is_pad` mask, exactly as LeRobot does.
//
// This file covers the tabular features and `image` cameras (PNG in the table); video cameras
// are decoded by the video layer (src/ember/io/video) when ember is built with FFmpeg.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ember/data/metadata.h"
#include "ember/io/column.h"
#include "ember/io/png.h"

namespace ember::data {

struct DatasetOptions {
  // key -> time offsets in seconds (e.g. "action" -> {0, 1/fps, ..., 49/fps})
  std::map<std::string, std::vector<double>> delta_timestamps;
  double tolerance_s = 1e-4;
  size_t episode_cache = 16;  // decoded episode tables kept in memory
  bool decode_images = true;  // decode `image` features (PNG)
};

// A feature's values for one item: [n_offsets, ...shape] when the key has delta_timestamps,
// else [...shape]. Values as double (exact for float32, int32, bool and int64 below 2^53).
struct Value {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<double> data;
};

struct Item {
  int64_t index = 0, episode_index = 0, frame_index = 0;
  double timestamp = 0;
  std::string task;
  std::map<std::string, Value> values;                     // non-camera features
  std::map<std::string, std::vector<uint8_t>> is_pad;      // key -> [n_offsets] (keys with deltas)
  std::map<std::string, std::vector<io::Image>> images;    // image cameras -> one per offset
};

class Dataset {
 public:
  // Loads the metadata; throws Error naming the file at fault. Checks every delta_timestamps
  // key exists and every offset is a multiple of 1/fps within tolerance.
  explicit Dataset(const std::string& root, DatasetOptions options = {});

  const Metadata& meta() const { return meta_; }
  int64_t size() const { return meta_.num_frames(); }
  // Item `index` (kInvalidArgument when out of range). Thread-safe.
  Item get(int64_t index) const;

 private:
  struct EpisodeRows;  // one episode's decoded rows
  std::shared_ptr<const EpisodeRows> rows(const Episode& e) const;

  Metadata meta_;
  DatasetOptions options_;
  std::map<std::string, std::vector<int64_t>> delta_frames_;  // key -> frame offsets
  std::map<std::pair<int64_t, int64_t>, int64_t> file_start_; // (chunk, file) -> first global index (v3.0)
  mutable std::mutex mu_;
  mutable std::list<std::pair<int64_t, std::shared_ptr<const EpisodeRows>>> cache_;  // most recent first
};

}  // namespace ember::data
