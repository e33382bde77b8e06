// Frame access to a LeRobot dataset, as LeRobot's LeRobotDataset gives it: item i holds every
// non-camera feature of global frame i, its task string, and each camera's image.
// delta_timestamps per key return values stacked over time offsets (multiples of 1/fps),
// clamped to the episode, with a `<key>_is_pad` mask, exactly as LeRobot does.
//
// Video cameras decode through the video layer (src/ember/io/video): the frame nearest
// from_timestamp + timestamp in the camera's file, within tolerance_s. Built without FFmpeg,
// opening a dataset with video cameras fails with an error that says so.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ember/data/metadata.h"
#include "ember/io/column.h"
#include "ember/io/parquet/reader.h"
#include "ember/core/thread_pool.h"
#include "ember/io/nvjpeg.h"
#include "ember/io/png.h"
#include "ember/io/video/video_cache.h"

namespace ember::data {

struct DatasetOptions {
  // key -> time offsets in seconds (e.g. "action" -> {0, 1/fps, ..., 49/fps})
  std::map<std::string, std::vector<double>> delta_timestamps;
  double tolerance_s = 1e-4;
  size_t episode_cache = 16;  // decoded episode tables kept in memory
  bool decode_images = true;  // decode camera frames (PNG images and videos)
  size_t video_decoders = 16; // idle video decoders kept open (LRU)
  // resize video frames, decoded at their stored size, with io::resize_bilinear: the resize
  // shards are packed with and the policy's processor applies to every other frame (PNG
  // cameras, a served or simulated observation), so training and inference see one filter
  // (libswscale's scaling in the decoder blurred more when shrinking); 0, 0: as stored
  int image_width = 0, image_height = 0;
  size_t threads = 0;         // decode threads for the cameras of one item (0: one per core)
  // Read camera images one Parquet row group at a time (the frame's group, image columns only)
  // rather than with the episode's rows, keeping groups in memory up to image_cache_bytes:
  // for ember's training shards (shard_pack.h), whose episodes are split in small row groups.
  // Image cells may hold PNG or JPEG bytes either way.
  bool images_by_row_group = false;
  size_t image_cache_bytes = size_t(256) << 20;
  // JPEG image cells read by row group decoded on the GPU by nvJPEG (io/nvjpeg.h), an item's
  // frames in one batch; null: libjpeg-turbo (--dataset.jpeg_decoder). Not owned.
  io::NvJpeg* nvjpeg = nullptr;
  // The local file to open for a data file's path (remote shards: fetched first, blocking);
  // empty: the path itself. Must be thread-safe.
  std::function<std::string(const std::string&)> localize;
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
  std::map<std::string, std::vector<io::Image>> images;    // cameras -> one per offset
};

class Dataset {
 public:
  // Loads the metadata; throws Error naming the file at fault. Checks every delta_timestamps
  // key exists and every offset is a multiple of 1/fps within tolerance.
  explicit Dataset(const std::string& root, DatasetOptions options = {});
  // The same on metadata already loaded (load_metadata), so a caller reads it once.
  Dataset(Metadata meta, DatasetOptions options);

  const Metadata& meta() const { return meta_; }
  int64_t size() const { return meta_.num_frames(); }
  // Item `index` (kInvalidArgument when out of range). Thread-safe.
  Item get(int64_t index) const;

 private:
  struct EpisodeRows;  // one episode's decoded rows
  struct ImageGroup;   // one row group's image columns (images_by_row_group)
  std::shared_ptr<const io::parquet::FileReader> reader(const std::string& path) const;
  std::shared_ptr<const ImageGroup> image_group(const std::string& path, int64_t row) const;
  // The encoded image of camera `key` at global frame q of episode e (images_by_row_group).
  std::string image_cell(const Episode& e, const std::string& key, int64_t q) const;
  std::shared_ptr<const EpisodeRows> rows(const Episode& e) const;
  // Frames of a video camera at the given episode-relative timestamps.
  std::vector<io::Image> video_frames(const Episode& e, const std::string& camera, const std::vector<double>& ts) const;
  // The task of row `row` of an episode's rows: from the task_index column, or, where the
  // data has none, the episode's one task (saying so once on stderr).
  std::string task_of(const Episode& ep, const io::Table& t, int64_t row, const std::string& data_path) const;
  // How much later than from_timestamp the episode's first frame really is in its file
  // (concatenated files place each part at a rounded duration; LeRobot's converter joins
  // them with FFmpeg's concat demuxer), learnt once per file from its packets.
  double start_correction(const std::string& path, double from_timestamp) const;

  Metadata meta_;
  DatasetOptions options_;
  std::map<std::string, std::vector<int64_t>> delta_frames_;  // key -> frame offsets
  std::map<std::pair<int64_t, int64_t>, int64_t> file_start_; // (chunk, file) -> first global index (v3.0)
  mutable std::mutex mu_;
  mutable std::list<std::pair<int64_t, std::shared_ptr<const EpisodeRows>>> cache_;  // most recent first
  mutable std::map<std::string, std::vector<double>> frame_times_;  // video path -> frame timestamps
  mutable std::list<std::pair<std::string, std::shared_ptr<const io::parquet::FileReader>>> readers_;  // most recent first
  mutable std::list<std::shared_ptr<const ImageGroup>> groups_;  // most recent first
  mutable size_t group_bytes_ = 0;
  std::unique_ptr<io::VideoCache> videos_;
  std::unique_ptr<ThreadPool> pool_;
  mutable std::once_flag task_note_;  // the note that frames take their episode's task
};

}  // namespace ember::data
