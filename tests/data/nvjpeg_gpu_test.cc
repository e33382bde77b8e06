// nvJPEG (io/nvjpeg.h) against libjpeg-turbo on the same bytes: 224x224 frames as `ember data
// pack` stores them, a batch of 32 of them, and the training shards read through the Dataset
// with nvJPEG. Two decoders (IDCT, chroma upsampling) agree closely, not exactly: the test bounds
// the mean and the largest difference. Labelled gpu; skips, saying why, where libnvjpeg or a CUDA
// device is missing.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/core/error.h"
#include "ember/data/dataset.h"
#include "ember/io/jpeg.h"
#include "ember/io/nvjpeg.h"
#include "shard_fixture.h"

namespace ember::io {
namespace {

#define OPEN_NVJPEG(nv)                                                   \
  std::string why;                                                        \
  auto nv = NvJpeg::open(&why);                                           \
  if (!nv) GTEST_SKIP() << "skipped: nvJPEG is not available (" << why << ")"; \
  std::printf("nvJPEG: %s backend, %s\n", nv->backend().c_str(), nv->library().c_str())

// a smooth colour field with the frame's stripes on top: camera-like regions and hard edges
Image frame(int64_t index, int size) {
  Image im = test::draw_stripes(index, size, size);
  for (int y = size / 2; y < size; ++y)
    for (int x = 0; x < size; ++x) {
      uint8_t* p = &im.rgb[(size_t(y) * size + x) * 3];
      p[0] = uint8_t(127 + 120 * std::sin(0.05 * x + 0.3 * index));
      p[1] = uint8_t(127 + 120 * std::cos(0.07 * y));
      p[2] = uint8_t(127 + 100 * std::sin(0.03 * (x + y) + 0.1 * index));
    }
  return im;
}

struct Diff {
  double mean = 0;
  int max = 0;
};
Diff compare(const Image& a, const Image& b) {
  EXPECT_EQ(a.width, b.width);
  EXPECT_EQ(a.height, b.height);
  EXPECT_EQ(a.rgb.size(), b.rgb.size());
  Diff d;
  for (size_t k = 0; k < std::min(a.rgb.size(), b.rgb.size()); ++k) {
    const int e = std::abs(int(a.rgb[k]) - int(b.rgb[k]));
    d.mean += e, d.max = std::max(d.max, e);
  }
  d.mean /= double(std::max<size_t>(1, a.rgb.size()));
  return d;
}

TEST(NvJpegGpu, BatchOf32MatchesLibjpegTurbo) {
  OPEN_NVJPEG(nv);
  for (int quality : {95, 75}) {
    std::vector<std::vector<uint8_t>> bytes;
    for (int i = 0; i < 32; ++i) bytes.push_back(encode_jpeg(frame(i * 97, 224), quality));
    std::vector<std::span<const uint8_t>> batch(bytes.begin(), bytes.end());
    std::vector<Image> got = nv->decode(batch, "batch");
    ASSERT_EQ(got.size(), 32u);
    Diff worst;
    double mean = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      Image want = decode_jpeg(bytes[i].data(), bytes[i].size(), "jpeg");
      Diff d = compare(got[i], want);
      mean += d.mean / double(got.size());
      worst.mean = std::max(worst.mean, d.mean), worst.max = std::max(worst.max, d.max);
      EXPECT_EQ(test::stripe_index(got[i].rgb.data(), got[i].width, got[i].height), int64_t(i) * 97) << i;
    }
    std::printf("quality %d: nvJPEG against libjpeg-turbo: mean abs diff %.3f levels (worst image %.3f), max %d\n", quality, mean,
                worst.mean, worst.max);
    EXPECT_LT(worst.mean, 1.5) << "quality " << quality;
    EXPECT_LE(worst.max, 40) << "quality " << quality;
  }
  // batches of other sizes reuse the decoder (re-initialised per size)
  std::vector<uint8_t> one = encode_jpeg(frame(5, 64), 90);
  std::vector<Image> got = nv->decode({std::span<const uint8_t>(one)}, "one");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_LT(compare(got[0], decode_jpeg(one.data(), one.size(), "jpeg")).mean, 1.5);
}

TEST(NvJpegGpu, DamagedBytesAreNamed) {
  OPEN_NVJPEG(nv);
  std::vector<uint8_t> bytes = encode_jpeg(frame(3, 224), 95);
  std::vector<uint8_t> header_only(bytes.begin(), bytes.begin() + 4);
  std::string msg = test::error_of([&] { nv->decode({std::span<const uint8_t>(header_only)}, "cell 7"); });
  EXPECT_NE(msg.find("cell 7"), std::string::npos) << msg;
  // the decoder still works afterwards
  EXPECT_EQ(nv->decode({std::span<const uint8_t>(bytes)}, "after").size(), 1u);
}

// The training shards read with nvJPEG give the same samples as with libjpeg-turbo.
TEST(NvJpegGpu, ShardsReadThroughTheDatasetMatch) {
  OPEN_NVJPEG(nv);
  test::TempDir dir;
  test::write_stripes_dataset(dir.path() + "/src", {12, 9});
  data::pack_shards(dir.path() + "/src", dir.path() + "/shards", test::pack_options(64));
  data::DatasetOptions gpu = test::shard_reading({{"observation.images.top", {0.0, 0.1}}});
  gpu.nvjpeg = nv.get();
  data::Dataset a(dir.path() + "/shards", gpu), b(dir.path() + "/shards", test::shard_reading({{"observation.images.top", {0.0, 0.1}}}));
  for (int64_t i = 0; i < a.size(); ++i) {
    data::Item x = a.get(i), y = b.get(i);
    for (const char* key : {"observation.images.top", "observation.images.wrist"}) {
      ASSERT_EQ(x.images.at(key).size(), y.images.at(key).size()) << key;
      for (size_t k = 0; k < x.images.at(key).size(); ++k) EXPECT_LT(compare(x.images.at(key)[k], y.images.at(key)[k]).mean, 1.5) << i;
    }
    EXPECT_EQ(test::stripe_index(x.images.at("observation.images.wrist").front()), i);
  }
}

}  // namespace
}  // namespace ember::io
