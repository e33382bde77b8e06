#include "ember/data/check.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/data/metadata.h"
#include "ember/io/json.h"
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

namespace fs = std::filesystem;

// The leaf type a feature's dtype is stored as (Parquet has no int8/int16 of its own: they
// arrive as int32).
bool stored_as(const std::string& dtype, io::TypeId leaf) {
  using io::TypeId;
  if (dtype == "float32") return leaf == TypeId::kFloat;
  if (dtype == "float64") return leaf == TypeId::kDouble;
  if (dtype == "int64") return leaf == TypeId::kInt64;
  if (dtype == "int32" || dtype == "int16" || dtype == "int8" || dtype == "uint8" || dtype == "uint16")
    return leaf == TypeId::kInt32;
  if (dtype == "bool") return leaf == TypeId::kBool;
  if (dtype == "string") return leaf == TypeId::kString;
  return true;  // a dtype ember does not know: nothing to compare
}

const io::Column& leaf_of(const io::Column& c) { return c.type == io::TypeId::kList ? leaf_of(c.child()) : c; }

// Whether row r of c, or anything nested in it, is null.
bool has_null(const io::Column& c, int64_t r) {
  if (!c.is_valid(r)) return true;
  if (c.type == io::TypeId::kList) {
    for (int64_t k = c.offsets[size_t(r)]; k < c.offsets[size_t(r) + 1]; ++k)
      if (has_null(c.child(), k)) return true;
  }
  return false;
}

// How many leaf values row r of c holds.
int64_t leaf_count(const io::Column& c, int64_t r) {
  if (c.type != io::TypeId::kList) return 1;
  int64_t n = 0;
  for (int64_t k = c.offsets[size_t(r)]; k < c.offsets[size_t(r) + 1]; ++k) n += leaf_count(c.child(), k);
  return n;
}

std::string frame_of(const Episode& e, int64_t k) { return "episode " + std::to_string(e.index) + " frame " + std::to_string(k); }

struct Checker {
  const Metadata& m;
  const CheckOptions& opt;
  CheckReport& report;

  void problem(const std::string& file, const std::string& msg) { report.problems.push_back({file, msg}); }
  void warning(const std::string& file, const std::string& msg) { report.warnings.push_back({file, msg}); }

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

  // Every row of a non-camera feature: no nulls, as many values as info.json's shape.
  void feature_rows(const std::string& path, const Feature& f, const io::Column& c, const std::vector<const Episode*>& eps) {
    const io::Column& leaf = leaf_of(c);
    if (!stored_as(f.dtype, leaf.type))
      warning(path, "column '" + f.key + "' is stored as " + io::type_string(c) + ", info.json declares " + f.dtype);
    if (leaf.type == io::TypeId::kString || leaf.type == io::TypeId::kBinary || leaf.type == io::TypeId::kStruct) return;
    int64_t want = std::max<int64_t>(1, f.numel()), nulls = 0, wrong = 0, row = 0;
    std::string first_null, first_wrong;
    for (const Episode* e : eps) {
      for (int64_t k = 0; k < e->length; ++k, ++row) {
        if (has_null(c, row)) {
          if (nulls++ == 0) first_null = frame_of(*e, k);
          continue;
        }
        if (int64_t n = leaf_count(c, row); n != want && wrong++ == 0)
          first_wrong = frame_of(*e, k) + " holds " + std::to_string(n) + " values";
      }
    }
    if (nulls > 0)
      problem(path, "column '" + f.key + "' holds nulls in " + std::to_string(nulls) + " rows (first: " + first_null + ")");
    if (wrong > 0)
      problem(path, "column '" + f.key + "': " + std::to_string(wrong) + " rows do not hold the " + std::to_string(want) +
                        " values of info.json's shape (first: " + first_wrong + ")");
  }

