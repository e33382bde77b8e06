// Writes LeRobot datasets (v3.0 by default, v2.1 on request) the way LeRobot's recorder
// (LeRobotDataset.create / add_frame / save_episode / finalize) lays them out:
//
//   auto w = DatasetWriter::create("out/ds", 30, features, "so100");
//   for (...) { w.add_frame(frame); ...; w.save_episode("pick up the cube"); }
//   w.finalize();  // out/ds appears, complete, only now
//
// Layout:
//   v3.0  data/chunk-XXX/file-YYY.parquet   episodes appended, one row group each; a file rolls
//                                           to the next once it would pass data_file_size_mb
//         meta/info.json, meta/stats.json, meta/tasks.parquet (task_index + pandas index task),
//         meta/episodes/chunk-000/file-000.parquet (episode_index, tasks, length, data/...,
//         dataset_from/to_index, stats/<feature>/<stat>, meta/episodes/...)
//         videos/<key>/chunk-XXX/file-YYY.mp4   per video camera, episodes joined one after
//                                           another (no re-encoding); a file rolls to the next
//                                           once the next episode would bring it to
//                                           video_file_size_mb; each episode's span in it is
//                                           meta/episodes' videos/<key>/{from,to}_timestamp
//   v2.1  data/chunk-XXX/episode_NNNNNN.parquet (one per episode), meta/info.json,
//         meta/episodes.jsonl, meta/episodes_stats.jsonl, meta/tasks.jsonl, meta/stats.json,
//         videos/chunk-XXX/<key>/episode_NNNNNN.mp4 (one per episode and video camera)
// Data tables hold the user's features in the given order, then timestamp (float32),
// frame_index, episode_index, index and task_index (int64): numeric shape [1] as a scalar
// column, shape [d] as list<element> (what pyarrow writes for a list), strings as string,
// cameras of dtype "image" as struct<bytes: binary (PNG), path: string>; cameras of dtype
// "video" are not in the data table but encoded frame by frame as add_frame() receives them
// (options.video: LeRobot's libsvtav1, yuv420p, g=2, crf=30, falling back to libx264), and
// info.json's feature gets LeRobot's "info" block (video.codec, video.pix_fmt, ...).
// Statistics: see stats.h (every non-string feature, the five standard ones included).
//
// Nothing half-written: everything goes to "<root>.tmp-<pid>" and is renamed to root by
// finalize(). A writer destroyed before finalize() removes its temporary directory. An existing
// root is refused (kInvalidArgument) unless options.overwrite, in which case it is replaced only
// at finalize(). After a failed write (kIO) the writer is unusable: later calls fail.
//
// Video features need ember built with FFmpeg (io::video_support_available()); without it they
// are refused (kUnsupported). Numeric features of more than one dimension are refused.
// A DatasetWriter is not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/data/info.h"
#include "ember/data/metadata.h"
#include "ember/data/stats.h"
#include "ember/io/parquet/format.h"
#include "ember/io/png.h"
#include "ember/io/video/video_encoder.h"

namespace ember::data {

enum class DatasetVersion { kV2_1, kV3_0 };

struct WriterOptions {
  DatasetVersion version = DatasetVersion::kV3_0;
  // v3.0: a data file takes episodes until adding the next would reach this size (LeRobot's
  // data_files_size_in_mb; sizes are the tables' encoded bytes before compression).
  double data_file_size_mb = 100;
  // v3.0: a camera's video file takes episodes until adding the next would reach this size
  // (LeRobot's video_files_size_in_mb; the per-episode files' sizes).
  double video_file_size_mb = 200;
  int64_t chunks_size = 1000;       // files per chunk directory
  bool overwrite = false;           // replace an existing root at finalize()
  io::parquet::Codec codec = io::parquet::Codec::kSnappy;
  // Image cells: PNG (0, LeRobot's) or JPEG at this quality (1..100, ember's training shards).
  int jpeg_quality = 0;
  // v3.0: an episode's rows go in row groups of at most this many rows (0: one row group per
  // episode, as LeRobot), so that a reader can fetch one frame's images without the episode's.
  int64_t rows_per_group = 0;
  StatsOptions stats;
  // How video cameras are encoded: codec (and fallback), pix_fmt, gop, crf, preset, threads.
  // width, height and the frame rate are ignored: they come from each feature and fps.
  io::EncoderOptions video;
};

// One frame. Keys are feature keys; every user feature must be present, nothing else.
struct Frame {
  // numeric features: numel(shape) values; int64/int32 features whole numbers (int64 exact up to
  // 2^53), bool features 0 or 1, float32 features rounded to float when stored
  std::map<std::string, std::vector<double>> values;
  std::map<std::string, io::Image> images;            // image and video features: RGB of the feature's size
  std::map<std::string, std::string> strings;         // string features
  std::optional<double> timestamp;                    // seconds; default frame_index / fps
  std::string task;                                   // empty: the task given to save_episode
};

class DatasetWriter {
 public:
  // Checks the arguments and creates the temporary directory. `features` are the user's
  // (LeRobot's five standard features are added; if given, they must match LeRobot's).
  // Image and video features have shape [height, width, 3] (or [3, height, width]); video
  // sizes must suit options.video.pix_fmt (even for yuv420p).
  // Throws kInvalidArgument (bad feature, existing root, fps <= 0, odd video size),
  // kUnsupported (video without FFmpeg, numeric features of rank > 1, unknown dtype), kIO.
  static DatasetWriter create(const std::string& root, double fps, std::vector<Feature> features,
                              const std::string& robot_type = "", WriterOptions options = {});

  // A moved-from writer may only be destroyed or assigned to.
  DatasetWriter(DatasetWriter&&) noexcept;
  DatasetWriter& operator=(DatasetWriter&&) noexcept;
  ~DatasetWriter();

  // Buffers one frame of the current episode (images are PNG- or JPEG-encoded here, video frames
  // encoded). Throws kInvalidArgument naming the feature (missing, unknown, wrong size or
  // type); the frame is then not added and the writer stays usable. A failure to encode a
  // video frame (kIO) makes the writer unusable.
  void add_frame(const Frame& frame);
  // Writes the buffered frames as the next episode and returns its index. `task` applies to
  // frames that name none. Throws kInvalidArgument when no frame is buffered or a frame has no
  // task (nothing written; the buffer is kept), kIO on write failure.
  int64_t save_episode(const std::string& task = "");
  // Drops the buffered frames.
  void clear_episode();
  // Writes the metadata and renames the temporary directory to root. Throws kInvalidArgument
  // when frames are buffered but not saved or no episode was saved (the writer stays usable),
  // kInvalidArgument if root appeared meanwhile (without overwrite), kIO.
  void finalize();

  int64_t num_episodes() const;
  int64_t num_frames() const;          // saved frames
  int64_t buffered_frames() const;     // frames of the current, unsaved episode
  const std::string& root() const;
  const std::string& temp_root() const;
  const DatasetInfo& info() const;     // features include the standard five; totals so far
  // Per saved episode: feature key -> statistics (what episodes_stats holds).
  const std::vector<std::map<std::string, FeatureStats>>& episode_stats() const;

 private:
  struct Impl;
  explicit DatasetWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::data
