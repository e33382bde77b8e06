#include "ember/data/info.h"

#include <cstdio>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/io/json.h"

namespace ember::data {

int64_t Feature::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

const Feature* DatasetInfo::find(const std::string& key) const {
  for (const Feature& f : features)
    if (f.key == key) return &f;
  return nullptr;
}

std::vector<const Feature*> DatasetInfo::cameras() const {
  std::vector<const Feature*> out;
  for (const Feature& f : features)
    if (f.is_camera()) out.push_back(&f);
  return out;
}

namespace {

using json = nlohmann::ordered_json;  // keeps the features in the file's order

[[noreturn]] void bad(const std::string& what, const std::string& field, const std::string& expected) {
  fail_corrupt(what + ": field '" + field + "' " + expected);
}

double number(const json& j, const std::string& what, const std::string& field) {
  if (!j.is_number()) bad(what, field, "must be a number, got " + std::string(j.type_name()));
  return j.get<double>();
}

int64_t integer(const json& j, const std::string& what, const std::string& field) {
  double v = number(j, what, field);
  if (v != double(int64_t(v))) bad(what, field, "must be a whole number");
  return int64_t(v);
}

std::string text(const json& j, const std::string& what, const std::string& field) {
  if (!j.is_string()) bad(what, field, "must be a string, got " + std::string(j.type_name()));
  return j.get<std::string>();
}

VideoInfo video_info(const json& block) {
  VideoInfo v;
  if (!block.is_object()) return v;
  auto get_num = [&](const char* k) { return block.contains(k) && block[k].is_number() ? block[k].get<double>() : 0.0; };
  auto get_str = [&](const char* k) { return block.contains(k) && block[k].is_string() ? block[k].get<std::string>() : std::string(); };
  v.codec = get_str("video.codec");
  v.pix_fmt = get_str("video.pix_fmt");
  v.fps = get_num("video.fps");
  v.width = int64_t(get_num("video.width"));
  v.height = int64_t(get_num("video.height"));
  return v;
}

}  // namespace

DatasetInfo parse_info(const std::string& body, const std::string& what) {
  json j = io::parse_ordered_json(body, what);
  if (!j.is_object()) fail_corrupt(what + ": expected a JSON object");
  DatasetInfo info;
  if (!j.contains("codebase_version")) bad(what, "codebase_version", "is missing");
  info.codebase_version = text(j["codebase_version"], what, "codebase_version");
  if (std::sscanf(info.codebase_version.c_str(), "v%d.%d", &info.version_major, &info.version_minor) < 1)
    bad(what, "codebase_version", "must look like v2.1 or v3.0, got '" + info.codebase_version + "'");
  if (info.version_major < 2)
    fail_unsupported(what + ": codebase_version " + info.codebase_version + " is not supported (ember reads v2.0 to v3.x)");
  if (j.contains("robot_type") && j["robot_type"].is_string()) info.robot_type = j["robot_type"].get<std::string>();
  if (!j.contains("fps")) bad(what, "fps", "is missing");
  info.fps = number(j["fps"], what, "fps");
  if (!(info.fps > 0)) bad(what, "fps", "must be positive");
  for (const char* k : {"total_episodes", "total_frames", "total_tasks", "chunks_size"}) {
    if (!j.contains(k)) continue;
    int64_t v = integer(j[k], what, k);
    if (v < 0) bad(what, k, "must not be negative");
    if (std::string(k) == "total_episodes") info.total_episodes = v;
    else if (std::string(k) == "total_frames") info.total_frames = v;
    else if (std::string(k) == "total_tasks") info.total_tasks = v;
    else info.chunks_size = v;
  }
  if (!j.contains("data_path")) bad(what, "data_path", "is missing");
  info.data_path = text(j["data_path"], what, "data_path");
  if (j.contains("video_path") && !j["video_path"].is_null()) info.video_path = text(j["video_path"], what, "video_path");
  if (!j.contains("features") || !j["features"].is_object()) bad(what, "features", "must be an object");
  for (const auto& item : j["features"].items()) {
    const std::string field = "features." + item.key();
    const json& f = item.value();
    if (!f.is_object()) bad(what, field, "must be an object");
    Feature feat;
    feat.key = item.key();
    if (!f.contains("dtype")) bad(what, field + ".dtype", "is missing");
    feat.dtype = text(f["dtype"], what, field + ".dtype");
    if (f.contains("shape")) {
      if (!f["shape"].is_array()) bad(what, field + ".shape", "must be a list");
      int64_t numel = 1;
      for (const json& s : f["shape"]) {
        int64_t n = integer(s, what, field + ".shape");
        // sizes beyond 2^31 (or a product beyond 2^40) describe no real feature and would
        // overflow the arithmetic that sizes buffers from them
        if (n < 0 || n > (int64_t(1) << 31) || (n > 0 && numel > (int64_t(1) << 40) / n))
          bad(what, field + ".shape", "must hold sizes from 0 to 2^31 whose product is at most 2^40");
        numel *= n;
        feat.shape.push_back(n);
      }
    }
    if (f.contains("names")) feat.names = nlohmann::json::parse(f["names"].dump());
    if (f.contains("info")) feat.video = video_info(f["info"]);
    else if (f.contains("video_info")) feat.video = video_info(f["video_info"]);
    info.features.push_back(std::move(feat));
  }
  if (info.video_path.empty())
    for (const Feature& f : info.features)
      if (f.is_video()) bad(what, "video_path", "is missing but feature '" + f.key + "' is a video");
  return info;
}

DatasetInfo read_info(const std::string& root) {
  std::string path = root + "/meta/info.json";
  std::vector<uint8_t> bytes;
  try {
    bytes = read_file(path);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kNotFound)
      fail(ErrorKind::kNotFound, path + ": not found (is " + root + " a LeRobot dataset?)");
    throw;
  }
  return parse_info(std::string(bytes.begin(), bytes.end()), path);
}

}  // namespace ember::data
