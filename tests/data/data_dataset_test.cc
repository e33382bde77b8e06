// Frame access on the v2.1 and v3.0 fixtures: every item is its own frame, and
// delta_timestamps clamp to the episode and mask the padding as LeRobot does.
#include <gtest/gtest.h>

#include "stripes.h"
#include "ember/core/error.h"
#include "ember/data/dataset.h"
#include "ember/io/resize.h"
#include "ember/io/video/video_decoder.h"

namespace ember::data {
namespace {

const std::string kData = EMBER_TEST_DATA;

// The fixtures' cameras are videos: without FFmpeg the tabular tests run with cameras off.
DatasetOptions tabular_options() {
  DatasetOptions o;
  o.decode_images = io::video_support_available();
  return o;
}

class DatasetTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DatasetTest, EveryItemIsItsOwnFrame) {
  Dataset ds(kData + "/" + GetParam(), tabular_options());
  ASSERT_GT(ds.size(), 0);
  for (int64_t i = ds.size() - 1; i >= 0; --i) {  // backwards: exercises the episode cache
    Item it = ds.get(i);
    ASSERT_EQ(it.values.at("index").data.at(0), double(i));
    const Episode& ep = ds.meta().episode_of(i);
    EXPECT_EQ(it.episode_index, ep.index);
    EXPECT_EQ(it.values.at("episode_index").data.at(0), double(ep.index));
    EXPECT_EQ(it.values.at("frame_index").data.at(0), double(i - ep.from_index));
    EXPECT_NEAR(it.timestamp, double(i - ep.from_index) / 30.0, 1e-6);
    EXPECT_EQ(it.values.at("observation.state").shape, (std::vector<int64_t>{8}));
    EXPECT_EQ(it.values.at("action").data.size(), 7u);
    ASSERT_FALSE(it.task.empty());
    EXPECT_EQ(it.task, ep.tasks.at(0));
  }
  EXPECT_THROW(ds.get(ds.size()), Error);
  EXPECT_THROW(ds.get(-1), Error);
}

TEST_P(DatasetTest, DeltaTimestampsClampAndPad) {
  DatasetOptions o = tabular_options();
  o.delta_timestamps["action"] = {-2 / 30.0, 0.0, 1 / 30.0, 2 / 30.0};
  o.delta_timestamps["index"] = {-2 / 30.0, 0.0, 1 / 30.0, 2 / 30.0};
  Dataset ds(kData + "/" + GetParam(), o);
  const Episode& ep = ds.meta().episodes.at(1);
  // first frame of episode 1: two steps back are padded copies of the first frame
  Item first = ds.get(ep.from_index);
  EXPECT_EQ(first.is_pad.at("action"), (std::vector<uint8_t>{1, 0, 0, 0}));
  EXPECT_EQ(first.values.at("action").shape, (std::vector<int64_t>{4, 7}));
  std::vector<double> idx = first.values.at("index").data;
  EXPECT_EQ(idx, (std::vector<double>{double(ep.from_index), double(ep.from_index), double(ep.from_index + 1),
                                      double(ep.from_index + 2)}));
  // last frame: future steps clamp to the last frame and are padded
  Item last = ds.get(ep.to_index - 1);
  EXPECT_EQ(last.is_pad.at("index"), (std::vector<uint8_t>{0, 0, 1, 1}));
  EXPECT_EQ(last.values.at("index").data.back(), double(ep.to_index - 1));
}

using test::stripe_index;

TEST_P(DatasetTest, EveryCameraFrameShowsItsOwnIndex) {
  if (!io::video_support_available()) {
    std::printf("built without FFmpeg: checking the error instead of the frames\n");
    EXPECT_THROW(Dataset(kData + "/" + GetParam()), Error);
    return;
  }
  Dataset ds(kData + "/" + GetParam());  // LeRobot's default tolerance, 1e-4 s
  for (int64_t i = 0; i < ds.size(); ++i) {
    Item it = ds.get(i);
    for (const char* cam : {"observation.images.top", "observation.images.wrist"}) {
      ASSERT_EQ(it.images.at(cam).size(), 1u);
      const io::Image& im = it.images.at(cam)[0];
      ASSERT_EQ(im.width, 96);
      ASSERT_EQ(im.height, 64);
      ASSERT_EQ(stripe_index(im), i) << cam << " item " << i;
    }
  }
}

TEST_P(DatasetTest, CameraDeltasClampAtEpisodeEdges) {
  if (!io::video_support_available()) GTEST_SKIP() << "built without FFmpeg";
  DatasetOptions o;
  o.delta_timestamps["observation.images.top"] = {-1 / 30.0, 0.0, 1 / 30.0};
  Dataset ds(kData + "/" + GetParam(), o);
  const Episode& ep = ds.meta().episodes.at(1);
  Item first = ds.get(ep.from_index);
  const auto& im = first.images.at("observation.images.top");
  ASSERT_EQ(im.size(), 3u);
  EXPECT_EQ(stripe_index(im[0]), ep.from_index);  // clamped to the episode's first frame
  EXPECT_EQ(stripe_index(im[1]), ep.from_index);
  EXPECT_EQ(stripe_index(im[2]), ep.from_index + 1);
  EXPECT_EQ(first.is_pad.at("observation.images.top"), (std::vector<uint8_t>{1, 0, 0}));
}

TEST_P(DatasetTest, VideoFramesResize) {
  if (!io::video_support_available()) GTEST_SKIP() << "built without FFmpeg";
  DatasetOptions o;
  o.image_width = 192;
  o.image_height = 128;
  Dataset ds(kData + "/" + GetParam(), o);
  Item it = ds.get(7);
  const io::Image& im = it.images.at("observation.images.top").at(0);
  EXPECT_EQ(im.width, 192);
  EXPECT_EQ(im.height, 128);
  EXPECT_EQ(stripe_index(im), 7);
  // decoded as stored, then resized as the processor resizes every other frame (io/resize.h)
  Dataset stored(kData + "/" + GetParam(), DatasetOptions{});
  Item whole = stored.get(7);
  const io::Image& full = whole.images.at("observation.images.top").at(0);
  ASSERT_NE(full.width, 192);
  EXPECT_EQ(im.rgb, io::resize_bilinear(full, 192, 128).rgb);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, DatasetTest, ::testing::Values("lerobot_v2_1", "lerobot_v3_0"));

TEST(Dataset, DeltaOffsetsMustBeMultiplesOfTheFramePeriod) {
  DatasetOptions o = tabular_options();
  o.delta_timestamps["action"] = {0.0, 0.01};
  EXPECT_THROW(Dataset(kData + "/lerobot_v3_0", o), Error);
  DatasetOptions bad_key = tabular_options();
  bad_key.delta_timestamps["nope"] = {0.0};
  EXPECT_THROW(Dataset(kData + "/lerobot_v3_0", bad_key), Error);
}

}  // namespace
}  // namespace ember::data
