#include "ember/data/convert.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>

#include "ember/core/error.h"
#include "ember/core/output_dir.h"
#include "ember/core/file.h"
#include "ember/data/meta_writer.h"
#include "ember/data/metadata.h"
#include "ember/data/path_template.h"
#include "ember/data/stats.h"
#include "ember/io/json.h"
#include "ember/io/parquet/reader.h"
#include "ember/io/parquet/writer.h"
#include "ember/io/video/remux.h"
#include "ember/io/video/video_decoder.h"

namespace ember::data {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

const char* const kDataPath = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet";
const char* const kVideoPath = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4";
constexpr double kMiB = 1024.0 * 1024.0;

std::atomic<int> g_convert_serial{0};

// The temporary output directory; removed unless released.
struct TempDir {
  std::string path;
  bool keep = false;
  ~TempDir() {
    std::error_code ec;
    if (!keep) fs::remove_all(path, ec);
  }
};

void make_parent(const std::string& path) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) fail(ErrorKind::kIO, path + ": cannot create its directory: " + ec.message());
}

void need_file(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) fail(ErrorKind::kNotFound, path + ": not found (the v2.1 source is incomplete)");
}

ojson read_json(const std::string& path) {
  std::vector<uint8_t> bytes = read_file(path);
  ojson j = io::parse_ordered_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path);
  if (!j.is_object()) fail_corrupt(path + ": not a JSON object");
  return j;
}

// LeRobot's get_parquet_file_size_in_mb: the column chunks' uncompressed sizes.
double parquet_size_mb(const io::parquet::FileReader& r) {
  double bytes = 0;
  for (const io::parquet::RowGroup& g : r.metadata().row_groups)
    for (const io::parquet::ColumnChunk& c : g.columns) bytes += double(c.meta_data.total_uncompressed_size);
  return bytes / kMiB;
}

void next_file(int64_t& chunk, int64_t& file, int64_t chunks_size) {
  if (file == chunks_size - 1) file = 0, ++chunk;
  else ++file;
}

// info.json as LeRobot's convert_info rewrites it.
ojson convert_info(ojson info, const ConvertOptions& o, bool has_videos) {
  info["codebase_version"] = "v3.0";
  info.erase("total_chunks");
  info.erase("total_videos");
  info["data_files_size_in_mb"] = o.data_file_size_mb == int64_t(o.data_file_size_mb) ? ojson(int64_t(o.data_file_size_mb)) : ojson(o.data_file_size_mb);
  info["video_files_size_in_mb"] = o.video_file_size_mb == int64_t(o.video_file_size_mb) ? ojson(int64_t(o.video_file_size_mb)) : ojson(o.video_file_size_mb);
  info["data_path"] = kDataPath;
  info["video_path"] = has_videos ? ojson(kVideoPath) : ojson(nullptr);
  int64_t fps = info["fps"].get<int64_t>();
  info["fps"] = fps;
  for (auto& [key, f] : info["features"].items())
    if (f.is_object() && f.value("dtype", "") != "video") f["fps"] = fps;
  return info;
}

struct Converter {
  std::string src, tmp;
  ConvertOptions opt;
  Metadata meta;
  std::vector<detail::EpisodeRecord> records;
  ConvertReport report;
  int64_t done = 0, total = 0;

  void step(const std::string& stage) {
    ++done;
    if (opt.progress) opt.progress(stage, done, total);
  }
  void check_sources() const;
  void convert_data();
  void convert_videos(const std::string& key);
  void write_meta();
};

void Converter::check_sources() const {
  for (const Episode& e : meta.episodes) {
    need_file(meta.data_file(e));
    for (const Feature* cam : meta.info.cameras())
      if (cam->is_video()) need_file(meta.video_file(e, cam->key));
  }
  need_file(src + "/meta/episodes_stats.jsonl");
}

