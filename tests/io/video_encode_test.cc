// Video encoding and joining. Synthetic frames show their frame number as 12 vertical stripes
// in the top half of the picture (white = 1, most significant bit at the left), like the
// LeRobot fixtures, so a video that holds or returns the wrong frame shows the wrong number
// whatever the codec's loss. Encoded files are decoded back with VideoDecoder at LeRobot's
// tolerance (1e-4 s).
//
// Built without FFmpeg, every test checks the "built without video support" error instead.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "stripes.h"
#include "ember/core/error.h"
#include "ember/io/video/remux.h"
#include "ember/io/video/video_decoder.h"
#include "ember/io/video/video_encoder.h"

namespace ember::io {
namespace {

namespace fs = std::filesystem;

const std::string kData = EMBER_TEST_DATA;
constexpr double kTolerance = 1e-4;  // LeRobot's tolerance_s
const char* const kCodecs[] = {"libsvtav1", "libx264"};

// Frame `index` of a synthetic video, [h, w, 3]: the index as 12 stripes (bits 11..0) in the
// top half, a pattern that moves with the index below, so that the encoder has texture and
// motion to code.
std::vector<uint8_t> make_frame(int index, int w, int h) {
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &rgb[(static_cast<size_t>(y) * w + x) * 3];
      if (y < h / 2) {
        int bit = 11 - x * 12 / w;
        uint8_t v = (index >> bit) & 1 ? 255 : 0;
        p[0] = p[1] = p[2] = v;
      } else {
        p[0] = static_cast<uint8_t>(x * 2 + index * 3);
        p[1] = static_cast<uint8_t>(y * 3 + index);
        p[2] = static_cast<uint8_t>(128 + 100 * std::sin((x + y + 2 * index) * 0.1));
      }
    }
  }
  return rgb;
}

// Same, with sensor-like noise (+-8) over the whole picture: harder to code, closer to camera
// frames for measuring speed.
std::vector<uint8_t> make_noisy_frame(int index, int w, int h) {
  std::vector<uint8_t> rgb = make_frame(index, w, h);
  uint32_t state = 0x9e3779b9u * static_cast<uint32_t>(index + 1);
  for (uint8_t& v : rgb) {
    state = state * 1664525u + 1013904223u;
    int noisy = v + static_cast<int>(state >> 28) - 8;
    v = static_cast<uint8_t>(std::clamp(noisy, 0, 255));
  }
  return rgb;
}

using test::stripe_index;

double mean_abs_error(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += std::abs(int(a[i]) - int(b[i]));
  return sum / static_cast<double>(a.size());
}

template <typename F>
ErrorKind error_kind_of(F&& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message != nullptr) *message = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "no ember::Error thrown";
  return ErrorKind::kInternal;
}

EncoderOptions options_for(const std::string& codec, int w = 96, int h = 64) {
  EncoderOptions o;
  o.codec = codec;
  o.fallback_codec = "";  // a test of one codec must not quietly test another
  o.width = w;
  o.height = h;
  return o;
}

// A fresh directory per test, removed afterwards.
class VideoEncodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("ember_video_encode_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  // Encodes frames first..first+n-1 of the synthetic video at size w x h.
  std::string encode(const std::string& name, const EncoderOptions& o, int first, int n) {
    std::string path = file(name);
    VideoEncoder enc(path, o);
    for (int i = first; i < first + n; ++i) enc.add_frame(make_frame(i, o.width, o.height));
    enc.finish();
    return path;
  }

  bool skip_without_encoder(const std::string& codec) {
    try {
      VideoEncoder probe(file("probe.mp4"), options_for(codec));
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kUnsupported) return true;
      throw;
    }
    return false;
  }

  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename());
    return names;
  }

  fs::path dir_;
};

// Built without FFmpeg: encoding and joining must say why, naming the file; then the test ends.
#define CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO()                                                \
  do {                                                                                            \
    if (!video_support_available()) {                                                             \
      std::string path = file("out.mp4"), message;                                                \
      EXPECT_EQ(error_kind_of([&] { VideoEncoder e(path, options_for("libsvtav1")); }, &message), \
                ErrorKind::kUnsupported);                                                         \
      EXPECT_EQ(message, path +                                                                   \
                             ": ember was built without video support (FFmpeg not found at "      \
                             "build time)");                                                      \
      EXPECT_EQ(error_kind_of([&] { concat_videos({path}, path); }), ErrorKind::kUnsupported);    \
      EXPECT_FALSE(fs::exists(path));                                                             \
      return;                                                                                     \
    }                                                                                             \
  } while (0)

