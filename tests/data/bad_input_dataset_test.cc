// Bad dataset tables never crash ember, never give a frame an empty or wrong task, and
// `check` catches what opening and sampling the dataset would trip on (issue 26). Each input
// is a copy of a fixture dataset with one table rewritten here.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/data/check.h"
#include "ember/data/dataset.h"
#include "ember/data/metadata.h"
#include "ember/io/json.h"
#include "ember/io/parquet/reader.h"
#include "ember/io/parquet/writer.h"
#include "ember/io/video/video_decoder.h"
#include "test_util.h"

namespace ember::data {
namespace {

namespace fs = std::filesystem;
const std::string kData = EMBER_TEST_DATA;
const std::string kEpisodes = "meta/episodes/chunk-000/file-000.parquet";
const std::string kV30Data = "data/chunk-000/file-000.parquet";
const std::string kV21Data = "data/chunk-000/episode_000000.parquet";

struct DatasetCopy {
  test::TempDir dir{"ember_bad_dataset"};
  std::string root;
  explicit DatasetCopy(const std::string& fixture) : root(dir.path() + "/ds") {
    fs::copy(kData + "/" + fixture, root, fs::copy_options::recursive);
  }
  std::string path(const std::string& rel) const { return root + "/" + rel; }
  io::Table read(const std::string& rel) const { return io::parquet::FileReader::open(path(rel))->read(); }
  void write(const std::string& rel, const io::Table& t) const { io::parquet::write_table(path(rel), t); }
  void write_text(const std::string& rel, const std::string& text) const {
    fs::remove(path(rel));
    std::ofstream(path(rel), std::ios::binary) << text;
  }
  std::string text(const std::string& rel) const {
    std::vector<uint8_t> b = read_file(path(rel));
    return std::string(b.begin(), b.end());
  }
  // Replaces column `name` of a table file.
  void replace_column(const std::string& rel, io::Column c) const {
    io::Table t = read(rel);
    for (io::Column& old : t.columns)
      if (old.name == c.name) old = std::move(c);
    write(rel, t);
  }
  void drop_column(const std::string& rel, const std::string& name) const {
    io::Table t = read(rel);
    std::erase_if(t.columns, [&](const io::Column& c) { return c.name == name; });
    write(rel, t);
  }
  // info.json without one feature.
  void drop_feature(const std::string& key) const {
    nlohmann::ordered_json j = io::parse_ordered_json(text("meta/info.json"), "info.json");
    j["features"].erase(key);
    write_text("meta/info.json", j.dump(4));
  }
  // info.json with one top-level field set.
  void set_info(const std::string& key, nlohmann::json value) const {
    nlohmann::ordered_json j = io::parse_ordered_json(text("meta/info.json"), "info.json");
    j[key] = value;
    write_text("meta/info.json", j.dump(4));
  }
};

using test::error_of;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Every problem of a check, one per line, for messages.
std::string all(const std::vector<Problem>& ps) {
  std::string s;
  for (const Problem& p : ps) s += p.file + ": " + p.message + "\n";
  return s;
}

int64_t rows_of(const io::Table& t) { return t.num_rows(); }

// --- item 3: types and indices taken from metadata -------------------------------------------

TEST(BadInputEpisodes, TasksAsListOfInt64IsRefused) {
  DatasetCopy ds("lerobot_v3_0");
  int64_t n = rows_of(ds.read(kEpisodes));
  ds.replace_column(kEpisodes, io::make_list("tasks", io::make_int64("element", std::vector<int64_t>(size_t(n), 7)),
                                             std::vector<int64_t>(size_t(n), 1)));
  std::string msg = error_of([&] { load_metadata(ds.root); });
  EXPECT_TRUE(contains(msg, kEpisodes + ": column 'tasks' has type list<")) << msg;
  EXPECT_TRUE(contains(msg, "expected list<string>")) << msg;
  CheckReport r = check_dataset(ds.root);
  EXPECT_TRUE(contains(all(r.problems), "column 'tasks'")) << all(r.problems);
}

TEST(BadInputEpisodes, TasksAsListOfStructIsRefused) {
  DatasetCopy ds("lerobot_v3_0");
  int64_t n = rows_of(ds.read(kEpisodes));
  io::Column s = io::make_struct("element", {io::make_int64("a", std::vector<int64_t>(size_t(n), 1))});
  ds.replace_column(kEpisodes, io::make_list("tasks", s, std::vector<int64_t>(size_t(n), 1)));
  std::string msg = error_of([&] { Dataset d(ds.root); });
  EXPECT_TRUE(contains(msg, "column 'tasks' has type list<")) << msg;
}

TEST(BadInputEpisodes, FirstEpisodeNotAtFrameZeroIsRefused) {
  DatasetCopy ds("lerobot_v3_0");
  io::Table t = ds.read(kEpisodes);
  for (io::Column& c : t.columns)
    if (c.name == "dataset_from_index" || c.name == "dataset_to_index")
      for (int64_t r = 0; r < c.length; ++r) {
        int64_t v = c.value<int64_t>(r) + 5;
        std::memcpy(c.values.data() + size_t(r) * 8, &v, 8);
      }
  ds.write(kEpisodes, t);
  ds.set_info("total_frames", 266);  // the totals agree with the shifted ranges
  std::string msg = error_of([&] { Dataset d(ds.root); });
  EXPECT_TRUE(contains(msg, "episode 0 (the first) starts at frame 5 (dataset_from_index), expected 0")) << msg;
  CheckReport r = check_dataset(ds.root);
  EXPECT_FALSE(r.problems.empty());
}

TEST(BadInputEpisodes, NanFromTimestampIsRefused) {
  DatasetCopy ds("lerobot_v3_0");
  io::Table t = ds.read(kEpisodes);
  for (io::Column& c : t.columns)
    if (c.name == "videos/observation.images.top/from_timestamp") {
      double nan = NAN;
      std::memcpy(c.values.data() + 8, &nan, 8);  // episode 1
    }
  ds.write(kEpisodes, t);
  CheckReport r = check_dataset(ds.root);
  EXPECT_TRUE(contains(all(r.problems), "episode 1: column 'videos/observation.images.top/from_timestamp' is nan")) << all(r.problems);
}

// --- item 4: tasks -------------------------------------------------------------------------

TEST(BadInputTasks, V21TaskIndexMissingFromTasksJsonlIsRefused) {
  DatasetCopy ds("lerobot_v2_1");
  // episode 0 uses task 1; the table defines 0 and 2 only
  ds.write_text("meta/tasks.jsonl", "{\"task_index\": 0, \"task\": \"a\"}\n{\"task_index\": 2, \"task\": \"c\"}\n");
  Dataset d(ds.root);
  std::string msg = error_of([&] { d.get(0); });
  EXPECT_TRUE(contains(msg, "task_index 1 has no task in " + ds.root + "/meta/tasks.jsonl")) << msg;
  CheckReport r = check_dataset(ds.root);
  EXPECT_TRUE(contains(all(r.problems), "column 'task_index': 37 rows name no task of")) << all(r.problems);
}

TEST(BadInputTasks, V30TaskIndexOutsideTasksParquetIsRefused) {
  DatasetCopy ds("lerobot_v3_0");
  io::Table tasks;
  tasks.columns = {io::make_string("task", {"only one"}), io::make_int64("task_index", {0})};
  ds.write("meta/tasks.parquet", tasks);
  Dataset d(ds.root);
  bool refused = false;
  for (int64_t i = 0; i < d.size(); i += 20) {
    try {
      Item item = d.get(i);
      EXPECT_EQ(item.task, "only one");
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.what(), "has no task in " + ds.root + "/meta/tasks.parquet")) << e.what();
      refused = true;
    }
  }
  EXPECT_TRUE(refused);
  CheckReport r = check_dataset(ds.root);
  EXPECT_TRUE(contains(all(r.problems), "rows name no task of " + ds.root + "/meta/tasks.parquet")) << all(r.problems);
}

