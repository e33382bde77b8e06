// LeRobot metadata of the v2.1 and v3.0 fixtures, and lenient / strict parsing of info.json.
#include <gtest/gtest.h>

#include <chrono>
#include <unistd.h>

#include <filesystem>

#include "ember/core/error.h"
#include "ember/data/metadata.h"
#include "ember/data/path_template.h"

namespace ember::data {
namespace {

const std::string kData = EMBER_TEST_DATA;

TEST(Metadata, ReadsV21Fixture) {
  Metadata m = load_metadata(kData + "/lerobot_v2_1");
  EXPECT_EQ(m.info.codebase_version, "v2.1");
  EXPECT_EQ(m.info.fps, 30);
  ASSERT_EQ(m.episodes.size(), 3u);
  EXPECT_EQ(m.episodes[0].length, 37);
  EXPECT_EQ(m.episodes[1].length, 62);
  EXPECT_EQ(m.episodes[2].length, 36);
  EXPECT_EQ(m.episodes[1].from_index, 37);
  EXPECT_EQ(m.num_frames(), 135);
  EXPECT_EQ(m.episodes[1].tasks, std::vector<std::string>{"open the top drawer"});
  ASSERT_EQ(m.tasks.size(), 3u);
  EXPECT_EQ(m.tasks[0], "pick up the red cube and place it in the bowl");
  EXPECT_EQ(m.data_file(m.episodes[2]), kData + "/lerobot_v2_1/data/chunk-000/episode_000002.parquet");
  EXPECT_EQ(m.video_file(m.episodes[1], "observation.images.top"),
            kData + "/lerobot_v2_1/videos/chunk-000/observation.images.top/episode_000001.mp4");
  ASSERT_EQ(m.stats.count("observation.state"), 1u);
  EXPECT_EQ(m.stats["observation.state"]["mean"].size(), 8u);
  // per-episode statistics from episodes_stats.jsonl
  EXPECT_EQ(m.episodes[1].stats.at("observation.state").at("mean").size(), 8u);
  EXPECT_EQ(m.episodes[1].stats.at("observation.state").at("count").at(0), 62.0);
  EXPECT_EQ(m.episode_of(37).index, 1);
  EXPECT_EQ(m.episode_of(36).index, 0);
  EXPECT_EQ(m.episode_of(134).index, 2);
  EXPECT_THROW(m.episode_of(135), Error);
}

TEST(Metadata, ReadsV30Fixture) {
  Metadata m = load_metadata(kData + "/lerobot_v3_0");
  EXPECT_TRUE(m.info.is_v3());
  ASSERT_EQ(m.episodes.size(), 5u);
  std::vector<int64_t> lengths = {44, 68, 31, 59, 59};
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(m.episodes[i].length, lengths[i]);
  EXPECT_EQ(m.num_frames(), 261);
  const Episode& e3 = m.episodes[3];
  EXPECT_EQ(e3.data_file, 1);
  EXPECT_EQ(m.data_file(e3), kData + "/lerobot_v3_0/data/chunk-000/file-001.parquet");
  EXPECT_EQ(m.video_file(e3, "observation.images.wrist"),
            kData + "/lerobot_v3_0/videos/observation.images.wrist/chunk-000/file-001.mp4");
  EXPECT_EQ(e3.videos.at("observation.images.top").from_timestamp, 0.0);
  EXPECT_GT(m.episodes[1].videos.at("observation.images.top").from_timestamp, 1.4);
  ASSERT_EQ(m.tasks.size(), 3u);
  EXPECT_EQ(m.info.cameras().size(), 2u);
  // per-episode statistics from the stats/* columns
  EXPECT_EQ(m.episodes[3].stats.at("observation.state").at("std").size(), 8u);
  EXPECT_EQ(m.episodes[3].stats.at("observation.state").at("count").at(0), 59.0);
}

// LeRobot 0.4's recorder writes the task strings as an unnamed pandas index
// (column "__index_level_0__"), not as a column named "task".
TEST(Metadata, TasksAsAnUnnamedPandasIndex) {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("ember_tasks_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::copy(kData + "/lerobot_v3_0", root, fs::copy_options::recursive);
  fs::copy_file(kData + "/parquet/tasks_lerobot_recorder.parquet", root / "meta" / "tasks.parquet",
                fs::copy_options::overwrite_existing);
  Metadata m = load_metadata(root.string());
  EXPECT_EQ(m.tasks, (std::vector<std::string>{"pick up the cube", "open the drawer"}));
  fs::remove_all(root);
}

TEST(Info, LenientFields) {
  DatasetInfo i = parse_info(R"({"codebase_version":"v2.0","fps":29.97,"data_path":"d/{episode_index}.parquet",
    "video_path":"v/{video_key}/{episode_index:06d}.mp4","unknown_key":{"x":1},
    "features":{"cam":{"dtype":"video","shape":[4,6,3],"names":["h","w","c"],"video_info":{"video.codec":"h264","video.fps":29.97}},
                "s":{"dtype":"float32","shape":[2],"names":{"motors":["a","b"]}},
                "t":{"dtype":"float32","shape":[1],"names":null}}})",
                             "info.json");
  EXPECT_DOUBLE_EQ(i.fps, 29.97);
  EXPECT_EQ(i.features.size(), 3u);
  EXPECT_EQ(i.features[0].video.codec, "h264");
  EXPECT_TRUE(i.features[1].names.is_object());
  EXPECT_EQ(i.version_major, 2);
}

TEST(Info, ErrorsNameTheField) {
  auto message = [](const std::string& body) {
    try {
      parse_info(body, "x/info.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("{").find("x/info.json: not valid JSON"), std::string::npos);
  EXPECT_NE(message(R"({"codebase_version":"v2.1","data_path":"a","features":{}})").find("'fps'"), std::string::npos);
  EXPECT_NE(message(R"({"codebase_version":"v2.1","fps":"30","data_path":"a","features":{}})").find("'fps' must be a number"),
            std::string::npos);
  EXPECT_NE(message(R"({"codebase_version":"v1.6","fps":30,"data_path":"a","features":{}})").find("not supported"),
            std::string::npos);
  EXPECT_NE(message(R"({"codebase_version":"v2.1","fps":30,"data_path":"a","features":{"c":{"dtype":"video"}}})")
                .find("'video_path'"),
            std::string::npos);
}

TEST(PathTemplate, PythonFormats) {
  TemplateArgs a;
  a.ints = {{"chunk_index", 3}, {"file_index", 12}};
  a.strings = {{"video_key", "observation.images.top"}};
  EXPECT_EQ(format_path("videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4", a, "t"),
            "videos/observation.images.top/chunk-003/file-012.mp4");
  EXPECT_EQ(format_path("{chunk_index}-{{literal}}", a, "t"), "3-{literal}");
  EXPECT_THROW(format_path("{nope:03d}", a, "t"), Error);
  EXPECT_THROW(format_path("{chunk_index:x}", a, "t"), Error);
  EXPECT_THROW(format_path("{chunk_index", a, "t"), Error);
  // issue 42: a width of 2^31 wrapped to a negative int, passed the check, and snprintf padded
  // 2 GB (data check took 102 s)
  for (const char* wide : {"{file_index:2147483648d}", "{file_index:02147483648d}", "{file_index:99999999999999999999d}", "{file_index:33d}"}) {
    auto t = std::chrono::steady_clock::now();
    EXPECT_THROW(format_path(wide, a, "t"), Error) << wide;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(), 1.0) << wide;
  }
}

TEST(Metadata, MissingDatasetIsNotFound) {
  try {
    load_metadata(kData + "/no_such_dataset");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find("no_such_dataset/meta/info.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace ember::data
