// DatasetWriter: datasets written in v3.0 and v2.1 read back through ember's own reader
// (load_metadata, Dataset, the Parquet reader) with identical tables, images and statistics;
// the temporary-directory discipline; and every user error naming the feature at fault.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "test_util.h"
#include "stripes.h"
#include "ember/core/error.h"
#include "ember/data/check.h"
#include "ember/data/dataset.h"
#include "ember/data/dataset_writer.h"
#include "ember/io/parquet/reader.h"
#include "ember/io/video/video_decoder.h"

namespace ember::data {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::feature;



std::vector<Feature> robot_features() {
  return {feature("observation.state", "float32", {6}, {"j0", "j1", "j2", "j3", "j4", "gripper"}),
          feature("action", "float32", {4}, {"x", "y", "z", "gripper"}),
          feature("observation.images.top", "image", {24, 32, 3}, {"height", "width", "channels"}),
          feature("observation.images.wrist", "image", {16, 20, 3}, {"height", "width", "channels"}),
          feature("next.reward", "float32", {1}),
          feature("next.done", "bool", {1})};
}

io::Image picture(int h, int w, int episode, int frame, int salt) {
  io::Image im;
  im.height = h;
  im.width = w;
  im.rgb.resize(size_t(h) * w * 3);
  uint32_t s = uint32_t(episode * 7919 + frame * 104729 + salt * 15485863);
  for (size_t i = 0; i < im.rgb.size(); ++i) {
    s = s * 1664525u + 1013904223u;  // noise: PNG cannot shrink it much, so files roll over
    im.rgb[i] = uint8_t((i / 3 % size_t(w)) * 4 + (s >> 28));
  }
  return im;
}

// Frame k of episode e: values that differ per episode, frame and dimension.
Frame make_frame(int e, int k, int length) {
  Frame f;
  std::vector<double> state, action;
  for (int j = 0; j < 6; ++j) state.push_back(std::sin(0.3 * k + j + e) * (1 + 0.1 * j));
  for (int j = 0; j < 4; ++j) action.push_back(std::cos(0.2 * k - j) * 0.5 + 0.01 * e);
  f.values["observation.state"] = state;
  f.values["action"] = action;
  f.values["next.reward"] = {k == length - 1 ? 1.0 : 0.0};
  f.values["next.done"] = {k == length - 1 ? 1.0 : 0.0};
  f.images["observation.images.top"] = picture(24, 32, e, k, 1);
  f.images["observation.images.wrist"] = picture(16, 20, e, k, 2);
  return f;
}

const std::vector<int> kLengths = {12, 7, 20, 1, 9};
const std::vector<std::string> kTasks = {"pick up the cube", "open the drawer", "pick up the cube", "stack the blocks",
                                         "open the drawer"};

// Writes the standard test dataset: five episodes of kLengths with kTasks.
DatasetWriter write_dataset(const std::string& root, WriterOptions o) {
  DatasetWriter w = DatasetWriter::create(root, 30, robot_features(), "test_arm", o);
  for (size_t e = 0; e < kLengths.size(); ++e) {
    for (int k = 0; k < kLengths[e]; ++k) w.add_frame(make_frame(int(e), k, kLengths[e]));
    EXPECT_EQ(w.save_episode(kTasks[e]), int64_t(e));
  }
  return w;
}

float f32(double v) { return float(v); }

// The expected data rows of episode e, built independently of the writer.
io::Table expected_table(int e, int64_t first_index, const std::vector<int64_t>& task_ids) {
  const int n = kLengths[size_t(e)];
  std::vector<float> state, action, reward, ts;
  std::vector<bool> done;
  std::vector<std::string> top, wrist, top_names;
  std::vector<int64_t> frame, ep, index;
  for (int k = 0; k < n; ++k) {
    Frame f = make_frame(e, k, n);
    for (double v : f.values["observation.state"]) state.push_back(f32(v));
    for (double v : f.values["action"]) action.push_back(f32(v));
    reward.push_back(f32(f.values["next.reward"][0]));
    done.push_back(f.values["next.done"][0] != 0);
    auto png = [](const io::Image& im) {
      std::vector<uint8_t> b = io::encode_png(im);
      return std::string(b.begin(), b.end());
    };
    top.push_back(png(f.images["observation.images.top"]));
    wrist.push_back(png(f.images["observation.images.wrist"]));
    char name[32];
    std::snprintf(name, sizeof name, "frame-%06d.png", k);
    top_names.push_back(name);
    ts.push_back(f32(double(k) / 30));
    frame.push_back(k);
    ep.push_back(e);
    index.push_back(first_index + k);
  }
  auto image = [&](const std::string& key, const std::vector<std::string>& bytes) {
    return io::make_struct(key, {io::make_string("bytes", bytes, io::TypeId::kBinary), io::make_string("path", top_names)});
  };
  io::Table t;
  t.columns.push_back(io::make_list("observation.state", io::make_float("element", state), std::vector<int64_t>(size_t(n), 6)));
  t.columns.push_back(io::make_list("action", io::make_float("element", action), std::vector<int64_t>(size_t(n), 4)));
  t.columns.push_back(image("observation.images.top", top));
  t.columns.push_back(image("observation.images.wrist", wrist));
  t.columns.push_back(io::make_float("next.reward", reward));
  t.columns.push_back(io::make_bool("next.done", done));
  t.columns.push_back(io::make_float("timestamp", ts));
  t.columns.push_back(io::make_int64("frame_index", frame));
  t.columns.push_back(io::make_int64("episode_index", ep));
  t.columns.push_back(io::make_int64("index", index));
  t.columns.push_back(io::make_int64("task_index", task_ids));
  return t;
}

// Statistics of episode e computed directly from its frames (not through the writer).
std::map<std::string, FeatureStats> direct_stats(int e, int64_t first_index, int64_t task_index) {
  const int n = kLengths[size_t(e)];
  std::map<std::string, std::vector<double>> cols;
  std::vector<io::Image> top, wrist;
  for (int k = 0; k < n; ++k) {
    Frame f = make_frame(e, k, n);
    for (const char* key : {"observation.state", "action", "next.reward", "next.done"})
      for (double v : f.values[key]) cols[key].push_back(std::string(key) == "next.done" ? v : double(f32(v)));
    top.push_back(f.images["observation.images.top"]);
    wrist.push_back(f.images["observation.images.wrist"]);
    cols["timestamp"].push_back(double(k) / 30);
    cols["frame_index"].push_back(k);
    cols["episode_index"].push_back(e);
    cols["index"].push_back(double(first_index + k));
    cols["task_index"].push_back(double(task_index));
  }
  std::map<std::string, FeatureStats> s;
  for (const auto& [key, v] : cols) {
    int64_t dims = key == "observation.state" ? 6 : key == "action" ? 4 : 1;
    s[key] = compute_stats(v, dims, n);
  }
  // episodes this short are sampled whole
  s["observation.images.top"] = compute_image_stats(top);
  s["observation.images.wrist"] = compute_image_stats(wrist);
  return s;
}

void expect_stats_near(const std::map<std::string, FeatureStats>& got, const std::map<std::string, FeatureStats>& want,
                       double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (const auto& [key, fs] : want) {
    ASSERT_TRUE(got.count(key)) << what << ": " << key;
    for (const auto& [name, v] : fs) {
      ASSERT_TRUE(got.at(key).count(name)) << what << ": " << key << "/" << name;
      const std::vector<double>& g = got.at(key).at(name);
      ASSERT_EQ(g.size(), v.size()) << what << ": " << key << "/" << name;
      for (size_t i = 0; i < v.size(); ++i)
        EXPECT_NEAR(g[i], v[i], tol * (1 + std::abs(v[i]))) << what << ": " << key << "/" << name << "[" << i << "]";
    }
  }
}

// Checks a finished dataset against what was written, through ember's reader only.
void check_read_back(const std::string& root, const DatasetWriter& w, bool v3) {
  Metadata m = load_metadata(root);
  EXPECT_EQ(m.info.codebase_version, v3 ? "v3.0" : "v2.1");
  EXPECT_EQ(m.info.robot_type, "test_arm");
  EXPECT_EQ(m.info.fps, 30);
  EXPECT_EQ(m.info.total_episodes, 5);
  EXPECT_EQ(m.info.total_frames, 49);
  EXPECT_EQ(m.info.total_tasks, 3);
  ASSERT_EQ(m.info.features.size(), 11u);
  EXPECT_EQ(m.info.features[0].key, "observation.state");
  EXPECT_EQ(m.info.features[0].names.size(), 6u);
  EXPECT_EQ(m.info.features[6].key, "timestamp");
  EXPECT_EQ(m.info.features[10].key, "task_index");
  EXPECT_EQ(m.tasks, (std::vector<std::string>{"pick up the cube", "open the drawer", "stack the blocks"}));
  ASSERT_EQ(m.episodes.size(), 5u);

  // per episode: metadata, table rows, statistics
  const std::vector<int64_t> task_of = {0, 1, 0, 2, 1};
  std::vector<std::map<std::string, FeatureStats>> per_episode;
  std::map<std::pair<int64_t, int64_t>, std::set<int64_t>> episodes_in_file;
  for (int e = 0; e < 5; ++e) {
    const Episode& ep = m.episodes[size_t(e)];
    EXPECT_EQ(ep.length, kLengths[size_t(e)]);
    EXPECT_EQ(ep.tasks, std::vector<std::string>{kTasks[size_t(e)]});
    episodes_in_file[{ep.data_chunk, ep.data_file}].insert(e);
    auto reader = io::parquet::FileReader::open(m.data_file(ep));
    // one row group per episode: find this episode's
    int64_t first_in_file = ep.from_index;  // v2.1: a file per episode
    for (const Episode& o : m.episodes)
      if (v3 && o.data_chunk == ep.data_chunk && o.data_file == ep.data_file)
        first_in_file = std::min(first_in_file, o.from_index);
    int group = -1;
    for (int g = 0; g < reader->num_row_groups(); ++g)
      if (reader->row_group_start(g) == ep.from_index - first_in_file) group = g;
    ASSERT_GE(group, 0) << "episode " << e << " does not start a row group";
    EXPECT_EQ(reader->row_group_rows(group), ep.length);
    io::Table got = reader->read_row_group(group);
    io::Table want = expected_table(e, ep.from_index, std::vector<int64_t>(size_t(ep.length), task_of[size_t(e)]));
    ASSERT_EQ(got.columns.size(), want.columns.size());
    for (size_t c = 0; c < want.columns.size(); ++c)
      EXPECT_TRUE(io::equal(got.columns[c], want.columns[c]))
          << "episode " << e << " column " << want.columns[c].name << ": " << io::type_string(got.columns[c]) << " vs "
          << io::type_string(want.columns[c]);
    per_episode.push_back(direct_stats(e, ep.from_index, task_of[size_t(e)]));
    expect_stats_near(w.episode_stats()[size_t(e)], per_episode.back(), 1e-12, "episode " + std::to_string(e));
  }
  for (const auto& [file, eps] : episodes_in_file) {
    Episode probe;
    probe.index = *eps.begin();
    probe.data_chunk = file.first;
    probe.data_file = file.second;
    EXPECT_EQ(io::parquet::FileReader::open(m.data_file(probe))->num_row_groups(), v3 ? int(eps.size()) : 1);
  }

  // stats.json: the aggregate of the direct per-episode statistics
  expect_stats_near(m.stats, aggregate_stats(per_episode), 1e-12, "stats.json");
  // and its moments equal a direct computation over every frame
  std::vector<double> all_state;
  for (int e = 0; e < 5; ++e)
    for (int k = 0; k < kLengths[size_t(e)]; ++k) {
      Frame f = make_frame(e, k, kLengths[size_t(e)]);
      for (double v : f.values["observation.state"]) all_state.push_back(f32(v));
    }
  FeatureStats whole = compute_stats(all_state, 6);
  for (const char* k : {"min", "max", "mean", "std", "count"})
    for (size_t j = 0; j < whole.at(k).size(); ++j)
      EXPECT_NEAR(m.stats.at("observation.state").at(k)[j], whole.at(k)[j], 1e-12) << k;

  // every frame through Dataset: values, images (PNG is lossless), task
  Dataset ds(root);
  ASSERT_EQ(ds.size(), 49);
  for (int64_t i = 0; i < ds.size(); ++i) {
    Item it = ds.get(i);
    const Episode& ep = m.episode_of(i);
    int k = int(i - ep.from_index), e = int(ep.index);
    Frame f = make_frame(e, k, int(ep.length));
    EXPECT_EQ(it.task, kTasks[size_t(e)]);
    EXPECT_EQ(it.frame_index, k);
    EXPECT_FLOAT_EQ(float(it.timestamp), f32(k / 30.0));
    const std::vector<double>& st = it.values.at("observation.state").data;
    ASSERT_EQ(st.size(), 6u);
    for (size_t j = 0; j < 6; ++j) EXPECT_EQ(st[j], double(f32(f.values["observation.state"][j])));
    EXPECT_EQ(it.values.at("next.done").data, f.values["next.done"]);
    EXPECT_EQ(it.images.at("observation.images.top").at(0).rgb, f.images["observation.images.top"].rgb) << i;
    EXPECT_EQ(it.images.at("observation.images.wrist").at(0).rgb, f.images["observation.images.wrist"].rgb) << i;
  }
}

TEST(DatasetWriter, V3ManyDataFilesReadsBack) {
  TempDir dir;
  const std::string root = dir.path() + "/ds";
  WriterOptions o;
  o.data_file_size_mb = 0.02;  // about 20 KB: the episodes spread over several files
  DatasetWriter w = write_dataset(root, o);
  EXPECT_FALSE(fs::exists(root)) << "the dataset must not appear before finalize()";
  EXPECT_TRUE(fs::is_directory(w.temp_root()));
  w.finalize();
  EXPECT_TRUE(fs::is_directory(root));
  EXPECT_FALSE(fs::exists(w.temp_root()));
  std::set<std::string> files;
  for (const auto& f : fs::recursive_directory_iterator(root + "/data")) files.insert(f.path().filename().string());
  EXPECT_GE(files.size(), 3u);
  EXPECT_TRUE(files.count("file-000.parquet") && files.count("file-001.parquet"));
  for (const char* p : {"meta/info.json", "meta/stats.json", "meta/tasks.parquet", "meta/episodes/chunk-000/file-000.parquet"})
    EXPECT_TRUE(fs::exists(root + "/" + p)) << p;
  EXPECT_FALSE(fs::exists(root + "/meta/episodes.jsonl"));
  check_read_back(root, w, true);
}

TEST(DatasetWriter, V3OneFileKeepsEpisodesAsRowGroups) {
  TempDir dir;
  const std::string root = dir.path() + "/ds";
  DatasetWriter w = write_dataset(root, {});
  w.finalize();
  EXPECT_EQ(io::parquet::FileReader::open(root + "/data/chunk-000/file-000.parquet")->num_row_groups(), 5);
  EXPECT_FALSE(fs::exists(root + "/data/chunk-000/file-001.parquet"));
  check_read_back(root, w, true);
}

TEST(DatasetWriter, V3ChunksRollAfterChunksSizeFiles) {
  TempDir dir;
  const std::string root = dir.path() + "/ds";
  WriterOptions o;
  o.data_file_size_mb = 1e-6;  // a file per episode
  o.chunks_size = 2;
  DatasetWriter w = write_dataset(root, o);
  w.finalize();
  Metadata m = load_metadata(root);
  std::vector<std::pair<int64_t, int64_t>> where;
  for (const Episode& e : m.episodes) where.emplace_back(e.data_chunk, e.data_file);
  EXPECT_EQ(where, (std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 0}}));
  check_read_back(root, w, true);
}

