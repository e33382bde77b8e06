// Bad metadata never crashes or hangs ember: each case is one error naming the file and field
// (issue 26). The inputs are made here, from copies of the fixture datasets.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/data/metadata.h"
#include "ember/io/json.h"
#include "test_util.h"

namespace ember::data {
namespace {

namespace fs = std::filesystem;
const std::string kData = EMBER_TEST_DATA;

// A copy of a fixture dataset in a scratch directory.
struct DatasetCopy {
  test::TempDir dir{"ember_bad_input"};
  std::string root;
  explicit DatasetCopy(const std::string& fixture) : root(dir.path() + "/ds") {
    fs::copy(kData + "/" + fixture, root, fs::copy_options::recursive);
  }
  std::string path(const std::string& rel) const { return root + "/" + rel; }
  void write(const std::string& rel, const std::string& text) const {
    fs::remove(path(rel));
    std::ofstream(path(rel), std::ios::binary) << text;
  }
};

// The message of the Error that f throws (fails the test when it throws none).
using test::error_of;

std::string nested(int levels) { return std::string(size_t(levels), '[') + std::string(size_t(levels), ']'); }

TEST(BadInputJson, DepthIsBoundedBeforeParsing) {
  std::string msg = error_of([] { io::parse_json(nested(100000), "x.json"); });
  EXPECT_NE(msg.find("x.json: JSON nested deeper than 512 levels"), std::string::npos) << msg;
  EXPECT_NO_THROW(io::parse_json(nested(io::kMaxJsonDepth), "x.json"));
  // brackets inside strings, escaped quotes included, do not nest
  EXPECT_NO_THROW(io::parse_json("{\"a\": \"" + nested(5000) + "\\\"" + nested(5000) + "\"}", "x.json"));
}

TEST(BadInputJson, MalformedTextNamesTheFile) {
  std::string msg = error_of([] { io::parse_json("{\"a\": [1, 2", "meta/stats.json"); });
  EXPECT_EQ(msg.rfind("meta/stats.json: not valid JSON", 0), 0u) << msg;
}

TEST(BadInputJson, DeeplyNestedInfoJsonIsRefused) {
  DatasetCopy ds("lerobot_v3_0");
  ds.write("meta/info.json", "{\"codebase_version\": \"v3.0\", \"x\": " + nested(50000) + "}");
  std::string msg = error_of([&] { load_metadata(ds.root); });
  EXPECT_NE(msg.find("meta/info.json: JSON nested deeper"), std::string::npos) << msg;
}

TEST(BadInputJson, DeeplyNestedStatsJsonIsRefused) {
  DatasetCopy ds("lerobot_v3_0");
  ds.write("meta/stats.json", "{\"action\": {\"mean\": " + nested(50000) + "}}");
  std::string msg = error_of([&] { load_metadata(ds.root); });
  EXPECT_NE(msg.find("meta/stats.json: JSON nested deeper"), std::string::npos) << msg;
}

TEST(BadInputJson, DeeplyNestedEpisodesStatsLineIsRefused) {
  DatasetCopy ds("lerobot_v2_1");
  ds.write("meta/episodes_stats.jsonl", "{\"episode_index\": 0, \"stats\": {\"action\": {\"mean\": " + nested(50000) + "}}}\n");
  std::string msg = error_of([&] { load_metadata(ds.root); });
  EXPECT_NE(msg.find("meta/episodes_stats.jsonl: line 1: JSON nested deeper"), std::string::npos) << msg;
}

TEST(BadInputFiles, FifoInfoJsonIsRefusedWithoutWaiting) {
  DatasetCopy ds("lerobot_v3_0");
  fs::remove(ds.path("meta/info.json"));
  ASSERT_EQ(::mkfifo(ds.path("meta/info.json").c_str(), 0644), 0);
  std::string msg = error_of([&] { load_metadata(ds.root); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("meta/info.json: is a FIFO (named pipe), expected a regular file"), std::string::npos) << msg;
}

TEST(BadInputFiles, FifoJsonLinesFileIsRefusedWithoutWaiting) {
  DatasetCopy ds("lerobot_v2_1");
  fs::remove(ds.path("meta/tasks.jsonl"));
  ASSERT_EQ(::mkfifo(ds.path("meta/tasks.jsonl").c_str(), 0644), 0);
  std::string msg = error_of([&] { load_metadata(ds.root); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("meta/tasks.jsonl: is a FIFO"), std::string::npos) << msg;
}

TEST(BadInputFiles, DirectoryAndDeviceAreRefused) {
  EXPECT_NE(error_of([] { open_file("/tmp"); }, ErrorKind::kInvalidArgument).find("/tmp: is a directory"), std::string::npos);
  EXPECT_NE(error_of([] { read_file("/dev/zero"); }, ErrorKind::kInvalidArgument).find("/dev/zero: is a character device"),
            std::string::npos);
}

TEST(BadInputStats, StatisticsOfDifferentSizesNameTheStatsFile) {
  DatasetCopy ds("lerobot_v3_0");
  ds.write("meta/stats.json", "{\"action\": {\"mean\": [0, 0], \"std\": [1, 1, 1, 1, 1, 1, 1]}}");
  std::string msg = error_of([&] { load_metadata(ds.root); });
  EXPECT_EQ(msg, ds.path("meta/stats.json") + ": field 'action': statistic 'mean' has 2 values, 'std' has 7");
}

TEST(BadInputStats, StatisticsOfAnotherShapeThanInfoJsonNameTheStatsFile) {
  DatasetCopy ds("lerobot_v3_0");
  ds.write("meta/stats.json", "{\"action\": {\"mean\": [0, 0], \"std\": [1, 1]}}");
  std::string msg = error_of([&] { load_metadata(ds.root); });
  EXPECT_EQ(msg, ds.path("meta/stats.json") + ": field 'action.mean' has 2 values, info.json's shape of 'action' has 7");
}

TEST(BadInputStats, EpisodeStatisticsOfDifferentSizesNameTheLine) {
  DatasetCopy ds("lerobot_v2_1");
  ds.write("meta/episodes_stats.jsonl",
           "{\"episode_index\": 0, \"stats\": {\"action\": {\"min\": [0], \"max\": [1, 2]}}}\n");
  std::string msg = error_of([&] { load_metadata(ds.root); });
  EXPECT_EQ(msg, ds.path("meta/episodes_stats.jsonl") + ": line 1: field 'stats.action': statistic 'min' has 1 values, 'max' has 2");
}

}  // namespace
}  // namespace ember::data
