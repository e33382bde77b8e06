#include "ember/data/meta_writer.h"

#include <cmath>
#include <filesystem>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/data/stats.h"
#include "ember/io/parquet/writer.h"

namespace ember::data::detail {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

// A whole number as an integer (LeRobot writes fps and sizes as ints), anything else as is.
ojson number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::abs(v) < 9e15) return int64_t(v);
  return v;
}

void make_parent(const std::string& path) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) fail(ErrorKind::kIO, path + ": cannot create its directory: " + ec.message());
}

void write_text(const std::string& path, const std::string& text) {
  make_parent(path);
  AtomicFile f(path);
  f.write(text.data(), text.size());
  f.commit();
}

ojson feature_json(const Feature& f) {
  ojson j = ojson::object();
  j["dtype"] = f.dtype;
  j["shape"] = f.shape;
  j["names"] = ojson::parse(f.names.dump());
  if (f.is_video() && !f.video.codec.empty()) {
    // LeRobot's get_video_info, as its recorder stores it
    j["info"] = {{"video.height", f.video.height},   {"video.width", f.video.width},
                 {"video.codec", f.video.codec},     {"video.pix_fmt", f.video.pix_fmt},
                 {"video.is_depth_map", false},      {"video.fps", number(f.video.fps)},
                 {"video.channels", 3},              {"has_audio", false}};
  }
  return j;
}

// A list<double> (or list<int64>) column of one statistic over the episodes; image statistics
// of 3 values as (3, 1, 1): list<list<list<double>>>.
io::Column stat_column(const std::string& name, const std::vector<const std::vector<double>*>& rows, bool integer,
                       bool image) {
  std::vector<int64_t> sizes;
  std::vector<double> flat;
  for (const std::vector<double>* r : rows) {
    sizes.push_back(int64_t(r->size()));
    flat.insert(flat.end(), r->begin(), r->end());
  }
  if (integer) {
    std::vector<int64_t> ints;
    for (double v : flat) ints.push_back(std::llround(v));
    return io::make_list(name, io::make_int64("element", ints), sizes);
  }
  io::Column leaf = io::make_double("element", flat);
  if (!image) return io::make_list(name, std::move(leaf), sizes);
  std::vector<int64_t> ones(flat.size(), 1);
  io::Column inner = io::make_list("element", std::move(leaf), ones);
  io::Column middle = io::make_list("element", std::move(inner), ones);
  return io::make_list(name, std::move(middle), sizes);
}

}  // namespace

int64_t encoded_bytes(const io::Column& c) {
  int64_t n = int64_t(c.values.size());
  if (c.type == io::TypeId::kString || c.type == io::TypeId::kBinary) n += 4 * c.length;
  for (const io::Column& ch : c.children) n += encoded_bytes(ch);
  return n;
}

ojson info_json(const DatasetInfo& info, double data_file_size_mb, double video_file_size_mb, int64_t total_chunks) {
  const bool v3 = info.is_v3();
  ojson j = ojson::object();
  j["codebase_version"] = info.codebase_version;
  j["robot_type"] = info.robot_type.empty() ? ojson(nullptr) : ojson(info.robot_type);
  j["total_episodes"] = info.total_episodes;
  j["total_frames"] = info.total_frames;
  j["total_tasks"] = info.total_tasks;
  if (!v3) {
    int64_t videos = 0;
    for (const Feature& f : info.features) videos += f.is_video() ? info.total_episodes : 0;
    j["total_videos"] = videos;
    j["total_chunks"] = total_chunks;
  }
  j["chunks_size"] = info.chunks_size;
  if (v3) {
    j["data_files_size_in_mb"] = number(data_file_size_mb);
    j["video_files_size_in_mb"] = number(video_file_size_mb);
  }
  j["fps"] = number(info.fps);
  j["splits"] = ojson::object();
  if (info.total_episodes > 0) j["splits"]["train"] = "0:" + std::to_string(info.total_episodes);
  j["data_path"] = info.data_path;
  j["video_path"] = info.video_path.empty() ? ojson(nullptr) : ojson(info.video_path);
  j["features"] = ojson::object();
  for (const Feature& f : info.features) j["features"][f.key] = feature_json(f);
  return j;
}

void write_json_file(const std::string& path, const ojson& j) { write_text(path, j.dump(4) + "\n"); }

void write_tasks_parquet(const std::string& root, const std::vector<std::string>& tasks, io::parquet::Codec codec) {
  std::vector<int64_t> idx;
  for (size_t i = 0; i < tasks.size(); ++i) idx.push_back(int64_t(i));
  io::Table t;
  t.columns.push_back(io::make_int64("task_index", idx));
  t.columns.push_back(io::make_string("task", tasks));
  // pandas' layout (as LeRobot's DataFrame.to_parquet writes it): the task strings are the
  // DataFrame's index, stored as the last column and named in index_columns
  ojson pandas = {
      {"index_columns", {"task"}},
      {"column_indexes",
       {{{"name", nullptr}, {"field_name", nullptr}, {"pandas_type", "unicode"}, {"numpy_type", "object"},
         {"metadata", {{"encoding", "UTF-8"}}}}}},
      {"columns",
       {{{"name", "task_index"}, {"field_name", "task_index"}, {"pandas_type", "int64"}, {"numpy_type", "int64"},
         {"metadata", nullptr}},
        {{"name", "task"}, {"field_name", "task"}, {"pandas_type", "unicode"}, {"numpy_type", "object"},
         {"metadata", nullptr}}}},
      {"attributes", ojson::object()},
      {"creator", {{"library", "ember"}, {"version", "0.1.0"}}},
      {"pandas_version", "2.2.3"}};
  io::parquet::WriteOptions o;
  o.codec = codec;
  o.key_value_metadata.push_back({"pandas", pandas.dump()});
  std::string path = root + "/meta/tasks.parquet";
  make_parent(path);
  io::parquet::write_table(path, t, o);
}

