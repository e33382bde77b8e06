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
//   v2.1  data/chunk-XXX/episode_NNNNNN.parquet (one per episode), meta/info.json,
//         meta/episodes.jsonl, meta/episodes_stats.jsonl, meta/tasks.jsonl, meta/stats.json
// Data tables hold the user's features in the given order, then timestamp (float32),
// frame_index, episode_index, index and task_index (int64): numeric shape [1] as a scalar
// column, shape [d] as list<element> (what pyarrow writes for a list), strings as string,
// cameras of dtype "image" as struct<bytes: binary (PNG), path: string>.
// Statistics: see stats.h (every non-string feature, the five standard ones included).
//
// Nothing half-written: everything goes to "<root>.tmp-<pid>" and is renamed to root by
// finalize(). A writer destroyed before finalize() removes its temporary directory. An existing
// root is refused (kInvalidArgument) unless options.overwrite, in which case it is replaced only
// at finalize(). After a failed write (kIO) the writer is unusable: later calls fail.
//
// Current limitation: features of dtype "video" are refused (kUnsupported): video encoding is
// not available yet; use "image" features. Numeric features of more than one dimension are
// refused too. A DatasetWriter is not thread-safe.
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

namespace ember::data {

enum class DatasetVersion { kV2_1, kV3_0 };

struct WriterOptions {
  DatasetVersion version = DatasetVersion::kV3_0;
  // v3.0: a data file takes episodes until adding the next would reach this size (LeRobot's
  // data_files_size_in_mb; sizes are the tables' encoded bytes before compression).
  double data_file_size_mb = 100;
  double video_file_size_mb = 200;  // written to info.json only (no video yet)
  int64_t chunks_size = 1000;       // files per chunk directory
  bool overwrite = false;           // replace an existing root at finalize()
  io::parquet::Codec codec = io::parquet::Codec::kSnappy;
  StatsOptions stats;
};

// One frame. Keys are feature keys; every user feature must be present, nothing else.
struct Frame {
  // numeric features: numel(shape) values; int64/int32 features whole numbers (int64 exact up to
  // 2^53), bool features 0 or 1, float32 features rounded to float when stored
  std::map<std::string, std::vector<double>> values;
  std::map<std::string, io::Image> images;            // image features: RGB of the feature's size
  std::map<std::string, std::string> strings;         // string features
  std::optional<double> timestamp;                    // seconds; default frame_index / fps
  std::string task;                                   // empty: the task given to save_episode
};

class DatasetWriter {
 public:
  // Checks the arguments and creates the temporary directory. `features` are the user's
  // (LeRobot's five standard features are added; if given, they must match LeRobot's).
  // Image features have shape [height, width, 3] (or [3, height, width]).
  // Throws kInvalidArgument (bad feature, existing root, fps <= 0), kUnsupported (video,
  // numeric features of rank > 1, unknown dtype), kIO.
  static DatasetWriter create(const std::string& root, double fps, std::vector<Feature> features,
                              const std::string& robot_type = "", WriterOptions options = {});

  // A moved-from writer may only be destroyed or assigned to.
  DatasetWriter(DatasetWriter&&) noexcept;
  DatasetWriter& operator=(DatasetWriter&&) noexcept;
  ~DatasetWriter();

  // Buffers one frame of the current episode (images are PNG-encoded here). Throws
  // kInvalidArgument naming the feature (missing, unknown, wrong size or type); the frame is
  // then not added and the writer stays usable.
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