TEST(BadInputTasks, V21WithoutTaskIndexColumnTakesTheEpisodesTask) {
  DatasetCopy ds("lerobot_v2_1");
  for (int e = 0; e < 3; ++e) ds.drop_column("data/chunk-000/episode_00000" + std::to_string(e) + ".parquet", "task_index");
  ds.drop_feature("task_index");  // as in the public dataset this mirrors
  DatasetOptions o;
  o.decode_images = false;
  Dataset d(ds.root, o);
  EXPECT_EQ(d.get(0).task, "push the blue block to the left edge");
  EXPECT_EQ(d.get(40).task, "open the top drawer");
  EXPECT_EQ(d.get(d.size() - 1).task, "pick up the red cube and place it in the bowl");
  CheckReport r = check_dataset(ds.root);
  EXPECT_TRUE(r.problems.empty()) << all(r.problems);
  EXPECT_TRUE(contains(all(r.warnings), "no column 'task_index'")) << all(r.warnings);
}

TEST(BadInputTasks, WithoutTaskIndexAndWithoutEpisodeTaskIsRefused) {
  DatasetCopy ds("lerobot_v2_1");
  ds.drop_column(kV21Data, "task_index");
  ds.drop_feature("task_index");
  ds.write_text("meta/episodes.jsonl",
                "{\"episode_index\": 0, \"tasks\": [], \"length\": 37}\n"
                "{\"episode_index\": 1, \"tasks\": [\"open the top drawer\"], \"length\": 62}\n"
                "{\"episode_index\": 2, \"tasks\": [\"pick up the red cube and place it in the bowl\"], \"length\": 36}\n");
  DatasetOptions o;
  o.decode_images = false;
  Dataset d(ds.root, o);
  std::string msg = error_of([&] { d.get(3); });
  EXPECT_TRUE(contains(msg, kV21Data + ": no column 'task_index', and episode 0 names 0 tasks")) << msg;
}

// --- item 5: what LeRobot reads -------------------------------------------------------------