  // task_index of every row names a task of the task table; without the column (some v2.1
  // datasets) every episode must name exactly one task in its episode table.
  void task_rows(const std::string& path, const io::Table& t, const std::vector<const Episode*>& eps) {
    const io::Column* c = t.find("task_index");
    if (!c) {
      for (const Episode* e : eps)
        if (e->tasks.size() != 1) {
          problem(path, "no column 'task_index', and episode " + std::to_string(e->index) + " names " +
                            std::to_string(e->tasks.size()) + " tasks in its episode table (one is needed to stand in)");
          return;
        }
      warning(path, "no column 'task_index': each frame takes its episode's task from the episode table");
      return;
    }
    if (c->type != io::TypeId::kInt64 && c->type != io::TypeId::kInt32) {
      problem(path, "column 'task_index' is " + io::type_string(*c) + ", expected int64");
      return;
    }
    int64_t bad = 0, row = 0;
    std::string first;
    for (const Episode* e : eps) {
      for (int64_t k = 0; k < e->length; ++k, ++row) {
        int64_t v = !c->is_valid(row) ? -1 : c->type == io::TypeId::kInt64 ? c->value<int64_t>(row) : c->value<int32_t>(row);
        bool known = v >= 0 && size_t(v) < m.tasks.size() &&
                     !std::binary_search(m.missing_tasks.begin(), m.missing_tasks.end(), v);
        if (!known && bad++ == 0) first = frame_of(*e, k) + ": " + (c->is_valid(row) ? std::to_string(v) : "null");
      }
    }
    if (bad > 0)
      problem(path, "column 'task_index': " + std::to_string(bad) + " rows name no task of " + m.tasks_file() +
                        " (first: " + first + ")");
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
    for (const Feature& f : m.info.features) {
      if (f.is_video()) continue;
      const io::Column* c = t.find(f.key);
      if (!c) problem(path, "column '" + f.key + "' (a feature in info.json) is missing");
      else if (!f.is_image()) feature_rows(path, f, *c, eps);
    }
    task_rows(path, t, eps);
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
          if (!(std::abs(v - double(k) / m.info.fps) <= opt.tolerance_s)) bad_time = k;
        }
      }
      std::string ep = "episode " + std::to_string(e->index);
      if (bad_index >= 0) problem(path, ep + " frame " + std::to_string(bad_index) + ": 'index' is not contiguous from " + std::to_string(e->from_index));
      if (bad_episode >= 0) problem(path, ep + " frame " + std::to_string(bad_episode) + ": 'episode_index' differs");
      if (bad_frame >= 0) problem(path, ep + " frame " + std::to_string(bad_frame) + ": 'frame_index' is not " + std::to_string(bad_frame));
      if (bad_time >= 0)
        problem(path, ep + " frame " + std::to_string(bad_time) + ": 'timestamp' is not frame_index / fps (" +
                          std::to_string(m.info.fps) + " fps) within " + std::to_string(opt.tolerance_s) + " s");
    }
  }

  // The header against info.json's declaration (warnings: LeRobot decodes either way).
  void video_header(const std::string& path, const Feature& cam, const io::VideoInfo& v) {
    const VideoInfo& d = cam.video;
    if (!d.codec.empty() && d.codec != v.codec)
      warning(path, "codec is " + v.codec + ", info.json declares " + d.codec + " for " + cam.key);
    if (d.width > 0 && d.height > 0 && (d.width != v.width || d.height != v.height))
      warning(path, "frames are " + std::to_string(v.width) + "x" + std::to_string(v.height) + ", info.json declares " +
                        std::to_string(d.width) + "x" + std::to_string(d.height) + " for " + cam.key);
  }

  void video_file(const std::string& path, const Feature& cam, const std::vector<const Episode*>& eps) {
    const std::string& camera = cam.key;
    std::vector<double> times;
    std::unique_ptr<io::VideoDecoder> dec;
    try {
      dec = std::make_unique<io::VideoDecoder>(path);
      times = dec->frame_timestamps();
    } catch (const Error& e) {
      problem(path, e.what());
      return;
    }
    if (times.empty()) {
      problem(path, "has no frames");
      return;
    }
    video_header(path, cam, dec->info());
    // the times decoded: each episode's first and last frame, or every frame
    std::vector<std::pair<double, std::string>> decode = {{0.0, "the video's first frame"}};
    for (const Episode* e : eps) {
      const VideoSpan& span = e->videos.at(camera);
      double shift = span.from_timestamp + episode_start_correction(times, span.from_timestamp, m.info.fps);
      for (int64_t k = 0; k < e->length; ++k) {
        double t = shift + double(k) / m.info.fps;
        if (opt.decode_all || k == 0 || k == e->length - 1) decode.emplace_back(t, frame_of(*e, k));
        auto it = std::lower_bound(times.begin(), times.end(), t);
        double best = 1e300;
        if (it != times.end()) best = std::abs(*it - t);
        if (it != times.begin()) best = std::min(best, std::abs(*std::prev(it) - t));
        if (best > opt.tolerance_s) {
          problem(path, "episode " + std::to_string(e->index) + " frame " + std::to_string(k) + " at " + std::to_string(t) +
                            " s: no video frame within " + std::to_string(opt.tolerance_s) + " s (nearest is " + std::to_string(best) +
                            " s away; the video has " + std::to_string(times.size()) + " frames up to " +
                            std::to_string(times.back()) + " s)");
          return;  // the frame times are wrong: decoding them would only say so again
        }
      }
    }
    decode_frames(path, camera, *dec, decode, times.front());
  }

  // Decodes the frames at the given times; the decoder refuses any picture other than the
  // one asked for (wrong time, wrong size, damaged packets). One problem per file.
  void decode_frames(const std::string& path, const std::string& camera, io::VideoDecoder& dec,
                     std::vector<std::pair<double, std::string>>& decode, double first_time) {
    decode.front().first = first_time;
    std::stable_sort(decode.begin(), decode.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<uint8_t> rgb(size_t(dec.output_width()) * size_t(dec.output_height()) * 3);
    for (const auto& [t, what] : decode) {
      try {
        dec.decode_into(t, rgb.data(), std::max(opt.tolerance_s, 1e-3));
      } catch (const Error& e) {
        problem(path, camera + " " + what + " at " + std::to_string(t) + " s does not decode: " + e.what());
        return;
      }
      ++report.frames_decoded;
      if (opt.decode_progress && opt.decode_all) opt.decode_progress(report.frames_decoded, decode_total);
    }
  }

  int64_t decode_total = 0;  // frames decode_all will decode, for its progress
};