void Converter::convert_data() {
  io::parquet::WriteOptions wo;
  wo.codec = opt.codec;
  std::unique_ptr<io::parquet::FileWriter> out;
  int64_t chunk = 0, file = 0, frames = 0;
  double size = 0;
  for (const Episode& e : meta.episodes) {
    const std::string path = meta.data_file(e);
    std::unique_ptr<io::parquet::FileReader> in = io::parquet::FileReader::open(path);
    const double ep_size = parquet_size_mb(*in);
    if (out && size + ep_size >= opt.data_file_size_mb) {
      out->close();
      out.reset();
      next_file(chunk, file, opt.chunks_size);
      size = 0;
    }
    if (!out) {
      TemplateArgs a;
      a.ints = {{"chunk_index", chunk}, {"file_index", file}};
      std::string dst = tmp + "/" + format_path(kDataPath, a, "data_path");
      make_parent(dst);
      // the source's Hugging Face schema still describes every column
      wo.key_value_metadata.clear();
      for (const io::parquet::KeyValue& kv : in->metadata().key_value_metadata)
        if (kv.key == "huggingface") wo.key_value_metadata.push_back(kv);
      out = std::make_unique<io::parquet::FileWriter>(dst, wo);
      ++report.data_files;
    }
    io::Table t = in->read();
    if (t.num_rows() != e.length)
      fail_corrupt(path + ": holds " + std::to_string(t.num_rows()) + " rows, meta/episodes.jsonl says length " +
                   std::to_string(e.length));
    out->write_row_group(t);
    size += ep_size;
    detail::EpisodeRecord& r = records[size_t(e.index)];
    r.data_chunk = chunk, r.data_file = file;
    r.from_index = frames, r.to_index = frames + e.length;
    frames += e.length;
    step("data");
  }
  if (out) out->close();
  report.frames = frames;
}

void Converter::convert_videos(const std::string& key) {
  int64_t chunk = 0, file = 0;
  double size = 0;
  std::vector<std::string> parts;
  std::vector<int64_t> episodes;
  auto join = [&] {
    TemplateArgs a;
    a.ints = {{"chunk_index", chunk}, {"file_index", file}};
    a.strings = {{"video_key", key}};
    std::string dst = tmp + "/" + format_path(kVideoPath, a, "video_path");
    make_parent(dst);
    std::vector<io::ConcatPart> spans = io::concat_videos(parts, dst);
    for (size_t i = 0; i < spans.size(); ++i)
      records[size_t(episodes[i])].videos[key] = VideoSpan{chunk, file, spans[i].from_timestamp, spans[i].to_timestamp};
    ++report.video_files;
    parts.clear();
    episodes.clear();
    size = 0;
  };
  for (const Episode& e : meta.episodes) {
    const std::string path = meta.video_file(e, key);
    std::error_code ec;
    const double ep_size = double(fs::file_size(path, ec)) / kMiB;
    if (ec) fail(ErrorKind::kIO, path + ": cannot read its size: " + ec.message());
    // LeRobot's rule: a new file once this episode would bring the current one to the limit
    if (!parts.empty() && size + ep_size >= opt.video_file_size_mb) {
      join();
      next_file(chunk, file, opt.chunks_size);
    }
    parts.push_back(path);
    episodes.push_back(e.index);
    size += ep_size;
    step("videos/" + key);
  }
  if (!parts.empty()) join();
}

void Converter::write_meta() {
  const std::string stats_path = src + "/meta/episodes_stats.jsonl";
  std::map<int64_t, std::map<std::string, FeatureStats>> stats = read_episodes_stats_jsonl(stats_path);
  std::vector<std::map<std::string, FeatureStats>> all;
  for (detail::EpisodeRecord& r : records) {
    auto it = stats.find(r.index);
    if (it == stats.end()) fail_corrupt(stats_path + ": no statistics for episode " + std::to_string(r.index));
    r.stats = it->second;
    all.push_back(it->second);
  }
  detail::write_tasks_parquet(tmp, meta.tasks, opt.codec);
  detail::write_episodes_parquet(tmp, records, meta.info.features, opt.codec);
  const std::string src_stats = src + "/meta/stats.json";
  std::error_code ec;
  make_parent(tmp + "/meta/stats.json");
  if (fs::exists(src_stats, ec)) {
    fs::copy_file(src_stats, tmp + "/meta/stats.json", ec);
    if (ec) fail(ErrorKind::kIO, tmp + "/meta/stats.json: cannot write the copy of " + src_stats + ": " + ec.message());
  } else {
    write_stats_json(tmp + "/meta/stats.json", aggregate_stats(all), meta.info.features);
  }
  bool has_videos = false;
  for (const Feature& f : meta.info.features) has_videos = has_videos || f.is_video();
  detail::write_json_file(tmp + "/meta/info.json", convert_info(read_json(src + "/meta/info.json"), opt, has_videos));
  step("metadata");
}

}  // namespace

