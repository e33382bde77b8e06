#include "ember/data/check.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "ember/core/error.h"
#include "ember/data/metadata.h"
#include "ember/io/parquet/reader.h"
#include "ember/io/video/video_decoder.h"

namespace ember::data {

double episode_start_correction(const std::vector<double>& times, double from_timestamp, double fps) {
  if (from_timestamp <= 0 || times.empty()) return 0;
  double half = 0.5 / fps;
  auto first = std::lower_bound(times.begin(), times.end(), from_timestamp - half);
  if (first == times.end() || *first - from_timestamp > half) return 0;
  return *first - from_timestamp;
}

namespace {

struct Checker {
  const Metadata& m;
  double tol;
  CheckReport& report;

  void problem(const std::string& file, const std::string& msg) { report.problems.push_back({file, msg}); }

  // An int64 column's values, or empty with a problem noted.
  std::vector<int64_t> ints(const io::Table& t, const char* name, const std::string& file) {
    const io::Column* c = t.find(name);
    if (!c) {
      problem(file, std::string("column '") + name + "' is missing");
      return {};
    }
    if (c->type != io::TypeId::kInt64 || c->null_count() > 0) {
      problem(file, std::string("column '") + name + "' is " + io::type_string(*c) + ", expected int64 without nulls");
      return {};
    }
    auto d = c->data<int64_t>();
    return {d.begin(), d.end()};
  }

  void data_file(const std::string& path, const std::vector<const Episode*>& eps) {
    std::unique_ptr<io::parquet::FileReader> reader;
    io::Table t;
    try {
      reader = io::parquet::FileReader::open(path);
      t = reader->read();
    } catch (const Error& e) {
      problem(path, e.what());
      return;
    }
    int64_t expected = 0;
    for (const Episode* e : eps) expected += e->length;
    if (t.num_rows() != expected) {
      problem(path, "holds " + std::to_string(t.num_rows()) + " rows, its episodes have " + std::to_string(expected) + " frames");
      return;
    }
    for (const Feature& f : m.info.features)
      if (!f.is_video() && !t.find(f.key)) problem(path, "column '" + f.key + "' (a feature in info.json) is missing");
    std::vector<int64_t> index = ints(t, "index", path), episode = ints(t, "episode_index", path),
                         frame = ints(t, "frame_index", path);
    const io::Column* ts = t.find("timestamp");
    int64_t row = 0;
    for (const Episode* e : eps) {
      int64_t bad_index = -1, bad_episode = -1, bad_frame = -1, bad_time = -1;
      for (int64_t k = 0; k < e->length; ++k, ++row) {
        if (!index.empty() && index[size_t(row)] != e->from_index + k && bad_index < 0) bad_index = k;
        if (!episode.empty() && episode[size_t(row)] != e->index && bad_episode < 0) bad_episode = k;
        if (!frame.empty() && frame[size_t(row)] != k && bad_frame < 0) bad_frame = k;
        if (ts && ts->is_valid(row) && bad_time < 0) {
          double v = ts->type == io::TypeId::kFloat ? ts->value<float>(row) : ts->type == io::TypeId::kDouble ? ts->value<double>(row) : NAN;
          if (!(std::abs(v - double(k) / m.info.fps) <= tol)) bad_time = k;
        }
      }
      std::string ep = "episode " + std::to_string(e->index);
      if (bad_index >= 0) problem(path, ep + " frame " + std::to_string(bad_index) + ": 'index' is not contiguous from " + std::to_string(e->from_index));
      if (bad_episode >= 0) problem(path, ep + " frame " + std::to_string(bad_episode) + ": 'episode_index' differs");
      if (bad_frame >= 0) problem(path, ep + " frame " + std::to_string(bad_frame) + ": 'frame_index' is not " + std::to_string(bad_frame));
      if (bad_time >= 0)
        problem(path, ep + " frame " + std::to_string(bad_time) + ": 'timestamp' is not frame_index / fps (" +
                          std::to_string(m.info.fps) + " fps) within " + std::to_string(tol) + " s");
    }
  }

  void video_file(const std::string& path, const std::string& camera, const std::vector<const Episode*>& eps) {
    std::vector<double> times;
    try {
      io::VideoDecoder dec(path);
      times = dec.frame_timestamps();
    } catch (const Error& e) {
      problem(path, e.what());
      return;
    }
    if (times.empty()) {
      problem(path, "has no frames");
      return;
    }
    for (const Episode* e : eps) {
      const VideoSpan& span = e->videos.at(camera);
      double shift = span.from_timestamp + episode_start_correction(times, span.from_timestamp, m.info.fps);
      for (int64_t k = 0; k < e->length; ++k) {
        double t = shift + double(k) / m.info.fps;
        auto it = std::lower_bound(times.begin(), times.end(), t);
        double best = 1e300;
        if (it != times.end()) best = std::abs(*it - t);
        if (it != times.begin()) best = std::min(best, std::abs(*std::prev(it) - t));
        if (best > tol) {
          problem(path, "episode " + std::to_string(e->index) + " frame " + std::to_string(k) + " at " + std::to_string(t) +
                            " s: no video frame within " + std::to_string(tol) + " s (nearest is " + std::to_string(best) +
                            " s away; the video has " + std::to_string(times.size()) + " frames up to " +
                            std::to_string(times.back()) + " s)");
          break;  // one line per episode is enough
        }
      }
    }
  }
};

}  // namespace

CheckReport check_dataset(const std::string& root, double tol, const std::function<void(int64_t, int64_t)>& progress) {
  CheckReport report;
  Metadata m;
  try {
    m = load_metadata(root);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kNotFound && !std::filesystem::exists(root)) throw;  // a bad path: a user error
    report.problems.push_back({root, e.what()});
    return report;
  }
  report.episodes = int64_t(m.episodes.size());
  report.frames = m.num_frames();
  // group episodes by the files that hold them
  std::map<std::string, std::vector<const Episode*>> data;
  std::map<std::pair<std::string, std::string>, std::vector<const Episode*>> video;  // (path, camera)
  for (const Episode& e : m.episodes) {
    data[m.data_file(e)].push_back(&e);
    for (const Feature* cam : m.info.cameras())
      if (cam->is_video()) video[{m.video_file(e, cam->key), cam->key}].push_back(&e);
  }
  report.data_files = int64_t(data.size());
  report.video_files = int64_t(video.size());
  bool videos_ok = video.empty() || io::video_support_available();
  if (!videos_ok)
    report.problems.push_back({root, "cannot check " + std::to_string(video.size()) +
                                         " video files: ember was built without video support (FFmpeg not found at build time)"});
  int64_t total = int64_t(data.size()) + (videos_ok ? int64_t(video.size()) : 0), done = 0;
  Checker c{m, tol, report};
  for (const auto& [path, eps] : data) {
    c.data_file(path, eps);
    if (progress) progress(++done, total);
  }
  if (videos_ok) {
    for (const auto& [key, eps] : video) {
      c.video_file(key.first, key.second, eps);
      if (progress) progress(++done, total);
    }
  }
  return report;
}

}  // namespace ember::data
