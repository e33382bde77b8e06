// Converting a LeRobot v2.1 dataset to v3.0, as LeRobot's converter
// (lerobot/datasets/v30/convert_dataset_v21_to_v30.py) lays the result out:
//   data/chunk-XXX/file-YYY.parquet        the episodes' tables appended, one row group per
//                                          episode; a file takes episodes until the next would
//                                          bring it to data_file_size_mb (the source files'
//                                          uncompressed Parquet sizes, as LeRobot measures)
//   videos/<key>/chunk-XXX/file-YYY.mp4    per camera (in sorted key order), the episodes'
//                                          MP4s joined with io::concat_videos, without
//                                          re-encoding, rolling past video_file_size_mb
//   meta/episodes/chunk-000/file-000.parquet  episode_index, tasks, length, data/{chunk,file}_index,
//                                          dataset_from/to_index, videos/<key>/{chunk_index,
//                                          file_index, from_timestamp, to_timestamp} (the spans
//                                          concat_videos returns: frame k of an episode is at
//                                          exactly from_timestamp + k / fps), stats/<feature>/<stat>
//                                          from episodes_stats.jsonl, meta/episodes/...
//   meta/tasks.parquet, meta/stats.json (copied; aggregated from episodes_stats when absent)
//   meta/info.json                         the source's, with codebase_version "v3.0", the v3.0
//                                          data_path / video_path templates, data_files_size_in_mb,
//                                          video_files_size_in_mb, integer fps and "fps" on every
//                                          non-video feature; total_chunks / total_videos dropped
//
// One deliberate difference: LeRobot's converter records the episode that starts a new data
// file under the previous file's index (and skips file 0 when the first episode alone passes
// the limit); ember records where the rows really are.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "ember/io/parquet/format.h"

namespace ember::data {

struct ConvertOptions {
  double data_file_size_mb = 100;   // LeRobot's DEFAULT_DATA_FILE_SIZE_IN_MB
  double video_file_size_mb = 200;  // LeRobot's DEFAULT_VIDEO_FILE_SIZE_IN_MB
  int64_t chunks_size = 1000;       // files per chunk directory (LeRobot's DEFAULT_CHUNK_SIZE)
  io::parquet::Codec codec = io::parquet::Codec::kSnappy;
  // Called after each step with (stage, steps done, steps total); stage is "data",
  // "videos/<key>" or "metadata". May be empty.
  std::function<void(const std::string& stage, int64_t done, int64_t total)> progress;
};

struct ConvertReport {
  int64_t episodes = 0, frames = 0, data_files = 0, video_files = 0;
};

// Converts the v2.1 dataset at src into a new v3.0 dataset at dst. Everything is written to
// "<dst>.tmp-<pid>-<n>" and renamed to dst only when complete; on any error nothing is left at
// dst and the temporary directory is removed. src is only read.
// Throws Error: kInvalidArgument when dst exists or src is not v2.1 (or options are bad);
// kNotFound naming a data, video or metadata file of src that is missing (checked before
// anything is written); kCorruption / kUnsupported from reading src (naming the file);
// kUnsupported for video cameras when ember was built without FFmpeg; kIO. Thread-safe for
// distinct dst.
ConvertReport convert_v21_to_v30(const std::string& src, const std::string& dst, const ConvertOptions& options = {});

}  // namespace ember::data
