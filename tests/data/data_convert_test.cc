// convert_v21_to_v30: the fixture lerobot_v2_1 (and an ember-written v2.1 dataset with image
// cameras) converted to v3.0 reads back through Dataset with every item's values identical to
// the source's and every camera frame showing its own index; the result passes check_dataset;
// an existing destination and a broken source are refused, leaving nothing behind.
//
// Built without FFmpeg, the video parts are skipped (saying so); the tabular checks run on a
// dataset without video cameras.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "stripes.h"
#include "ember/core/error.h"
#include "ember/data/check.h"
#include "ember/data/convert.h"
#include "ember/data/dataset.h"
#include "ember/data/dataset_writer.h"
#include "ember/io/parquet/reader.h"
#include "ember/io/video/video_decoder.h"

namespace ember::data {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::feature;
const std::string kFixture = std::string(EMBER_TEST_DATA) + "/lerobot_v2_1";


using test::stripe_index;

DatasetOptions tabular() {
  DatasetOptions o;
  o.decode_images = false;
  return o;
}

// Every item of dst has the same tabular values, task and indices as src's.
void expect_same_items(const std::string& src, const std::string& dst, const DatasetOptions& o) {
  Dataset a(src, o), b(dst, o);
  ASSERT_EQ(a.size(), b.size());
  for (int64_t i = 0; i < a.size(); ++i) {
    Item x = a.get(i), y = b.get(i);
    ASSERT_EQ(x.index, y.index);
    EXPECT_EQ(x.episode_index, y.episode_index) << i;
    EXPECT_EQ(x.frame_index, y.frame_index) << i;
    EXPECT_EQ(x.timestamp, y.timestamp) << i;
    EXPECT_EQ(x.task, y.task) << i;
    ASSERT_EQ(x.values.size(), y.values.size()) << i;
    for (const auto& [key, v] : x.values) {
      ASSERT_TRUE(y.values.count(key)) << key;
      EXPECT_EQ(v.dtype, y.values.at(key).dtype) << key;
      EXPECT_EQ(v.shape, y.values.at(key).shape) << key;
      EXPECT_EQ(v.data, y.values.at(key).data) << key << " item " << i;
    }
    for (const auto& [key, ims] : x.images) {
      ASSERT_EQ(ims.size(), y.images.at(key).size());
      for (size_t k = 0; k < ims.size(); ++k) EXPECT_EQ(ims[k].rgb, y.images.at(key)[k].rgb) << key << " item " << i;
    }
  }
}

void expect_clean(const std::string& root) {
  CheckReport r = check_dataset(root);
  for (const Problem& p : r.problems) ADD_FAILURE() << p.file << ": " << p.message;
}

TEST(ConvertV21ToV30, FixtureReadsBackIdentically) {
  if (!io::video_support_available()) GTEST_SKIP() << "built without FFmpeg: the fixture's videos cannot be joined";
  TempDir dir;
  const std::string dst = dir.path() + "/v30";
  std::vector<std::string> stages;
  int64_t last = 0, total = 0;
  ConvertOptions o;
  o.progress = [&](const std::string& stage, int64_t done, int64_t all) {
    if (stages.empty() || stages.back() != stage) stages.push_back(stage);
    EXPECT_EQ(done, last + 1);
    last = done, total = all;
  };
  ConvertReport rep = convert_v21_to_v30(kFixture, dst, o);
  EXPECT_EQ(rep.episodes, 3);
  EXPECT_EQ(rep.frames, 135);
  EXPECT_EQ(rep.data_files, 1);
  EXPECT_EQ(rep.video_files, 2);
  EXPECT_EQ(last, total);
  EXPECT_EQ(stages, (std::vector<std::string>{"data", "videos/observation.images.top", "videos/observation.images.wrist",
                                              "metadata"}));
  expect_same_items(kFixture, dst, tabular());

  // every camera frame right at LeRobot's tolerance, 1e-4 s
  Dataset ds(dst);
  for (int64_t i = 0; i < ds.size(); ++i) {
    Item it = ds.get(i);
    for (const char* cam : {"observation.images.top", "observation.images.wrist"})
      EXPECT_EQ(stripe_index(it.images.at(cam).at(0)), i) << cam << " item " << i;
  }
  expect_clean(dst);

  // the v3.0 layout and info.json
  const Metadata& m = ds.meta();
  EXPECT_EQ(m.info.codebase_version, "v3.0");
  EXPECT_EQ(io::parquet::FileReader::open(dst + "/data/chunk-000/file-000.parquet")->num_row_groups(), 3);
  double start = 0;
  for (const Episode& e : m.episodes) {
    const VideoSpan& v = e.videos.at("observation.images.wrist");
    EXPECT_NEAR(v.from_timestamp, start, 1e-9);
    EXPECT_NEAR(v.to_timestamp - v.from_timestamp, e.length / 30.0, 1e-9);
    start = v.to_timestamp;
  }
  std::ifstream in(dst + "/meta/info.json");
  nlohmann::json info = nlohmann::json::parse(in);
  EXPECT_FALSE(info.contains("total_chunks"));
  EXPECT_FALSE(info.contains("total_videos"));
  EXPECT_EQ(info["data_files_size_in_mb"], 100);
  EXPECT_EQ(info["video_files_size_in_mb"], 200);
  EXPECT_EQ(info["video_path"], "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4");
  EXPECT_EQ(info["features"]["observation.state"]["fps"], 30);
  EXPECT_FALSE(info["features"]["observation.images.top"].contains("fps"));
  EXPECT_EQ(info["features"]["observation.images.top"]["info"]["video.codec"], "av1");  // joined, not re-encoded
  EXPECT_EQ(info["features"]["observation.images.wrist"]["info"]["video.codec"], "h264");
  EXPECT_EQ(m.stats.size(), load_metadata(kFixture).stats.size());
  EXPECT_FALSE(m.stats.empty());
}

TEST(ConvertV21ToV30, SmallFileLimitsRollDataAndVideos) {
  if (!io::video_support_available()) GTEST_SKIP() << "built without FFmpeg: the fixture's videos cannot be joined";
  TempDir dir;
  const std::string dst = dir.path() + "/v30";
  ConvertOptions o;
  o.data_file_size_mb = 1e-6;
  o.video_file_size_mb = 1e-6;
  o.chunks_size = 2;
  ConvertReport rep = convert_v21_to_v30(kFixture, dst, o);
  EXPECT_EQ(rep.data_files, 3);
  EXPECT_EQ(rep.video_files, 6);
  Metadata m = load_metadata(dst);
  std::vector<std::pair<int64_t, int64_t>> data, video;
  for (const Episode& e : m.episodes) {
    data.emplace_back(e.data_chunk, e.data_file);
    video.emplace_back(e.videos.at("observation.images.top").chunk, e.videos.at("observation.images.top").file);
  }
  const std::vector<std::pair<int64_t, int64_t>> want = {{0, 0}, {0, 1}, {1, 0}};
  EXPECT_EQ(data, want);
  EXPECT_EQ(video, want);
  expect_same_items(kFixture, dst, tabular());
  expect_clean(dst);
}

// An ember-written v2.1 dataset with an image camera: tabular values and images identical.
TEST(ConvertV21ToV30, ImageCamerasAndTablesWithoutVideo) {
  TempDir dir;
  const std::string src = dir.path() + "/v21", dst = dir.path() + "/v30";
  std::vector<Feature> features(2);
  features[0].key = "observation.state", features[0].dtype = "float32", features[0].shape = {4};
  features[1].key = "observation.images.cam", features[1].dtype = "image", features[1].shape = {12, 16, 3};
  WriterOptions wo;
  wo.version = DatasetVersion::kV2_1;
  DatasetWriter w = DatasetWriter::create(src, 15, features, "arm", wo);
  for (int e = 0; e < 4; ++e) {
    for (int k = 0; k < 5 + 3 * e; ++k) {
      Frame f;
      f.values["observation.state"] = {std::sin(k + e), 0.25 * k, -1.0 * e, 1e-3 * k * e};
      io::Image im;
      im.height = 12, im.width = 16;
      for (int p = 0; p < 12 * 16 * 3; ++p) im.rgb.push_back(uint8_t(p * 7 + k * 13 + e));
      f.images["observation.images.cam"] = im;
      w.add_frame(f);
    }
    w.save_episode(e % 2 ? "odd" : "even");
  }
  w.finalize();
  ConvertOptions o;
  o.data_file_size_mb = 0.003;  // a few KB: the episodes spread over files
  ConvertReport rep = convert_v21_to_v30(src, dst, o);
  EXPECT_GE(rep.data_files, 2);
  EXPECT_EQ(rep.video_files, 0);
  DatasetOptions with_images;
  expect_same_items(src, dst, with_images);
  expect_clean(dst);
  Metadata m = load_metadata(dst);
  EXPECT_EQ(m.tasks, (std::vector<std::string>{"even", "odd"}));
  EXPECT_TRUE(m.info.video_path.empty());
}

TEST(ConvertV21ToV30, RefusesAnExistingDestination) {
  TempDir dir;
  const std::string dst = dir.path() + "/v30";
  fs::create_directories(dst);
  try {
    convert_v21_to_v30(kFixture, dst);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("already exists"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_empty(dst));
}

// A copy of the fixture without one file: the error names it and nothing is left behind.
void expect_broken_source_fails(const std::string& missing) {
  TempDir dir;
  const std::string src = dir.path() + "/v21", dst = dir.path() + "/v30";
  fs::copy(kFixture, src, fs::copy_options::recursive);
  fs::remove(src + "/" + missing);
  try {
    convert_v21_to_v30(src, dst);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound) << e.what();
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dst));
  for (const auto& f : fs::directory_iterator(dir.path())) EXPECT_EQ(f.path().filename(), "v21");
}

TEST(ConvertV21ToV30, MissingVideoFailsNamingIt) {
  if (!io::video_support_available()) GTEST_SKIP() << "built without FFmpeg: conversion stops at the video cameras";
  expect_broken_source_fails("videos/chunk-000/observation.images.wrist/episode_000001.mp4");
}

TEST(ConvertV21ToV30, MissingDataFileFailsNamingIt) {  // checked before anything else, FFmpeg or not
  expect_broken_source_fails("data/chunk-000/episode_000002.parquet");
}

TEST(ConvertV21ToV30, RefusesAV30Source) {
  TempDir dir;
  try {
    convert_v21_to_v30(std::string(EMBER_TEST_DATA) + "/lerobot_v3_0", dir.path() + "/out");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("v2.1"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

}  // namespace
}  // namespace ember::data