#define SKIP_WITHOUT_ENCODER(codec) \
  if (skip_without_encoder(codec)) GTEST_SKIP() << "no " << (codec) << " encoder in this FFmpeg"

// --- encoding ------------------------------------------------------------------------------

TEST_F(VideoEncodeTest, EveryFrameDecodesBackAtKOverFps) {
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO();
  for (const char* codec : kCodecs) {
    SCOPED_TRACE(codec);
    SKIP_WITHOUT_ENCODER(codec);
    constexpr int kFrames = 45;
    std::string path = encode(std::string(codec) + ".mp4", options_for(codec), 0, kFrames);

    VideoInfo info = probe_video(path);
    EXPECT_EQ(info.codec, codec == std::string("libsvtav1") ? "av1" : "h264");
    EXPECT_EQ(info.pix_fmt, "yuv420p");
    EXPECT_EQ(info.width, 96);
    EXPECT_EQ(info.height, 64);
    EXPECT_DOUBLE_EQ(info.fps, 30);
    EXPECT_EQ(info.num_frames, kFrames);
    EXPECT_NEAR(info.duration, kFrames / 30.0, 1e-9);
    VideoDecoder d(path);
    std::vector<double> ts = d.frame_timestamps();
    ASSERT_EQ(ts.size(), size_t{kFrames});
    for (int k = 0; k < kFrames; ++k) EXPECT_NEAR(ts[k], k / 30.0, 1e-9) << k;

    double worst_mae = 0;
    for (int k = 0; k < kFrames; ++k) {
      Frame f = d.decode_at(k / 30.0, kTolerance);
      ASSERT_EQ(stripe_index(f), k) << "frame " << k;
      worst_mae = std::max(worst_mae, mean_abs_error(f.rgb, make_frame(k, 96, 64)));
    }
    std::printf("%s 96x64 crf 30: worst mean abs error %.2f / 255\n", codec, worst_mae);
    EXPECT_LT(worst_mae, 12.0);
  }
}

TEST_F(VideoEncodeTest, KeyFrameEveryTwoFramesSoRandomAccessDecodesAtMostTwo) {
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO();
  for (const char* codec : kCodecs) {
    SCOPED_TRACE(codec);
    SKIP_WITHOUT_ENCODER(codec);
    constexpr int kFrames = 40;
    std::string path = encode(std::string(codec) + ".mp4", options_for(codec), 0, kFrames);

    // a fresh decoder per request, which seeks to the key frame at or before the time and
    // decodes forward from there (a reused one may continue forward from its last picture).
    // The times are the frames' own: VideoDecoder decodes one frame more when the frame's
    // time, pts * time base in double, lies 1 ulp below the time asked for (k/30 for k = 23,
    // 31 at 1/15360).
    DecoderOptions always_seek;
    always_seek.max_forward_frames = 0;
    std::vector<double> ts = VideoDecoder(path).frame_timestamps();
    ASSERT_EQ(ts.size(), size_t{kFrames});
    int64_t most = 0;
    for (int k = 0; k < kFrames; ++k) {
      VideoDecoder d(path, always_seek);
      Frame f = d.decode_at(ts[k], kTolerance);
      ASSERT_EQ(stripe_index(f), k);
      EXPECT_LE(d.stats().seeks, 1);
      most = std::max(most, d.stats().frames_decoded);
    }
    std::printf("%s: at most %lld frames decoded per random access\n", codec,
                static_cast<long long>(most));
    EXPECT_LE(most, 2);
  }
}

TEST_F(VideoEncodeTest, FractionalFrameRateIsExact) {
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO();
  SKIP_WITHOUT_ENCODER("libsvtav1");
  EncoderOptions o = options_for("libsvtav1");
  o.fps_num = 30000;
  o.fps_den = 1001;
  std::string path = encode("ntsc.mp4", o, 100, 12);
  VideoDecoder d(path);
  for (int k = 0; k < 12; ++k) {
    ASSERT_EQ(stripe_index(d.decode_at(k * 1001 / 30000.0, kTolerance)), 100 + k);
  }
}

