// A LeRobot dataset's metadata: info.json, episodes, tasks and statistics, for v2.0, v2.1
// (meta/*.jsonl, one data file per episode) and v3.0 (meta/episodes/*.parquet, many episodes
// per data and video file). Paths come from info.json's templates, never from fixed patterns.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ember/data/info.h"

namespace ember::data {

// Where one camera's frames of an episode live (v3.0: a span of a concatenated file).
struct VideoSpan {
  int64_t chunk = 0, file = 0;
  double from_timestamp = 0, to_timestamp = 0;
};

struct Episode {
  int64_t index = 0;
  int64_t length = 0;                       // frames
  std::vector<std::string> tasks;
  int64_t from_index = 0, to_index = 0;     // global frame range [from, to)
  int64_t data_chunk = 0, data_file = 0;    // v3.0 data file (v2.x: chunk of the episode)
  std::map<std::string, VideoSpan> videos;  // by camera key (v3.0; v2.x spans start at 0)
  // The episode's own statistics (v2.1 episodes_stats.jsonl, v3.0 stats/* columns); empty
  // when the dataset has none (v2.0).
  std::map<std::string, std::map<std::string, std::vector<double>>> stats;
};

// Per feature: statistic name ("mean", "std", "min", "max", "q01", "q99", "count", ...) ->
// values flattened in row-major order of the feature's shape.
using FeatureStats = std::map<std::string, std::vector<double>>;

struct Metadata {
  std::string root;
  DatasetInfo info;
  std::vector<Episode> episodes;              // by episode index
  std::vector<std::string> tasks;             // by task_index
  std::vector<int64_t> missing_tasks;         // indices below tasks.size() that the task file leaves out
  std::map<std::string, FeatureStats> stats;  // meta/stats.json (empty when absent)

  // Path of the data file that holds the episode's rows, and of a camera's video.
  std::string data_file(const Episode& e) const;
  std::string video_file(const Episode& e, const std::string& camera) const;
  // The task string of task_index k; kCorruption "<where>: task_index k has no task in
  // <task file>" when the task file does not define it (never an empty task in silence).
  const std::string& task(int64_t k, const std::string& where) const;
  // meta/tasks.jsonl (v2.x) or meta/tasks.parquet (v3.0).
  std::string tasks_file() const;
  // The episode that holds global frame `index` (kInvalidArgument when out of range).
  const Episode& episode_of(int64_t index) const;
  int64_t num_frames() const { return episodes.empty() ? 0 : episodes.back().to_index; }
};

// Reads a v2.1 meta/episodes_stats.jsonl: episode index -> feature -> statistics.
std::map<int64_t, std::map<std::string, FeatureStats>> read_episodes_stats_jsonl(const std::string& path);

// Loads everything under ROOT/meta; throws Error naming the file and field at fault,
// including info.json totals that contradict the episode tables (unless check_totals is
// false: `ember data check --fix` loads a dataset that way to repair them).
Metadata load_metadata(const std::string& root, bool check_totals = true);

}  // namespace ember::data
