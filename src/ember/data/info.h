// LeRobot's meta/info.json (v2.0, v2.1, v3.0), parsed leniently: `fps` as int or float,
// `names` as null / list / dict / nested list (kept as JSON), the video block under `info`
// or the older `video_info`, unknown keys ignored.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ember::data {

struct VideoInfo {
  std::string codec;    // "av1", "h264", ... (empty when not stated)
  std::string pix_fmt;
  double fps = 0;
  int64_t width = 0, height = 0;
};

struct Feature {
  std::string key;               // e.g. "observation.state", "observation.images.top"
  std::string dtype;             // "float32", "int64", "bool", "string", "video", "image", ...
  std::vector<int64_t> shape;    // e.g. [8] or [height, width, 3]
  nlohmann::json names;          // as written: null, list, dict or nested list
  VideoInfo video;               // video features only
  bool is_video() const { return dtype == "video"; }
  bool is_image() const { return dtype == "image"; }
  bool is_camera() const { return is_video() || is_image(); }
  int64_t numel() const;
};

struct DatasetInfo {
  std::string codebase_version;  // "v2.0", "v2.1", "v3.0"
  int version_major = 0, version_minor = 0;
  std::string robot_type;
  double fps = 0;
  int64_t total_episodes = 0, total_frames = 0, total_tasks = 0;
  int64_t chunks_size = 1000;
  std::string data_path;         // template, e.g. "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
  std::string video_path;        // template; empty when the dataset has no videos
  std::vector<Feature> features; // in the file's order

  bool is_v3() const { return version_major >= 3; }
  const Feature* find(const std::string& key) const;
  std::vector<const Feature*> cameras() const;
};

// Parses `text`; `what` names the file for errors (kCorruption naming the field).
DatasetInfo parse_info(const std::string& text, const std::string& what);
// Reads ROOT/meta/info.json (kNotFound naming it when missing).
DatasetInfo read_info(const std::string& root);

}  // namespace ember::data
