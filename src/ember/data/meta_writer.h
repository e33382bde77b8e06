// Internal to DatasetWriter: the metadata files of a LeRobot dataset (info.json, tasks,
// episodes, episode statistics), in the layout and field order LeRobot writes them.
// Each function writes one file atomically into `root` (a directory that must exist or is
// created) and throws kIO naming the file on failure.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/data/info.h"
#include "ember/data/metadata.h"
#include "ember/io/column.h"
#include "ember/io/parquet/format.h"

namespace ember::data::detail {

struct EpisodeRecord {
  int64_t index = 0, length = 0;
  std::vector<std::string> tasks;
  int64_t data_chunk = 0, data_file = 0;  // v3.0 data file
  int64_t from_index = 0, to_index = 0;   // global frames [from, to)
  std::map<std::string, VideoSpan> videos;  // v3.0: by video camera key, where its frames lie
  std::map<std::string, FeatureStats> stats;
};

// info.json as LeRobot's create_empty_dataset_info orders it (v3.0 or v2.1), with the totals.
// `data_file_size_mb` / `video_file_size_mb` are written for v3.0 only; v2.1's total_videos is
// the number of video features times total_episodes. Video features whose info.video.codec is
// set get LeRobot's "info" block (video.height, ..., has_audio).
nlohmann::ordered_json info_json(const DatasetInfo& info, double data_file_size_mb, double video_file_size_mb,
                                 int64_t total_chunks);
void write_json_file(const std::string& path, const nlohmann::ordered_json& j);

// v3.0: meta/tasks.parquet (task_index, task; pandas index "task") and
// meta/episodes/chunk-000/file-000.parquet (with videos/<key>/{chunk_index, file_index,
// from_timestamp, to_timestamp} for every video feature; every episode must have a span for
// each, and the statistics the first episode has: kInvalidArgument naming what is missing).
void write_tasks_parquet(const std::string& root, const std::vector<std::string>& tasks, io::parquet::Codec codec);
void write_episodes_parquet(const std::string& root, const std::vector<EpisodeRecord>& episodes,
                            const std::vector<Feature>& features, io::parquet::Codec codec);
// v2.1: meta/tasks.jsonl, meta/episodes.jsonl, meta/episodes_stats.jsonl.
void write_tasks_jsonl(const std::string& root, const std::vector<std::string>& tasks);
void write_episodes_jsonl(const std::string& root, const std::vector<EpisodeRecord>& episodes,
                          const std::vector<Feature>& features);

// Bytes a column's values take in a Parquet file before compression (values, string lengths).
int64_t encoded_bytes(const io::Column& c);

}  // namespace ember::data::detail
