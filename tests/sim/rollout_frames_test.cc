// Rollout video frames: scaled up by whole pixels under a band that labels both cameras.
#include "ember/eval/rollout_frames.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "ember/io/png.h"

namespace ember::eval {
namespace {

TEST(RolloutFrames, ScaledUpUnderABandLabellingBothCameras) {
  const int n = 64;
  std::vector<uint8_t> frame(size_t(n) * 2 * n * 3);
  for (size_t i = 0; i < frame.size(); ++i) frame[i] = uint8_t((i * 7) % 200);  // no pixel as bright as the labels
  const FrameSize size = presented_size(n);
  EXPECT_EQ(size.width, 2 * n * 4);  // 4x: at least 256 rows of picture
  EXPECT_EQ(size.width % 2, 0);
  EXPECT_EQ(size.height % 2, 0);
  const int band = size.height - n * 4;
  ASSERT_GT(band, 0);
  auto out = present_frame(frame, n);
  ASSERT_EQ(out.size(), size_t(size.width) * size.height * 3);
  // the picture: each source pixel as a 4x4 block
  for (int y : {0, 17, 63})
    for (int x : {0, 70, 127})
      for (int c = 0; c < 3; ++c)
        EXPECT_EQ(out[(size_t(band + 4 * y + 3) * size.width + 4 * x + 1) * 3 + c], frame[(size_t(y) * 2 * n + x) * 3 + c]);
  // the band: label pixels over each camera's half, none elsewhere in the picture's colours
  auto bright_in = [&](int x0, int x1) {
    int count = 0;
    for (int y = 0; y < band; ++y)
      for (int x = x0; x < x1; ++x) count += out[(size_t(y) * size.width + x) * 3] == 235;
    return count;
  };
  EXPECT_GT(bright_in(0, size.width / 2), 100);           // "agentview"
  EXPECT_GT(bright_in(size.width / 2, size.width), 50);   // "wrist"
  if (const char* dump = std::getenv("EMBER_DUMP_FRAME")) {  // to look at it
    io::Image im;
    im.width = size.width, im.height = size.height, im.rgb = out;
    auto png = io::encode_png(im);
    std::ofstream(dump, std::ios::binary).write(reinterpret_cast<const char*>(png.data()), std::streamsize(png.size()));
  }
}

}  // namespace
}  // namespace ember::eval