TEST_F(VideoEncodeTest, MissingEncoderFallsBackOrNamesTheCodec) {
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO();
  std::string path = file("out.mp4"), message;
  EncoderOptions o = options_for("no_such_encoder");
  EXPECT_EQ(error_kind_of([&] { VideoEncoder e(path, o); }, &message), ErrorKind::kUnsupported);
  EXPECT_NE(message.find("no_such_encoder"), std::string::npos) << message;
  EXPECT_NE(message.find(path), std::string::npos) << message;

  SKIP_WITHOUT_ENCODER("libx264");
  o.fallback_codec = "libx264";
  VideoEncoder enc(path, o);
  EXPECT_EQ(enc.codec(), "libx264");
  enc.add_frame(make_frame(5, 96, 64));
  enc.finish();
  EXPECT_EQ(stripe_index(VideoDecoder(path).decode_at(0)), 5);
}

TEST_F(VideoEncodeTest, BadOptionsAndFrameSizesAreInvalidArguments) {
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO();
  std::string path = file("out.mp4"), message;
  auto kind_for = [&](EncoderOptions o) {
    return error_kind_of([&] { VideoEncoder e(path, o); }, &message);
  };
  EXPECT_EQ(kind_for(options_for("libx264", 97, 64)), ErrorKind::kInvalidArgument);
  EXPECT_NE(message.find("97x64"), std::string::npos) << message;
  EXPECT_EQ(kind_for(options_for("libx264", 0, 64)), ErrorKind::kInvalidArgument);
  EncoderOptions o = options_for("libx264");
  o.fps_num = 0;
  EXPECT_EQ(kind_for(o), ErrorKind::kInvalidArgument);
  o = options_for("libx264");
  o.pix_fmt = "no_such_format";
  EXPECT_EQ(kind_for(o), ErrorKind::kInvalidArgument);
  EXPECT_TRUE(entries().empty());  // nothing was created

  SKIP_WITHOUT_ENCODER("libx264");
  VideoEncoder enc(path, options_for("libx264"));
  std::vector<uint8_t> small(96 * 64 * 3 - 1);
  EXPECT_EQ(error_kind_of([&] { enc.add_frame(small); }, &message), ErrorKind::kInvalidArgument);
  EXPECT_NE(message.find("18432"), std::string::npos) << message;
  // a frame of the wrong size was refused before reaching the encoder: it stays usable
  enc.add_frame(make_frame(0, 96, 64));
  enc.finish();
  EXPECT_EQ(error_kind_of([&] { enc.add_frame(make_frame(1, 96, 64)); }),
            ErrorKind::kInvalidArgument);
}

TEST_F(VideoEncodeTest, NoFramesIsAnErrorAndLeavesNoFile) {
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO();
  SKIP_WITHOUT_ENCODER("libx264");
  std::string path = file("out.mp4");
  {
    VideoEncoder enc(path, options_for("libx264"));
    EXPECT_EQ(error_kind_of([&] { enc.finish(); }), ErrorKind::kInvalidArgument);
    // sticky: the same error again
    EXPECT_EQ(error_kind_of([&] { enc.finish(); }), ErrorKind::kInvalidArgument);
  }
  EXPECT_TRUE(entries().empty());
}

TEST_F(VideoEncodeTest, AbandonedEncoderRemovesItsTemporaryFileAndKeepsTheOldOne) {
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO();
  SKIP_WITHOUT_ENCODER("libx264");
  std::string path = file("out.mp4");
  { std::ofstream(path) << "earlier"; }
  {
    VideoEncoder enc(path, options_for("libx264"));
    for (int i = 0; i < 5; ++i) enc.add_frame(make_frame(i, 96, 64));
    EXPECT_EQ(entries().size(), 2u);  // out.mp4 and out.mp4.tmp-<pid>
  }
  EXPECT_EQ(entries(), std::vector<std::string>{"out.mp4"});
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "earlier");
}