void write_episodes_parquet(const std::string& root, const std::vector<EpisodeRecord>& episodes,
                            const std::vector<Feature>& features, io::parquet::Codec codec) {
  std::vector<int64_t> index, length, chunk, file, from, to, task_sizes, zeros(episodes.size(), 0);
  std::vector<std::string> tasks;
  for (const EpisodeRecord& e : episodes) {
    index.push_back(e.index);
    length.push_back(e.length);
    chunk.push_back(e.data_chunk);
    file.push_back(e.data_file);
    from.push_back(e.from_index);
    to.push_back(e.to_index);
    task_sizes.push_back(int64_t(e.tasks.size()));
    tasks.insert(tasks.end(), e.tasks.begin(), e.tasks.end());
  }
  io::Table t;
  t.columns.push_back(io::make_int64("episode_index", index));
  t.columns.push_back(io::make_list("tasks", io::make_string("element", tasks), task_sizes));
  t.columns.push_back(io::make_int64("length", length));
  t.columns.push_back(io::make_int64("data/chunk_index", chunk));
  t.columns.push_back(io::make_int64("data/file_index", file));
  t.columns.push_back(io::make_int64("dataset_from_index", from));
  t.columns.push_back(io::make_int64("dataset_to_index", to));
  const std::string what = root + "/meta/episodes: episode ";
  for (const Feature& f : features) {
    if (!f.is_video()) continue;
    std::vector<int64_t> vchunk, vfile;
    std::vector<double> vfrom, vto;
    for (const EpisodeRecord& e : episodes) {
      auto it = e.videos.find(f.key);
      if (it == e.videos.end())
        fail(ErrorKind::kInvalidArgument, what + std::to_string(e.index) + " has no video span for '" + f.key + "'");
      vchunk.push_back(it->second.chunk);
      vfile.push_back(it->second.file);
      vfrom.push_back(it->second.from_timestamp);
      vto.push_back(it->second.to_timestamp);
    }
    const std::string p = "videos/" + f.key + "/";
    t.columns.push_back(io::make_int64(p + "chunk_index", vchunk));
    t.columns.push_back(io::make_int64(p + "file_index", vfile));
    t.columns.push_back(io::make_double(p + "from_timestamp", vfrom));
    t.columns.push_back(io::make_double(p + "to_timestamp", vto));
  }
  for (const Feature& f : features) {
    auto first = episodes.front().stats.find(f.key);
    if (first == episodes.front().stats.end()) continue;
    for (const std::string& stat : stat_names_in_order(first->second)) {
      std::vector<const std::vector<double>*> rows;
      for (const EpisodeRecord& e : episodes) {
        auto fs = e.stats.find(f.key);
        const std::vector<double>* v = nullptr;
        if (fs != e.stats.end() && fs->second.count(stat)) v = &fs->second.at(stat);
        if (!v || v->size() != first->second.at(stat).size())
          fail(ErrorKind::kInvalidArgument, what + std::to_string(e.index) + ": statistic '" + f.key + "/" + stat +
                                                "' is missing or has a different size than episode " +
                                                std::to_string(episodes.front().index) + "'s");
        rows.push_back(v);
      }
      t.columns.push_back(stat_column("stats/" + f.key + "/" + stat, rows, stat_is_integer(f, stat),
                                      f.is_camera() && stat != "count"));
    }
  }
  t.columns.push_back(io::make_int64("meta/episodes/chunk_index", zeros));
  t.columns.push_back(io::make_int64("meta/episodes/file_index", zeros));
  io::parquet::WriteOptions o;
  o.codec = codec;
  std::string path = root + "/meta/episodes/chunk-000/file-000.parquet";
  make_parent(path);
  io::parquet::write_table(path, t, o);
}

void write_tasks_jsonl(const std::string& root, const std::vector<std::string>& tasks) {
  std::string text;
  for (size_t i = 0; i < tasks.size(); ++i) {
    ojson j = {{"task_index", int64_t(i)}, {"task", tasks[i]}};
    text += j.dump() + "\n";
  }
  write_text(root + "/meta/tasks.jsonl", text);
}

void write_episodes_jsonl(const std::string& root, const std::vector<EpisodeRecord>& episodes,
                          const std::vector<Feature>& features) {
  std::string eps, stats;
  for (const EpisodeRecord& e : episodes) {
    ojson j = {{"episode_index", e.index}, {"tasks", e.tasks}, {"length", e.length}};
    eps += j.dump() + "\n";
    ojson s = {{"episode_index", e.index}, {"stats", stats_to_json(e.stats, features)}};
    stats += s.dump() + "\n";
  }
  write_text(root + "/meta/episodes.jsonl", eps);
  write_text(root + "/meta/episodes_stats.jsonl", stats);
}

}  // namespace ember::data::detail