TEST(DatasetWriter, V3MetadataFilesAreLeRobots) {
  TempDir dir;
  const std::string root = dir.path() + "/ds";
  DatasetWriter w = write_dataset(root, {});
  w.finalize();
  // info.json: LeRobot's fields in its order
  std::ifstream in(root + "/meta/info.json");
  nlohmann::ordered_json info = nlohmann::ordered_json::parse(in);
  std::vector<std::string> keys;
  for (const auto& it : info.items()) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"codebase_version", "robot_type", "total_episodes", "total_frames", "total_tasks",
                                            "chunks_size", "data_files_size_in_mb", "video_files_size_in_mb", "fps", "splits",
                                            "data_path", "video_path", "features"}));
  EXPECT_EQ(info["splits"]["train"], "0:5");
  EXPECT_TRUE(info["video_path"].is_null());
  EXPECT_EQ(info["fps"].dump(), "30");
  EXPECT_EQ(info["features"]["observation.images.top"]["dtype"], "image");
  // tasks.parquet: task_index, task, and pandas metadata naming task as the index
  auto tasks = io::parquet::FileReader::open(root + "/meta/tasks.parquet");
  EXPECT_EQ(tasks->column_names(), (std::vector<std::string>{"task_index", "task"}));
  bool pandas = false;
  for (const auto& kv : tasks->metadata().key_value_metadata)
    if (kv.key == "pandas") {
      pandas = true;
      auto j = nlohmann::json::parse(kv.value);
      EXPECT_EQ(j["index_columns"], nlohmann::json::array({"task"}));
      EXPECT_EQ(j["columns"].size(), 2u);
    }
  EXPECT_TRUE(pandas);
  // episodes: the standard columns, stats/<feature>/<stat> for every non-string feature
  auto eps = io::parquet::FileReader::open(root + "/meta/episodes/chunk-000/file-000.parquet");
  std::vector<std::string> cols = eps->column_names();
  auto has = [&](const std::string& c) { return std::find(cols.begin(), cols.end(), c) != cols.end(); };
  for (const char* c : {"episode_index", "tasks", "length", "data/chunk_index", "data/file_index", "dataset_from_index",
                        "dataset_to_index", "meta/episodes/chunk_index", "meta/episodes/file_index",
                        "stats/observation.state/q99", "stats/timestamp/mean", "stats/task_index/count",
                        "stats/observation.images.top/std"})
    EXPECT_TRUE(has(c)) << c;
  io::Table t = eps->read({"stats/observation.images.top/mean", "stats/frame_index/max", "stats/observation.state/mean"});
  EXPECT_EQ(io::type_string(t.columns[0]).find("list<element: list<element: list<"), 0u) << io::type_string(t.columns[0]);
  EXPECT_EQ(t.columns[1].child().type, io::TypeId::kInt64);
  EXPECT_EQ(t.columns[2].child().type, io::TypeId::kDouble);
  EXPECT_EQ(t.columns[1].child().value<int64_t>(0), kLengths[0] - 1);
}