TEST_F(VideoEncodeTest, EncodeVideoConvenience) {
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO();
  SKIP_WITHOUT_ENCODER("libsvtav1");
  std::vector<uint8_t> frames;
  for (int i = 0; i < 6; ++i) {
    std::vector<uint8_t> f = make_frame(i + 20, 96, 64);
    frames.insert(frames.end(), f.begin(), f.end());
  }
  std::string path = file("clip.mp4");
  EXPECT_EQ(encode_video(path, frames, options_for("libsvtav1")), "libsvtav1");
  VideoDecoder d(path);
  for (int k = 0; k < 6; ++k) EXPECT_EQ(stripe_index(d.decode_at(k / 30.0)), 20 + k);

  frames.pop_back();
  EXPECT_EQ(error_kind_of([&] { encode_video(file("bad.mp4"), frames, options_for("libsvtav1")); }),
            ErrorKind::kInvalidArgument);
  EXPECT_FALSE(fs::exists(file("bad.mp4")));
}

// Encode speed on this machine, printed for the record (not a pass/fail threshold), on noisy
// frames; the last frame must still show its index.
TEST_F(VideoEncodeTest, EncodeSpeed) {
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO();
  struct Case {
    const char* codec;
    const char* preset;
    int w, h, frames;
  };
  const Case cases[] = {
      {"libsvtav1", "", 96, 64, 150},         {"libsvtav1", "", 640, 480, 60},
      {"libsvtav1", "default", 640, 480, 30}, {"libx264", "", 96, 64, 150},
      {"libx264", "", 640, 480, 90},          {"libx264", "default", 640, 480, 60},
  };
  for (const Case& c : cases) {
    if (skip_without_encoder(c.codec)) continue;
    std::vector<std::vector<uint8_t>> frames;
    for (int i = 0; i < c.frames; ++i) frames.push_back(make_noisy_frame(i, c.w, c.h));
    EncoderOptions o = options_for(c.codec, c.w, c.h);
    o.preset = c.preset;
    std::string path = file("speed.mp4");
    auto t0 = std::chrono::steady_clock::now();
    VideoEncoder enc(path, o);
    for (const auto& f : frames) enc.add_frame(f);
    enc.finish();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("encode speed: %-9s preset %-8s %3dx%-3d %7.1f frames/s (%d frames, %.1f KiB)\n",
                c.codec, *c.preset ? c.preset : "(ember)", c.w, c.h, c.frames / s, c.frames,
                fs::file_size(path) / 1024.0);
    Frame last = VideoDecoder(path).decode_at((c.frames - 1) / 30.0, kTolerance);
    EXPECT_EQ(stripe_index(last), c.frames - 1) << c.codec << " " << c.w << "x" << c.h;
  }
}

// --- joining -------------------------------------------------------------------------------

TEST_F(VideoEncodeTest, ConcatPlacesEveryPartAtItsExactStart) {
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO();
  for (const char* codec : kCodecs) {
    SCOPED_TRACE(codec);
    SKIP_WITHOUT_ENCODER(codec);
    // 3 parts of 37, 62, 36 frames (the v2.1 fixture's episodes), indices continuing
    const int lengths[] = {37, 62, 36};
    std::vector<std::string> inputs;
    int first = 0;
    for (int i = 0; i < 3; ++i) {
      inputs.push_back(
          encode("part" + std::to_string(i) + ".mp4", options_for(codec), first, lengths[i]));
      first += lengths[i];
    }
    std::string joined = file(std::string("joined-") + codec + ".mp4");
    std::vector<ConcatPart> parts = concat_videos(inputs, joined);
    ASSERT_EQ(parts.size(), 3u);

    VideoDecoder d(joined);
    EXPECT_EQ(d.info().num_frames, first);
    EXPECT_EQ(d.info().codec, codec == std::string("libsvtav1") ? "av1" : "h264");
    int global = 0;
    double start = 0;
    for (int i = 0; i < 3; ++i) {
      EXPECT_NEAR(parts[i].from_timestamp, start, 1e-12) << "part " << i;
      EXPECT_NEAR(parts[i].to_timestamp, start + lengths[i] / 30.0, 1e-12) << "part " << i;
      EXPECT_EQ(parts[i].num_frames, lengths[i]);
      for (int k = 0; k < lengths[i]; ++k, ++global) {
        Frame f = d.decode_at(parts[i].from_timestamp + k / 30.0, kTolerance);
        ASSERT_EQ(stripe_index(f), global) << "part " << i << " frame " << k;
        EXPECT_NEAR(f.timestamp, parts[i].from_timestamp + k / 30.0, 1e-9);
      }
      start = parts[i].to_timestamp;
    }
  }
}