ConvertReport convert_v21_to_v30(const std::string& src_in, const std::string& dst_in, const ConvertOptions& options) {
  std::string src = src_in, dst = dst_in;
  while (src.size() > 1 && src.back() == '/') src.pop_back();
  while (dst.size() > 1 && dst.back() == '/') dst.pop_back();
  if (dst.empty()) fail(ErrorKind::kInvalidArgument, "convert: destination path is empty");
  if (!(options.data_file_size_mb > 0) || !(options.video_file_size_mb > 0) || options.chunks_size < 1)
    fail(ErrorKind::kInvalidArgument, dst + ": data_file_size_mb, video_file_size_mb and chunks_size must be positive");
  std::error_code ec;
  if (fs::exists(dst, ec)) fail(ErrorKind::kInvalidArgument, dst + ": already exists (convert writes a new dataset)");
  if (fs::exists(src, ec)) check_output_apart(dst, src, "convert: DST");  // never inside the source

  Converter c;
  c.src = src;
  c.opt = options;
  c.meta = load_metadata(src);
  if (c.meta.info.codebase_version != "v2.1")
    fail(ErrorKind::kInvalidArgument, src + "/meta/info.json: codebase_version is '" + c.meta.info.codebase_version +
                                          "', expected 'v2.1'");
  for (size_t i = 0; i < c.meta.episodes.size(); ++i)
    if (c.meta.episodes[i].index != int64_t(i))
      fail_corrupt(src + "/meta/episodes.jsonl: episode indices must be 0.." + std::to_string(c.meta.episodes.size() - 1));
  std::vector<std::string> video_keys;
  for (const Feature* cam : c.meta.info.cameras())
    if (cam->is_video()) video_keys.push_back(cam->key);
  std::sort(video_keys.begin(), video_keys.end());  // LeRobot converts cameras in sorted order
  c.check_sources();
  if (!video_keys.empty() && !io::video_support_available())
    fail_unsupported(src + ": has video cameras; converting them needs ember built with FFmpeg");

  TempDir tmp{dst + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(g_convert_serial++)};
  fs::remove_all(tmp.path, ec);
  fs::create_directories(tmp.path + "/meta", ec);
  if (ec) fail(ErrorKind::kIO, tmp.path + ": cannot create the temporary directory: " + ec.message());
  c.tmp = tmp.path;
  const int64_t n = int64_t(c.meta.episodes.size());
  c.total = n * int64_t(1 + video_keys.size()) + 1;
  c.records.resize(size_t(n));
  for (const Episode& e : c.meta.episodes) {
    detail::EpisodeRecord& r = c.records[size_t(e.index)];
    r.index = e.index, r.length = e.length, r.tasks = e.tasks;
  }
  c.report.episodes = n;

  c.convert_data();
  for (const std::string& key : video_keys) c.convert_videos(key);
  c.write_meta();

  if (fs::exists(dst, ec)) fail(ErrorKind::kInvalidArgument, dst + ": appeared while converting; not replaced");
  fs::rename(tmp.path, dst, ec);
  if (ec) fail(ErrorKind::kIO, dst + ": cannot rename " + tmp.path + " into place: " + ec.message());
  tmp.keep = true;
  return c.report;
}

}  // namespace ember::data