TEST(BadInputEpisodes, StrayEpisodeTableBesideTheChunksIsIgnored) {
  DatasetCopy ds("lerobot_v3_0");
  fs::copy_file(ds.path(kEpisodes), ds.path("meta/episodes/file-000.parquet"));
  Metadata m = load_metadata(ds.root);
  EXPECT_EQ(m.episodes.size(), 5u);
  CheckReport r = check_dataset(ds.root);
  EXPECT_TRUE(r.problems.empty()) << all(r.problems);
  EXPECT_TRUE(contains(all(r.warnings), ds.path("meta/episodes/file-000.parquet") + ": stray file")) << all(r.warnings);
}

// --- item 6: totals -------------------------------------------------------------------------

TEST(BadInputTotals, MoreFramesThanTheEpisodesHoldIsRefusedNamingTheTrueCount) {
  DatasetCopy ds("lerobot_v3_0");
  ds.set_info("total_frames", 300);
  std::string msg = error_of([&] { load_metadata(ds.root); });
  EXPECT_TRUE(contains(msg, "field 'total_frames' is 300 but the episodes hold 261 frames")) << msg;
  EXPECT_TRUE(contains(msg, "ember data check --fix")) << msg;
}

TEST(BadInputTotals, FixRewritesTheTotalsAndKeepsTheRest) {
  DatasetCopy ds("lerobot_v3_0");
  ds.set_info("total_frames", 300);
  ds.set_info("total_episodes", 9);
  std::vector<std::string> changed = fix_totals(ds.root);
  ASSERT_EQ(changed.size(), 2u);
  EXPECT_EQ(changed[0], "total_episodes: 9 -> 5");
  EXPECT_EQ(changed[1], "total_frames: 300 -> 261");
  Metadata m = load_metadata(ds.root);
  EXPECT_EQ(m.info.total_frames, 261);
  EXPECT_EQ(m.info.robot_type, "fixture_arm");
  EXPECT_TRUE(contains(ds.text("meta/info.json"), "\"splits\""));
  EXPECT_TRUE(fix_totals(ds.root).empty());
  for (const auto& e : fs::directory_iterator(ds.path("meta")))
    EXPECT_FALSE(contains(e.path().string(), ".tmp-")) << e.path();
}

// --- item 9: check catches what sampling trips on -------------------------------------------

TEST(BadInputCheck, StateOfAnotherLengthThanInfoJson) {
  DatasetCopy ds("lerobot_v3_0");
  int64_t n = rows_of(ds.read(kV30Data));
  ds.replace_column(kV30Data, io::make_list("observation.state", io::make_float("element", std::vector<float>(size_t(n) * 5, 0.5f)),
                                            std::vector<int64_t>(size_t(n), 5)));
  CheckReport r = check_dataset(ds.root);
  EXPECT_TRUE(contains(all(r.problems), "column 'observation.state': " + std::to_string(n) +
                                            " rows do not hold the 8 values of info.json's shape (first: episode 0 frame 0 holds 5 values)"))
      << all(r.problems);
}

TEST(BadInputCheck, NullsInAction) {
  DatasetCopy ds("lerobot_v3_0");
  int64_t n = rows_of(ds.read(kV30Data));
  std::vector<int64_t> sizes(size_t(n), 7);
  sizes[3] = 0;  // a null list holds nothing
  io::Column action = io::make_list("action", io::make_float("element", std::vector<float>(size_t(n - 1) * 7, 0.5f)), sizes);
  action.validity.assign(size_t(n), 1);
  action.validity[3] = 0;
  ds.replace_column(kV30Data, action);
  CheckReport r = check_dataset(ds.root);
  EXPECT_TRUE(contains(all(r.problems), "column 'action' holds nulls in 1 rows (first: episode 0 frame 3)")) << all(r.problems);
}

TEST(BadInputCheck, Float64StoredWhereFloat32IsDeclaredWarns) {
  DatasetCopy ds("lerobot_v3_0");
  int64_t n = rows_of(ds.read(kV30Data));
  ds.replace_column(kV30Data, io::make_list("action", io::make_double("element", std::vector<double>(size_t(n) * 7, 0.25)),
                                            std::vector<int64_t>(size_t(n), 7)));
  CheckReport r = check_dataset(ds.root);
  EXPECT_TRUE(r.problems.empty()) << all(r.problems);
  EXPECT_TRUE(contains(all(r.warnings), "column 'action' is stored as list<element: double>, info.json declares float32"))
      << all(r.warnings);
}

TEST(BadInputCheck, FixturesPassAndDecodeTheirBoundaries) {
  for (const char* fixture : {"lerobot_v2_1", "lerobot_v3_0"}) {
    CheckReport r = check_dataset(kData + "/" + fixture);
    EXPECT_TRUE(r.problems.empty()) << all(r.problems);
    EXPECT_TRUE(r.warnings.empty()) << all(r.warnings);
    if (io::video_support_available()) {
      EXPECT_GT(r.frames_decoded, 0);
    }
  }
}

}  // namespace
}  // namespace ember::data