TEST_F(VideoEncodeTest, ConcatOfTheV21FixtureEpisodes) {
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO();
  const int lengths[] = {37, 62, 36};
  std::vector<std::string> inputs;
  for (int e = 0; e < 3; ++e) {
    inputs.push_back(kData + "/lerobot_v2_1/videos/chunk-000/observation.images.top/episode_00000" +
                     std::to_string(e) + ".mp4");
  }
  std::string joined = file("file-000.mp4");
  std::vector<ConcatPart> parts = concat_videos(inputs, joined);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_DOUBLE_EQ(parts[0].from_timestamp, 0);
  EXPECT_NEAR(parts[1].from_timestamp, 37 / 30.0, 1e-12);
  EXPECT_NEAR(parts[2].from_timestamp, 99 / 30.0, 1e-12);
  EXPECT_NEAR(parts[2].to_timestamp, 135 / 30.0, 1e-12);

  VideoDecoder d(joined);
  std::vector<double> ts = d.frame_timestamps();
  ASSERT_EQ(ts.size(), 135u);
  int global = 0;
  for (int e = 0; e < 3; ++e) {
    for (int k = 0; k < lengths[e]; ++k, ++global) {
      EXPECT_NEAR(ts[global], parts[e].from_timestamp + k / 30.0, 1e-9);
      Frame f = d.decode_at(parts[e].from_timestamp + k / 30.0, kTolerance);
      ASSERT_EQ(stripe_index(f), global) << "episode " << e << " frame " << k;
    }
  }
}

TEST_F(VideoEncodeTest, ConcatRefusesMismatchedInputs) {
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO();
  SKIP_WITHOUT_ENCODER("libsvtav1");
  SKIP_WITHOUT_ENCODER("libx264");
  std::string a = encode("a.mp4", options_for("libsvtav1"), 0, 4);
  std::string wide = encode("wide.mp4", options_for("libsvtav1", 128, 64), 0, 4);
  std::string h264 = encode("h264.mp4", options_for("libx264"), 0, 4);
  EncoderOptions slow = options_for("libsvtav1");
  slow.fps_num = 15;  // the MP4 time base is 1/15360 at 15 fps as at 30: only the rate differs
  std::string at15 = encode("at15.mp4", slow, 0, 4);
  EncoderOptions cavlc = options_for("libx264");
  cavlc.preset = "ultrafast";  // no CABAC: a different PPS
  std::string ultrafast = encode("ultrafast.mp4", cavlc, 0, 4);
  std::string out = file("joined.mp4");

  struct Case {
    std::string input, field;
  };
  for (const Case& c : {Case{wide, "picture size"}, Case{h264, "codec"}, Case{at15, "frame rate"},
                        Case{ultrafast, "codec configuration"}}) {
    std::string message;
    std::string head = c.input == ultrafast ? h264 : a;
    auto join = [&] { concat_videos({head, c.input}, out); };
    EXPECT_EQ(error_kind_of(join, &message), ErrorKind::kInvalidArgument);
    EXPECT_NE(message.find(c.input), std::string::npos) << message;
    EXPECT_NE(message.find(c.field), std::string::npos) << message;
  }
  EXPECT_EQ(error_kind_of([&] { concat_videos({}, out); }), ErrorKind::kInvalidArgument);
  auto join_missing = [&] { concat_videos({a, file("missing.mp4")}, out); };
  EXPECT_EQ(error_kind_of(join_missing), ErrorKind::kNotFound);
  EXPECT_FALSE(fs::exists(out));
  for (const std::string& name : entries()) EXPECT_EQ(name.find(".tmp-"), std::string::npos);
}

}  // namespace
}  // namespace ember::io
