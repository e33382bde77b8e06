// --dataset.jpeg_decoder: choosing between libjpeg-turbo and nvJPEG (io/nvjpeg.h), on any
// machine: the measured default, the flag's values and errors, and nvJPEG refusing to open,
// with its reason, where its library or a CUDA device is missing (nvjpeg_gpu_test checks the
// pixels where both are present).
#include <gtest/gtest.h>

#include <cstdlib>

#include "ember/core/error.h"
#include "ember/io/nvjpeg.h"
#include "test_util.h"

namespace ember::io {
namespace {

TEST(JpegDecoder, DefaultIsTheMeasuredOne) {
  // bench/results/shards_h200_2026-12-01b.md: libjpeg-turbo on the loader's threads beat nvJPEG
  EXPECT_STREQ(kDefaultJpegDecoder, "cpu");
  EXPECT_EQ(choose_jpeg_decoder(kDefaultJpegDecoder, false, "no GPU"), JpegDecoder::kCpu);
}

TEST(JpegDecoder, FlagValuesAndErrors) {
  EXPECT_EQ(choose_jpeg_decoder("cpu", true, ""), JpegDecoder::kCpu);
  EXPECT_EQ(choose_jpeg_decoder("nvjpeg", true, ""), JpegDecoder::kNvjpeg);
  std::string msg = test::error_of([] { choose_jpeg_decoder("nvjpeg", false, "no CUDA device"); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("--dataset.jpeg_decoder=nvjpeg"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no CUDA device"), std::string::npos) << msg;
  msg = test::error_of([] { choose_jpeg_decoder("gpu", true, ""); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("--dataset.jpeg_decoder=gpu"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cpu or nvjpeg"), std::string::npos) << msg;
}

TEST(JpegDecoder, NvJpegSaysWhyItDoesNotOpen) {
  const char* old = std::getenv("EMBER_NVJPEG");
  const std::string saved = old ? old : "";
  ::setenv("EMBER_NVJPEG", "/nonexistent/libnvjpeg.so.13", 1);
  std::string why;
  auto nv = NvJpeg::open(&why);
  old ? ::setenv("EMBER_NVJPEG", saved.c_str(), 1) : ::unsetenv("EMBER_NVJPEG");
  EXPECT_EQ(nv, nullptr);
  EXPECT_NE(why.find("libnvjpeg not found"), std::string::npos) << why;
  EXPECT_NE(why.find("/nonexistent/libnvjpeg.so.13"), std::string::npos) << why;
  // on this machine as it is: open, or a reason (no library, no device), never a crash
  why.clear();
  nv = NvJpeg::open(&why);
  if (nv) std::printf("nvJPEG opened here: %s backend, %s\n", nv->backend().c_str(), nv->library().c_str());
  else std::printf("nvJPEG not available here: %s\n", why.c_str());
  EXPECT_TRUE(nv != nullptr || !why.empty());
}

}  // namespace
}  // namespace ember::io
