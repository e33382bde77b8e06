#include "ember/data/metadata.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/data/path_template.h"
#include "ember/io/json.h"
#include "ember/io/parquet/reader.h"

namespace ember::data {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// More frames than any dataset holds (2^48): bounds the sums of episode lengths.
constexpr int64_t kMaxFrames = int64_t(1) << 48;

// Calls on_line(json, line_number) for every non-blank line of a JSON-lines file.
template <class F>
void read_jsonl(const std::string& path, F&& on_line) {
  std::vector<uint8_t> bytes;
  try {
    bytes = read_file(path);  // regular files only: a FIFO here would wait forever
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kNotFound) fail(ErrorKind::kNotFound, path + ": not found");
    throw;
  }
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  size_t pos = 0;
  for (int n = 1; pos < text.size(); ++n) {
    size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j = io::parse_json(line, path + ": line " + std::to_string(n));
    if (!j.is_object()) fail_corrupt(path + ": line " + std::to_string(n) + " is not a JSON object");
    on_line(j, n);
  }
}

int64_t need_int(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_number_integer()) fail_corrupt(where + ": field '" + key + "' must be an integer");
  return j[key].get<int64_t>();
}

std::vector<std::string> string_list(const json& j, const char* key, const std::string& where) {
  std::vector<std::string> out;
  if (!j.contains(key)) return out;
  if (!j[key].is_array()) fail_corrupt(where + ": field '" + key + "' must be a list of strings");
  for (const json& s : j[key]) {
    if (!s.is_string()) fail_corrupt(where + ": field '" + key + "' must be a list of strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

void flatten(const json& j, std::vector<double>& out, const std::string& where) {
  if (j.is_number()) out.push_back(j.get<double>());
  else if (j.is_array()) for (const json& k : j) flatten(k, out, where);
  else fail_corrupt(where + " must hold numbers");
}

// Appends row `row` of a (nested) numeric list column, flattened, to out.
void flatten_cell(const io::Column& c, int64_t row, std::vector<double>& out) {
  if (!c.is_valid(row)) return;
  switch (c.type) {
    case io::TypeId::kList:
      for (int64_t k = c.offsets[size_t(row)]; k < c.offsets[size_t(row) + 1]; ++k) flatten_cell(c.child(), k, out);
      return;
    case io::TypeId::kDouble: out.push_back(c.value<double>(row)); return;
    case io::TypeId::kFloat: out.push_back(c.value<float>(row)); return;
    case io::TypeId::kInt64: out.push_back(double(c.value<int64_t>(row))); return;
    case io::TypeId::kInt32: out.push_back(c.value<int32_t>(row)); return;
    case io::TypeId::kBool: out.push_back(c.value<uint8_t>(row)); return;
    default: return;  // not a statistic
  }
}

// Task index i is `task`; `defined` marks the indices the task file gave.
void define_task(Metadata& m, std::vector<bool>& defined, int64_t i, std::string task) {
  if (size_t(i) >= m.tasks.size()) m.tasks.resize(size_t(i) + 1), defined.resize(size_t(i) + 1);
  m.tasks[size_t(i)] = std::move(task);
  defined[size_t(i)] = true;
}

void note_missing_tasks(Metadata& m, const std::vector<bool>& defined) {
  for (size_t i = 0; i < defined.size(); ++i)
    if (!defined[i]) m.missing_tasks.push_back(int64_t(i));
}

void load_v2(Metadata& m) {
  std::string ep_path = m.root + "/meta/episodes.jsonl";
  read_jsonl(ep_path, [&](const json& j, int n) {
    std::string where = ep_path + ": line " + std::to_string(n);
    Episode e;
    e.index = need_int(j, "episode_index", where);
    e.length = need_int(j, "length", where);
    if (e.length < 0) fail_corrupt(where + ": field 'length' must not be negative");
    e.tasks = string_list(j, "tasks", where);
    m.episodes.push_back(std::move(e));
  });
  std::sort(m.episodes.begin(), m.episodes.end(), [](const Episode& a, const Episode& b) { return a.index < b.index; });
  int64_t start = 0;
  for (Episode& e : m.episodes) {
    e.from_index = start;
    if (e.length > kMaxFrames - start)
      fail_corrupt(m.root + "/meta/episodes.jsonl: episode " + std::to_string(e.index) + ": field 'length' " +
                   std::to_string(e.length) + " takes the dataset past 2^48 frames");
    e.to_index = start += e.length;
    e.data_chunk = m.info.chunks_size > 0 ? e.index / m.info.chunks_size : 0;
    for (const Feature* cam : m.info.cameras())
      if (cam->is_video()) e.videos[cam->key] = VideoSpan{e.data_chunk, 0, 0.0, double(e.length) / m.info.fps};
  }
  std::string stats_path = m.root + "/meta/episodes_stats.jsonl";
  std::error_code ec;
  if (fs::exists(stats_path, ec)) {  // v2.1; v2.0 has none
    auto stats = read_episodes_stats_jsonl(stats_path);
    for (Episode& e : m.episodes)
      if (auto it = stats.find(e.index); it != stats.end()) e.stats = std::move(it->second);
  }
  std::string task_path = m.root + "/meta/tasks.jsonl";
  std::vector<bool> defined;
  read_jsonl(task_path, [&](const json& j, int n) {
    std::string where = task_path + ": line " + std::to_string(n);
    int64_t i = need_int(j, "task_index", where);
    if (i < 0 || i > 10'000'000) fail_corrupt(where + ": field 'task_index' out of range");
    if (!j.contains("task") || !j["task"].is_string()) fail_corrupt(where + ": field 'task' must be a string");
    define_task(m, defined, i, j["task"].get<std::string>());
  });
  note_missing_tasks(m, defined);
}

// What LeRobot reads: meta/episodes/*/*.parquet, one directory level down; a stray file
// beside the chunk directories (a copy left by hand) is not an episode table.
std::vector<std::string> episode_table_files(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& chunk : fs::directory_iterator(dir, ec)) {
    if (!chunk.is_directory(ec)) continue;
    for (const auto& e : fs::directory_iterator(chunk.path(), ec))
      if (e.path().extension() == ".parquet" && !e.is_directory(ec)) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// (name by value: a reference to t's column, never to an argument)
const io::Column& need_column(const io::Table& t, std::string_view name_view, io::TypeId type, const std::string& file) {
  const std::string name(name_view);
  const io::Column* c = t.find(name);
  if (!c) fail_corrupt(file + ": column '" + name + "' is missing");
  if (c->type != type)
    fail_corrupt(file + ": column '" + name + "' has type " + io::type_string(*c) + ", expected " + io::type_name(type));
  return *c;
}

// The column of tasks.parquet that holds the task strings: they are the pandas index, which
// is named "task" when the DataFrame's index had that name, and "__index_level_0__" when it
// had none (LeRobot's recorder writes it so); the pandas metadata says which.
std::string task_string_column(const io::parquet::FileReader& reader) {
  std::vector<std::string> names = reader.column_names();
  auto has = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  if (has("task")) return "task";
  for (const auto& kv : reader.metadata().key_value_metadata) {
    if (kv.key != "pandas") continue;
    io::check_json_depth(kv.value, reader.name() + ": pandas metadata");
    json pandas = json::parse(kv.value, nullptr, false);
    if (pandas.is_object() && pandas.contains("index_columns") && pandas["index_columns"].is_array())
      for (const json& c : pandas["index_columns"])
        if (c.is_string() && has(c.get<std::string>())) return c.get<std::string>();
  }
  if (has("__index_level_0__")) return "__index_level_0__";
  fail_corrupt(reader.name() + ": no task strings (neither a 'task' column nor a pandas index column)");
}

void load_v3(Metadata& m) {
  std::string dir = m.root + "/meta/episodes";
  std::vector<std::string> files = episode_table_files(dir);
  if (files.empty()) fail(ErrorKind::kNotFound, dir + ": no episode tables (meta/episodes/*/*.parquet)");
  std::vector<const Feature*> videos;
  for (const Feature* cam : m.info.cameras())
    if (cam->is_video()) videos.push_back(cam);
  for (const std::string& file : files) {
    auto reader = io::parquet::FileReader::open(file);
    std::vector<std::string> cols = {"episode_index", "length", "tasks", "data/chunk_index", "data/file_index",
                                     "dataset_from_index", "dataset_to_index"};
    for (const Feature* v : videos)
      for (const char* k : {"chunk_index", "file_index", "from_timestamp", "to_timestamp"})
        cols.push_back("videos/" + v->key + "/" + k);
    for (const std::string& name : reader->column_names())
      if (name.rfind("stats/", 0) == 0) cols.push_back(name);
    io::Table t = reader->read(cols);
    auto i64 = [&](const std::string& name) { return need_column(t, name, io::TypeId::kInt64, file).data<int64_t>(); };
    auto f64 = [&](const std::string& name) { return need_column(t, name, io::TypeId::kDouble, file).data<double>(); };
    auto index = i64("episode_index"), length = i64("length"), chunk = i64("data/chunk_index"),
         fileno = i64("data/file_index"), from = i64("dataset_from_index"), to = i64("dataset_to_index");
    const io::Column& tasks = need_column(t, "tasks", io::TypeId::kList, file);
    if (tasks.child().type != io::TypeId::kString)
      fail_corrupt(file + ": column 'tasks' has type " + io::type_string(tasks) + ", expected list<string>");
    for (int64_t r = 0; r < t.num_rows(); ++r) {
      Episode e;
      e.index = index[size_t(r)];
      e.length = length[size_t(r)];
      e.data_chunk = chunk[size_t(r)];
      e.data_file = fileno[size_t(r)];
      e.from_index = from[size_t(r)];
      e.to_index = to[size_t(r)];
      const io::Column& el = tasks.child();
      for (int64_t k = tasks.offsets[size_t(r)]; k < tasks.offsets[size_t(r) + 1]; ++k) e.tasks.emplace_back(el.str(k));
      for (const Feature* v : videos) {
        std::string p = "videos/" + v->key + "/";
        VideoSpan span{i64(p + "chunk_index")[size_t(r)], i64(p + "file_index")[size_t(r)],
                       f64(p + "from_timestamp")[size_t(r)], f64(p + "to_timestamp")[size_t(r)]};
        std::string where = file + ": episode " + std::to_string(e.index) + ": column '" + p;
        if (span.chunk < 0 || span.file < 0) fail_corrupt(where + "chunk_index' / 'file_index' must not be negative");
        if (!std::isfinite(span.from_timestamp) || span.from_timestamp < 0)
          fail_corrupt(where + "from_timestamp' is " + std::to_string(span.from_timestamp) + ", expected a time >= 0");
        if (!std::isfinite(span.to_timestamp) || span.to_timestamp < span.from_timestamp)
          fail_corrupt(where + "to_timestamp' is " + std::to_string(span.to_timestamp) + ", expected a time >= from_timestamp");
        e.videos[v->key] = span;
      }
      for (const io::Column& c : t.columns) {
        if (c.name.rfind("stats/", 0) != 0) continue;
        size_t slash = c.name.rfind('/');
        if (slash <= 6) continue;  // "stats/<feature>/<statistic>"
        std::vector<double>& v = e.stats[c.name.substr(6, slash - 6)][c.name.substr(slash + 1)];
        flatten_cell(c, r, v);
      }
      if (e.index < 0 || e.length < 0 || e.from_index < 0 || e.data_chunk < 0 || e.data_file < 0)
        fail_corrupt(file + ": row " + std::to_string(r) + ": episode_index, length, dataset_from_index and "
                     "data/chunk_index, data/file_index must not be negative");
      if (e.to_index < e.from_index || e.from_index > kMaxFrames || e.to_index > kMaxFrames)
        fail_corrupt(file + ": episode " + std::to_string(e.index) + ": dataset_from_index " + std::to_string(e.from_index) +
                     ", dataset_to_index " + std::to_string(e.to_index) + " is not a range of frames");
      if (e.to_index - e.from_index != e.length)
        fail_corrupt(file + ": episode " + std::to_string(e.index) + " has length " + std::to_string(e.length) +
                     " but dataset_from_index..dataset_to_index spans " + std::to_string(e.to_index - e.from_index));
      m.episodes.push_back(std::move(e));
    }
  }
  std::sort(m.episodes.begin(), m.episodes.end(), [](const Episode& a, const Episode& b) { return a.index < b.index; });
  std::string task_path = m.root + "/meta/tasks.parquet";
  auto reader = io::parquet::FileReader::open(task_path);
  std::string task_column = task_string_column(*reader);
  io::Table t = reader->read({"task_index", task_column});
  auto idx = need_column(t, "task_index", io::TypeId::kInt64, task_path).data<int64_t>();
  const io::Column& task = need_column(t, task_column, io::TypeId::kString, task_path);
  std::vector<bool> defined;
  for (int64_t r = 0; r < t.num_rows(); ++r) {
    int64_t i = idx[size_t(r)];
    if (i < 0 || i > 10'000'000) fail_corrupt(task_path + ": task_index " + std::to_string(i) + " out of range");
    if (!task.is_valid(r)) fail_corrupt(task_path + ": row " + std::to_string(r) + ": the task string is null");
    define_task(m, defined, i, std::string(task.str(r)));
  }
  note_missing_tasks(m, defined);
}

// The statistics normalisation uses in pairs have one value per dimension each: a feature's
// pairs agree in size, and a vector feature's match info.json's shape (cameras keep one per
// channel). Checked here, where the file is known, rather than at the first training step.
void check_stat_pairs(const std::string& key, const FeatureStats& fs_, const std::string& where) {
  static const std::pair<const char*, const char*> kPairs[] = {{"mean", "std"}, {"min", "max"}, {"q01", "q99"}, {"q10", "q90"}};
  for (const auto& [lo, hi] : kPairs) {
    auto a = fs_.find(lo), b = fs_.find(hi);
    if (a != fs_.end() && b != fs_.end() && a->second.size() != b->second.size())
      fail_corrupt(where + ": field '" + key + "': statistic '" + lo + "' has " + std::to_string(a->second.size()) +
                   " values, '" + hi + "' has " + std::to_string(b->second.size()));
  }
}

void check_stats(const Metadata& m, const std::string& key, const FeatureStats& fs_, const std::string& where) {
  check_stat_pairs(key, fs_, where);
  const Feature* f = m.info.find(key);
  if (!f || f->is_camera() || f->dtype == "string") return;
  for (const auto& [name, v] : fs_) {
    if (name == "count") continue;
    if (int64_t(v.size()) != std::max<int64_t>(1, f->numel()))
      fail_corrupt(where + ": field '" + key + "." + name + "' has " + std::to_string(v.size()) + " values, info.json's shape of '" +
                   key + "' has " + std::to_string(std::max<int64_t>(1, f->numel())));
  }
}

void load_stats(Metadata& m) {
  std::string path = m.root + "/meta/stats.json";
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  std::vector<uint8_t> bytes = read_file(path);
  json j = io::parse_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path);
  if (!j.is_object()) fail_corrupt(path + ": not a JSON object");
  for (const auto& f : j.items()) {
    if (!f.value().is_object()) fail_corrupt(path + ": field '" + f.key() + "' must be an object");
    FeatureStats fs_;
    for (const auto& s : f.value().items()) flatten(s.value(), fs_[s.key()], path + ": field '" + f.key() + "." + s.key() + "'");
    check_stats(m, f.key(), fs_, path);
    m.stats[f.key()] = std::move(fs_);
  }
}

void check(const Metadata& m, bool check_totals) {
  std::string info = m.root + "/meta/info.json";
  if (!m.episodes.empty() && m.episodes[0].from_index != 0)
    fail_corrupt(m.root + "/meta/episodes: episode " + std::to_string(m.episodes[0].index) + " (the first) starts at frame " +
                 std::to_string(m.episodes[0].from_index) + " (dataset_from_index), expected 0");
  for (size_t i = 0; i < m.episodes.size(); ++i) {
    if (m.episodes[i].index != int64_t(i))
      fail_corrupt(m.root + "/meta: episode indices are not 0.." + std::to_string(m.episodes.size() - 1) +
                   " (found " + std::to_string(m.episodes[i].index) + " at position " + std::to_string(i) + ")");
    if (i > 0 && m.episodes[i].from_index != m.episodes[i - 1].to_index)
      fail_corrupt(m.root + "/meta: episode " + std::to_string(i) + " starts at frame " +
                   std::to_string(m.episodes[i].from_index) + ", expected " + std::to_string(m.episodes[i - 1].to_index));
  }
  if (!check_totals) return;
  const std::string repair = "; `ember data check --fix " + m.root + "` rewrites the totals from the files";
  if (int64_t(m.episodes.size()) != m.info.total_episodes)
    fail_corrupt(info + ": field 'total_episodes' is " + std::to_string(m.info.total_episodes) + " but the episode tables list " +
                 std::to_string(m.episodes.size()) + repair);
  if (m.num_frames() != m.info.total_frames)
    fail_corrupt(info + ": field 'total_frames' is " + std::to_string(m.info.total_frames) + " but the episodes hold " +
                 std::to_string(m.num_frames()) + " frames" + repair);
}

}  // namespace

std::map<int64_t, std::map<std::string, FeatureStats>> read_episodes_stats_jsonl(const std::string& path) {
  std::map<int64_t, std::map<std::string, FeatureStats>> out;
  read_jsonl(path, [&](const json& j, int n) {
    const std::string where = path + ": line " + std::to_string(n);
    int64_t index = need_int(j, "episode_index", where);
    if (!j.contains("stats") || !j["stats"].is_object()) fail_corrupt(where + ": field 'stats' must be an object");
    auto& ep = out[index];
    for (const auto& f : j["stats"].items()) {
      if (!f.value().is_object()) fail_corrupt(where + ": field 'stats." + f.key() + "' must be an object");
      for (const auto& s : f.value().items()) flatten(s.value(), ep[f.key()][s.key()], where + ": field 'stats." + f.key() + "." + s.key() + "'");
      check_stat_pairs("stats." + f.key(), ep[f.key()], where);
    }
  });
  return out;
}

std::string Metadata::data_file(const Episode& e) const {
  TemplateArgs a;
  a.ints = {{"episode_chunk", e.data_chunk}, {"episode_index", e.index}, {"chunk_index", e.data_chunk},
            {"file_index", e.data_file}};
  return root + "/" + format_path(info.data_path, a, root + "/meta/info.json: data_path");
}

std::string Metadata::video_file(const Episode& e, const std::string& camera) const {
  auto it = e.videos.find(camera);
  if (it == e.videos.end()) fail(ErrorKind::kNotFound, root + ": episode " + std::to_string(e.index) + " has no video for " + camera);
  TemplateArgs a;
  a.ints = {{"episode_chunk", it->second.chunk}, {"episode_index", e.index}, {"chunk_index", it->second.chunk},
            {"file_index", it->second.file}};
  a.strings = {{"video_key", camera}};
  return root + "/" + format_path(info.video_path, a, root + "/meta/info.json: video_path");
}

std::string Metadata::tasks_file() const { return root + (info.is_v3() ? "/meta/tasks.parquet" : "/meta/tasks.jsonl"); }

const std::string& Metadata::task(int64_t k, const std::string& where) const {
  if (k < 0 || size_t(k) >= tasks.size() || std::binary_search(missing_tasks.begin(), missing_tasks.end(), k))
    fail_corrupt(where + ": task_index " + std::to_string(k) + " has no task in " + tasks_file() + " (it defines " +
                 std::to_string(tasks.size() - missing_tasks.size()) + " tasks)");
  return tasks[size_t(k)];
}

const Episode& Metadata::episode_of(int64_t index) const {
  if (index < 0 || index >= num_frames())
    fail(ErrorKind::kInvalidArgument, root + ": frame index " + std::to_string(index) + " out of range (dataset has " +
                                          std::to_string(num_frames()) + " frames)");
  auto it = std::upper_bound(episodes.begin(), episodes.end(), index,
                             [](int64_t i, const Episode& e) { return i < e.to_index; });
  return *it;
}

Metadata load_metadata(const std::string& root, bool check_totals) {
  Metadata m;
  m.root = root;
  while (m.root.size() > 1 && m.root.back() == '/') m.root.pop_back();
  m.info = read_info(m.root);
  if (m.info.is_v3()) load_v3(m);
  else load_v2(m);
  load_stats(m);
  check(m, check_totals);
  return m;
}

}  // namespace ember::data