TEST(DatasetWriter, V21OneFilePerEpisodeReadsBack) {
  TempDir dir;
  const std::string root = dir.path() + "/ds";
  WriterOptions o;
  o.version = DatasetVersion::kV2_1;
  DatasetWriter w = write_dataset(root, o);
  w.finalize();
  for (int e = 0; e < 5; ++e) {
    char name[64];
    std::snprintf(name, sizeof name, "/data/chunk-000/episode_%06d.parquet", e);
    EXPECT_TRUE(fs::exists(root + name)) << name;
  }
  for (const char* p : {"meta/info.json", "meta/stats.json", "meta/tasks.jsonl", "meta/episodes.jsonl",
                        "meta/episodes_stats.jsonl"})
    EXPECT_TRUE(fs::exists(root + "/" + p)) << p;
  EXPECT_FALSE(fs::exists(root + "/meta/tasks.parquet"));
  std::ifstream in(root + "/meta/info.json");
  nlohmann::ordered_json info = nlohmann::ordered_json::parse(in);
  EXPECT_EQ(info["total_chunks"], 1);
  EXPECT_EQ(info["total_videos"], 0);
  EXPECT_EQ(info["data_path"], "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet");
  EXPECT_FALSE(info.contains("data_files_size_in_mb"));
  // episodes_stats.jsonl: one line per episode with the writer's statistics
  std::ifstream es(root + "/meta/episodes_stats.jsonl");
  std::string line;
  int n = 0;
  while (std::getline(es, line)) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["episode_index"], n);
    EXPECT_EQ(j["stats"]["observation.state"]["count"], nlohmann::json::array({kLengths[size_t(n)]}));
    EXPECT_EQ(j["stats"]["observation.images.top"]["mean"].size(), 3u);
    EXPECT_EQ(j["stats"]["observation.images.top"]["mean"][0].dump().front(), '[');
    ++n;
  }
  EXPECT_EQ(n, 5);
  check_read_back(root, w, false);
}