// Regular files under dir (recursively), as paths.
std::vector<std::string> files_under(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (!it->is_directory(ec)) out.push_back(it->path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Files that no episode refers to: stray copies in meta/episodes (LeRobot reads only
// meta/episodes/*/*.parquet), data and video files of no episode.
void stray_files(const Metadata& m, const std::set<std::string>& used, CheckReport& report) {
  if (m.info.is_v3()) {
    std::string dir = m.root + "/meta/episodes";
    for (const std::string& f : files_under(dir)) {
      fs::path rel = fs::path(f).lexically_relative(dir);
      bool table = std::distance(rel.begin(), rel.end()) == 2 && rel.extension() == ".parquet";
      if (!table) report.warnings.push_back({f, "stray file: not read (LeRobot reads meta/episodes/*/*.parquet only)"});
    }
  }
  for (const char* sub : {"/data", "/videos"})
    for (const std::string& f : files_under(m.root + sub))
      if (!used.count(f)) report.warnings.push_back({f, "stray file: no episode refers to it"});
}

}  // namespace

CheckReport check_dataset(const std::string& root, double tol, const std::function<void(int64_t, int64_t)>& progress) {
  CheckOptions o;
  o.tolerance_s = tol;
  o.progress = progress;
  return check_dataset(root, o);
}

CheckReport check_dataset(const std::string& root, const CheckOptions& opt) {
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
  std::set<std::string> used;
  for (const Episode& e : m.episodes) {
    data[m.data_file(e)].push_back(&e);
    used.insert(m.data_file(e));
    for (const Feature* cam : m.info.cameras())
      if (cam->is_video()) {
        video[{m.video_file(e, cam->key), cam->key}].push_back(&e);
        used.insert(m.video_file(e, cam->key));
      }
  }
  stray_files(m, used, report);
  report.data_files = int64_t(data.size());
  report.video_files = int64_t(video.size());
  bool videos_ok = video.empty() || io::video_support_available();
  if (!videos_ok)
    report.problems.push_back({root, "cannot check " + std::to_string(video.size()) +
                                         " video files: ember was built without video support (FFmpeg not found at build time)"});
  int64_t total = int64_t(data.size()) + (videos_ok ? int64_t(video.size()) : 0), done = 0;
  Checker c{m, opt, report};
  for (const auto& [key, eps] : video)
    for (const Episode* e : eps) c.decode_total += e->length;
  for (const auto& [path, eps] : data) {
    c.data_file(path, eps);
    if (opt.progress) opt.progress(++done, total);
  }
  if (videos_ok) {
    for (const auto& [key, eps] : video) {
      c.video_file(key.first, *m.info.find(key.second), eps);
      if (opt.progress) opt.progress(++done, total);
    }
  }
  return report;
}

std::vector<std::string> fix_totals(const std::string& root) {
  Metadata m = load_metadata(root, /*check_totals=*/false);
  std::string path = m.root + "/meta/info.json";
  std::vector<uint8_t> bytes = read_file(path);
  nlohmann::ordered_json j = io::parse_ordered_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path);
  std::vector<std::string> changed;
  auto set = [&](const char* key, int64_t now) {
    bool same = j.contains(key) && j[key].is_number_integer() && j[key].get<int64_t>() == now;
    if (same) return;
    changed.push_back(std::string(key) + ": " + (j.contains(key) ? j[key].dump() : "(missing)") + " -> " + std::to_string(now));
    j[key] = now;
  };
  set("total_episodes", int64_t(m.episodes.size()));
  set("total_frames", m.num_frames());
  set("total_tasks", int64_t(m.tasks.size() - m.missing_tasks.size()));
  if (changed.empty()) return changed;
  std::string text = j.dump(4) + "\n";
  AtomicFile out(path);
  out.write(text.data(), text.size());
  out.commit();
  return changed;
}

}  // namespace ember::data