TEST(DatasetWriter, PerFrameTasksAndTimestamps) {
  TempDir dir;
  const std::string root = dir.path() + "/ds";
  DatasetWriter w = DatasetWriter::create(root, 10, {feature("x", "float64", {2}), feature("note", "string", {1})});
  for (int k = 0; k < 4; ++k) {
    Frame f;
    f.values["x"] = {double(k), -double(k)};
    f.strings["note"] = "n" + std::to_string(k);
    f.task = k < 2 ? "first" : "";
    f.timestamp = 0.1 * k;
    w.add_frame(f);
  }
  w.save_episode("second");
  w.finalize();
  Metadata m = load_metadata(root);
  EXPECT_EQ(m.tasks, (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(m.episodes[0].tasks, (std::vector<std::string>{"first", "second"}));
  EXPECT_FALSE(m.stats.count("note"));  // strings have no statistics
  io::Table t = io::parquet::FileReader::open(root + "/data/chunk-000/file-000.parquet")->read();
  EXPECT_EQ(t.find("task_index")->data<int64_t>()[3], 1);
  EXPECT_EQ(t.find("note")->str(2), "n2");
  EXPECT_EQ(t.find("x")->child().type, io::TypeId::kDouble);
}

// --- errors and the temporary directory ---

template <class F>
void expect_error(F&& f, ErrorKind kind, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error (expected one mentioning '" << needle << "')";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(DatasetWriterErrors, VideoFeaturesNeedFFmpegAndEvenSizes) {
  TempDir dir;
  if (!io::video_support_available()) {
    expect_error([&] { DatasetWriter::create(dir.path() + "/ds", 30, {feature("cam", "video", {8, 8, 3})}); },
                 ErrorKind::kUnsupported, "FFmpeg");
  } else {
    expect_error([&] { DatasetWriter::create(dir.path() + "/ds", 30, {feature("cam", "video", {9, 8, 3})}); },
                 ErrorKind::kInvalidArgument, "even");
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(DatasetWriterErrors, BadFeatures) {
  TempDir dir;
  const std::string root = dir.path() + "/ds";
  expect_error([&] { DatasetWriter::create(root, 30, {feature("a/b", "float32", {2})}); }, ErrorKind::kInvalidArgument, "a/b");
  expect_error([&] { DatasetWriter::create(root, 30, {feature("m", "float32", {2, 2})}); }, ErrorKind::kUnsupported, "'m'");
  expect_error([&] { DatasetWriter::create(root, 30, {feature("u", "uint16", {2})}); }, ErrorKind::kUnsupported, "uint16");
  expect_error([&] { DatasetWriter::create(root, 30, {feature("cam", "image", {8, 8})}); }, ErrorKind::kInvalidArgument, "cam");
  expect_error([&] { DatasetWriter::create(root, 30, {feature("index", "float32", {1})}); }, ErrorKind::kInvalidArgument, "index");
  expect_error([&] { DatasetWriter::create(root, 30, {feature("a", "float32", {2}), feature("a", "float32", {2})}); },
               ErrorKind::kInvalidArgument, "twice");
  expect_error([&] { DatasetWriter::create(root, 0, {feature("a", "float32", {2})}); }, ErrorKind::kInvalidArgument, "fps");
  // the standard features may be given when they match LeRobot's
  DatasetWriter ok = DatasetWriter::create(root, 30, {feature("a", "float32", {2}), feature("index", "int64", {1})});
  EXPECT_EQ(ok.info().features.size(), 6u);
}

TEST(DatasetWriterErrors, BadFramesNameTheFeatureAndAreNotAdded) {
  TempDir dir;
  DatasetWriter w = DatasetWriter::create(dir.path() + "/ds", 30, robot_features());
  Frame f = make_frame(0, 0, 3);
  Frame missing = f;
  missing.values.erase("action");
  expect_error([&] { w.add_frame(missing); }, ErrorKind::kInvalidArgument, "'action' is missing");
  Frame short_state = f;
  short_state.values["observation.state"].pop_back();
  expect_error([&] { w.add_frame(short_state); }, ErrorKind::kInvalidArgument, "'observation.state': got 5 values");
  Frame extra = f;
  extra.values["velocity"] = {1};
  expect_error([&] { w.add_frame(extra); }, ErrorKind::kInvalidArgument, "'velocity' is not a feature");
  Frame small = f;
  small.images["observation.images.top"] = picture(8, 8, 0, 0, 0);
  expect_error([&] { w.add_frame(small); }, ErrorKind::kInvalidArgument, "'observation.images.top'");
  Frame no_image = f;
  no_image.images.erase("observation.images.wrist");
  expect_error([&] { w.add_frame(no_image); }, ErrorKind::kInvalidArgument, "'observation.images.wrist' is missing");
  Frame bad_bool = f;
  bad_bool.values["next.done"] = {0.5};
  expect_error([&] { w.add_frame(bad_bool); }, ErrorKind::kInvalidArgument, "'next.done'");
  EXPECT_EQ(w.buffered_frames(), 0);
  w.add_frame(f);
  EXPECT_EQ(w.buffered_frames(), 1);
}

TEST(DatasetWriterErrors, EpisodeAndFinalizeMisuse) {
  TempDir dir;
  const std::string root = dir.path() + "/ds";
  DatasetWriter w = DatasetWriter::create(root, 30, robot_features());
  expect_error([&] { w.save_episode("t"); }, ErrorKind::kInvalidArgument, "without frames");
  expect_error([&] { w.finalize(); }, ErrorKind::kInvalidArgument, "before any save_episode");
  w.add_frame(make_frame(0, 0, 2));
  expect_error([&] { w.save_episode(); }, ErrorKind::kInvalidArgument, "has no task");
  EXPECT_EQ(w.buffered_frames(), 1);  // kept: the caller can retry with a task
  w.save_episode("t");
  w.add_frame(make_frame(1, 0, 2));
  expect_error([&] { w.finalize(); }, ErrorKind::kInvalidArgument, "not saved");
  w.clear_episode();
  w.finalize();
  EXPECT_EQ(load_metadata(root).info.total_episodes, 1);
  expect_error([&] { w.add_frame(make_frame(0, 0, 2)); }, ErrorKind::kInvalidArgument, "after finalize");
}

TEST(DatasetWriterErrors, ExistingRootIsRefusedUnlessOverwrite) {
  TempDir dir;
  const std::string root = dir.path() + "/ds";
  fs::create_directories(root);
  std::ofstream(root + "/keep.txt") << "old";
  expect_error([&] { DatasetWriter::create(root, 30, robot_features()); }, ErrorKind::kInvalidArgument, "already exists");
  WriterOptions o;
  o.overwrite = true;
  DatasetWriter w = DatasetWriter::create(root, 30, robot_features(), "", o);
  w.add_frame(make_frame(0, 0, 1));
  w.save_episode("t");
  EXPECT_TRUE(fs::exists(root + "/keep.txt"));  // replaced only at finalize()
  w.finalize();
  EXPECT_FALSE(fs::exists(root + "/keep.txt"));
  EXPECT_EQ(load_metadata(root).info.total_frames, 1);
  // a root that appears while writing is not overwritten either
  const std::string other = dir.path() + "/other";
  DatasetWriter v = DatasetWriter::create(other, 30, robot_features());
  v.add_frame(make_frame(0, 0, 1));
  v.save_episode("t");
  fs::create_directories(other);
  expect_error([&] { v.finalize(); }, ErrorKind::kInvalidArgument, "already exists");
  fs::remove_all(other);
  v.finalize();  // still usable once the way is clear
  EXPECT_EQ(load_metadata(other).info.total_episodes, 1);
}

TEST(DatasetWriterErrors, DestructorWithoutFinalizeLeavesNothing) {
  TempDir dir;
  const std::string root = dir.path() + "/ds";
  std::string tmp;
  {
    WriterOptions o;
    o.data_file_size_mb = 1e-6;
    DatasetWriter w = write_dataset(root, o);
    tmp = w.temp_root();
    EXPECT_TRUE(fs::exists(tmp + "/data/chunk-000/file-000.parquet"));
  }
  EXPECT_FALSE(fs::exists(tmp));
  EXPECT_FALSE(fs::exists(root));
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(DatasetWriterErrors, MovedFromWriterIsHarmless) {
  TempDir dir;
  DatasetWriter a = DatasetWriter::create(dir.path() + "/ds", 30, robot_features());
  DatasetWriter b = std::move(a);
  b.add_frame(make_frame(0, 0, 1));
  b.save_episode("t");
  b.finalize();
  EXPECT_TRUE(fs::exists(dir.path() + "/ds/meta/info.json"));
}

// --- video cameras ---
// Frames show their global index as 12 stripes in the top half (white = 1, most significant
// bit left), like the LeRobot fixtures, so a wrong frame shows a wrong number whatever the
// codec's loss.

const char* const kTop = "observation.images.top";
const char* const kWrist = "observation.images.wrist";
const int kVideoLengths[] = {20, 31, 17};

using test::draw_stripes;

using test::stripe_index;

DatasetWriter write_video_dataset(const std::string& root, WriterOptions o) {
  std::vector<Feature> features = {feature("observation.state", "float32", {3}, {"a", "b", "c"}),
                                   feature(kTop, "video", {64, 96, 3}, {"height", "width", "channels"}),
                                   feature(kWrist, "video", {80, 96, 3}, {"height", "width", "channels"})};
  DatasetWriter w = DatasetWriter::create(root, 30, features, "fixture_arm", o);
  int64_t index = 0;
  for (int e = 0; e < 3; ++e) {
    for (int k = 0; k < kVideoLengths[e]; ++k, ++index) {
      Frame f;
      f.values["observation.state"] = {double(index), 0.5 * k, -1.0 * e};
      f.images[kTop] = draw_stripes(index, 64, 96);
      f.images[kWrist] = draw_stripes(index, 80, 96);
      w.add_frame(f);
    }
    w.save_episode("task " + std::to_string(e % 2));
  }
  return w;
}

// Reads every frame back through Dataset (tolerance 1e-4) and checks the whole dataset.
void check_video_dataset(const std::string& root) {
  Dataset ds(root);
  ASSERT_EQ(ds.size(), 20 + 31 + 17);
  for (int64_t i = 0; i < ds.size(); ++i) {
    Item it = ds.get(i);
    EXPECT_EQ(it.values.at("observation.state").data.at(0), double(i));
    EXPECT_EQ(it.values.count(kTop), 0u);
    for (const char* cam : {kTop, kWrist}) {
      ASSERT_EQ(it.images.at(cam).size(), 1u);
      EXPECT_EQ(stripe_index(it.images.at(cam)[0]), i) << cam << " item " << i;
    }
  }
  CheckReport r = check_dataset(root);
  for (const Problem& p : r.problems) ADD_FAILURE() << p.file << ": " << p.message;
  EXPECT_EQ(r.frames, ds.size());
  // LeRobot's info block, from the encoded files
  std::ifstream in(root + "/meta/info.json");
  nlohmann::json info = nlohmann::json::parse(in);
  for (const char* cam : {kTop, kWrist}) {
    const nlohmann::json& v = info["features"][cam]["info"];
    EXPECT_EQ(v["video.height"], std::string(cam) == kTop ? 64 : 80);
    EXPECT_EQ(v["video.width"], 96);
    EXPECT_TRUE(v["video.codec"] == "av1" || v["video.codec"] == "h264") << v;
    EXPECT_EQ(v["video.pix_fmt"], "yuv420p");
    EXPECT_EQ(v["video.is_depth_map"], false);
    EXPECT_EQ(v["video.fps"], 30);
    EXPECT_EQ(v["video.channels"], 3);
    EXPECT_EQ(v["has_audio"], false);
  }
  // camera statistics from the frames, as for image cameras
  const Metadata& m = ds.meta();
  ASSERT_TRUE(m.stats.count(kTop));
  EXPECT_EQ(m.stats.at(kTop).at("mean").size(), 3u);
  EXPECT_EQ(m.stats.at(kTop).at("count").at(0), 20 + 31 + 17);
}

TEST(DatasetWriterVideo, V3CamerasJoinIntoOneFileAndReadBack) {
  if (!io::video_support_available()) GTEST_SKIP() << "built without FFmpeg: video cameras cannot be written";
  TempDir dir;
  const std::string root = dir.path() + "/ds";
  DatasetWriter w = write_video_dataset(root, {});
  w.finalize();
  check_video_dataset(root);
  Metadata m = load_metadata(root);
  EXPECT_EQ(m.info.video_path, "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4");
  double start = 0;
  for (const Episode& e : m.episodes) {
    const VideoSpan& v = m.episodes[size_t(e.index)].videos.at(kTop);
    EXPECT_EQ(v.file, 0);
    EXPECT_NEAR(v.from_timestamp, start, 1e-9);  // one after another, exactly
    EXPECT_NEAR(v.to_timestamp - v.from_timestamp, e.length / 30.0, 1e-9);
    start = v.to_timestamp;
  }
  EXPECT_FALSE(fs::exists(root + "/.video-parts"));
  EXPECT_FALSE(fs::exists(root + "/videos/" + kTop + "/chunk-000/file-001.mp4"));
}

TEST(DatasetWriterVideo, V3VideoFilesRollOver) {
  if (!io::video_support_available()) GTEST_SKIP() << "built without FFmpeg: video cameras cannot be written";
  TempDir dir;
  const std::string root = dir.path() + "/ds";
  WriterOptions o;
  o.video_file_size_mb = 1e-6;  // a file per episode
  o.chunks_size = 2;
  DatasetWriter w = write_video_dataset(root, o);
  w.finalize();
  check_video_dataset(root);
  Metadata m = load_metadata(root);
  std::vector<std::pair<int64_t, int64_t>> where;
  for (const Episode& e : m.episodes) {
    where.emplace_back(e.videos.at(kWrist).chunk, e.videos.at(kWrist).file);
    EXPECT_EQ(e.videos.at(kWrist).from_timestamp, 0);
  }
  EXPECT_EQ(where, (std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {0, 1}, {1, 0}}));
}

TEST(DatasetWriterVideo, V21OneVideoPerEpisodeAndCamera) {
  if (!io::video_support_available()) GTEST_SKIP() << "built without FFmpeg: video cameras cannot be written";
  TempDir dir;
  const std::string root = dir.path() + "/ds";
  WriterOptions o;
  o.version = DatasetVersion::kV2_1;
  DatasetWriter w = write_video_dataset(root, o);
  w.finalize();
  check_video_dataset(root);
  for (int e = 0; e < 3; ++e)
    for (const char* cam : {kTop, kWrist})
      EXPECT_TRUE(fs::exists(root + "/videos/chunk-000/" + cam + "/episode_00000" + std::to_string(e) + ".mp4"));
  std::ifstream in(root + "/meta/info.json");
  EXPECT_EQ(nlohmann::json::parse(in)["total_videos"], 6);
}

TEST(DatasetWriterVideo, ClearedEpisodeAndDestroyedWriterLeaveNothing) {
  if (!io::video_support_available()) GTEST_SKIP() << "built without FFmpeg: video cameras cannot be written";
  TempDir dir;
  const std::string root = dir.path() + "/ds";
  {
    DatasetWriter w = write_video_dataset(root, {});
    Frame f;
    f.values["observation.state"] = {0, 0, 0};
    f.images[kTop] = draw_stripes(0, 64, 96);
    f.images[kWrist] = draw_stripes(0, 80, 96);
    w.add_frame(f);
    w.clear_episode();
    w.add_frame(f);
    w.save_episode("x");  // a fresh encoder after the cleared one
    EXPECT_EQ(w.num_frames(), 20 + 31 + 17 + 1);
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

}  // namespace
}  // namespace ember::data
