// Video decoding on the LeRobot fixtures. Every fixture frame shows its global frame index
// (the dataset's `index` column) as 12 vertical stripes in the top half of the picture,
// white = 1, most significant bit at the left, so a decoder that returns the wrong frame shows
// the wrong number whatever the codec's loss.
//
// Built without FFmpeg, every test checks the "built without video support" error instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "stripes.h"
#include "ember/core/error.h"
#include "ember/core/file.h"
#include "bench/decode_bench.h"
#include "ember/io/video/video_cache.h"
#include "ember/io/video/video_decoder.h"

namespace ember::io {
namespace {

const std::string kData = EMBER_TEST_DATA;
const char* const kCameras[] = {"observation.images.top", "observation.images.wrist"};
constexpr double kFps = 30;

// v2.1: one file per episode and camera; frame k at k/30.
const int kV21Lengths[] = {37, 62, 36};

std::string v21_path(const std::string& camera, int episode) {
  return kData + "/lerobot_v2_1/videos/chunk-000/" + camera + "/episode_00000" +
         std::to_string(episode) + ".mp4";
}

// v3.0: episodes 0-2 in file-000, 3-4 in file-001; frame k at from_timestamp + k/30, with
// from_timestamp as meta/episodes/chunk-000/file-000.parquet stores it.
struct V30Episode {
  int length;
  int file;
  double from_timestamp;
};
const V30Episode kV30[] = {
    {44, 0, 0.0}, {68, 0, 1.466667}, {31, 0, 3.733334}, {59, 1, 0.0}, {59, 1, 1.966667}};

std::string v30_path(const std::string& camera, int file) {
  return kData + "/lerobot_v3_0/videos/" + camera + "/chunk-000/file-00" + std::to_string(file) +
         ".mp4";
}

// The files were joined by FFmpeg's concat demuxer, which places each part at its
// millisecond-rounded container duration: episode starts drift from from_timestamp by up to
// 0.65 ms (episode 2 of file-000 starts at 3.733984 s, not 3.733334 s). LeRobot's 1e-4 s
// tolerance rejects those frames; 1e-3 s is still 1/33 of a frame interval.
constexpr double kV30Tolerance = 1e-3;

using test::stripe_index;

// One frame to check: the file, the time to ask for, the index it must show.
struct Expected {
  std::string path;
  double t;
  int index;
};

std::vector<Expected> v21_frames(const std::string& camera) {
  std::vector<Expected> out;
  int global = 0;
  for (int e = 0; e < 3; ++e) {
    for (int k = 0; k < kV21Lengths[e]; ++k)
      out.push_back({v21_path(camera, e), k / kFps, global++});
  }
  return out;
}

std::vector<Expected> v30_frames(const std::string& camera) {
  std::vector<Expected> out;
  int global = 0;
  for (const V30Episode& ep : kV30) {
    for (int k = 0; k < ep.length; ++k) {
      out.push_back({v30_path(camera, ep.file), ep.from_timestamp + k / kFps, global++});
    }
  }
  return out;
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

// Built without FFmpeg: opening path must say why, naming the file; then the test ends.
#define CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(path)                                            \
  do {                                                                                            \
    if (!video_support_available()) {                                                             \
      std::string message;                                                                        \
      EXPECT_EQ(error_kind_of([&] { VideoDecoder d(path); }, &message), ErrorKind::kUnsupported); \
      EXPECT_EQ(message, std::string(path) +                                                      \
                             ": ember was built without video support (FFmpeg not found at "      \
                             "build time)");                                                      \
      EXPECT_EQ(error_kind_of([&] { probe_video(path); }), ErrorKind::kUnsupported);              \
      return;                                                                                     \
    }                                                                                             \
  } while (0)

// Decodes the frames in the given order through one decoder per file, checking each.
void check_frames(const std::vector<Expected>& frames, double tolerance) {
  VideoCache cache;
  for (const Expected& x : frames) {
    VideoCache::Lease d = cache.get(x.path);
    Frame f = d->decode_at(x.t, tolerance);
    ASSERT_EQ(stripe_index(f), x.index) << x.path << " t=" << x.t;
    ASSERT_NEAR(f.timestamp, x.t, tolerance) << x.path;
  }
}

TEST(Video, ProbeReadsTheHeader) {
  std::string top = v21_path("observation.images.top", 0);
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(top);
  VideoInfo info = probe_video(top);
  EXPECT_EQ(info.width, 96);
  EXPECT_EQ(info.height, 64);
  EXPECT_DOUBLE_EQ(info.fps, 30);
  EXPECT_EQ(info.codec, "av1");
  EXPECT_EQ(info.pix_fmt, "yuv420p");
  EXPECT_EQ(info.num_frames, 37);
  EXPECT_NEAR(info.duration, 37 / kFps, 1e-3);
  EXPECT_EQ(info.start_time, 0);

  VideoInfo wrist = probe_video(v30_path("observation.images.wrist", 0));
  EXPECT_EQ(wrist.codec, "h264");
  EXPECT_EQ(wrist.num_frames, 44 + 68 + 31);
  EXPECT_DOUBLE_EQ(wrist.fps, 30);
}

TEST(Video, V21EveryFrameSequential) {
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(v21_path("observation.images.top", 0));
  for (const char* camera : kCameras) {
    int global = 0;
    for (int e = 0; e < 3; ++e) {
      VideoDecoder d(v21_path(camera, e));
      std::vector<double> ts;
      for (int k = 0; k < kV21Lengths[e]; ++k) ts.push_back(k / kFps);
      std::vector<Frame> frames = d.decode_many(ts);
      ASSERT_EQ(frames.size(), ts.size());
      for (int k = 0; k < kV21Lengths[e]; ++k) {
        EXPECT_EQ(frames[k].width, 96);
        EXPECT_EQ(frames[k].height, 64);
        ASSERT_EQ(frames[k].rgb.size(), 96u * 64 * 3);
        EXPECT_EQ(stripe_index(frames[k]), global + k) << camera << " episode " << e;
        EXPECT_NEAR(frames[k].timestamp, k / kFps, 1e-4);
      }
      global += kV21Lengths[e];
      // in order, from the start: one pass of decoding, no seek
      EXPECT_EQ(d.stats().seeks, 0) << camera;
      EXPECT_EQ(d.stats().frames_decoded, kV21Lengths[e]) << camera;
    }
  }
}

TEST(Video, V21EveryFrameRandomOrder) {
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(v21_path("observation.images.top", 0));
  std::mt19937 rng(21);
  for (const char* camera : kCameras) {
    std::vector<Expected> frames = v21_frames(camera);
    std::shuffle(frames.begin(), frames.end(), rng);
    check_frames(frames, 1e-4);
  }
}

TEST(Video, V30EveryFrameSequential) {
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(v30_path("observation.images.top", 0));
  for (const char* camera : kCameras) {
    // episode by episode, as the loader reads them
    check_frames(v30_frames(camera), kV30Tolerance);
    // and one decoder through a whole file, without seeking
    VideoDecoder d(v30_path(camera, 0));
    int global = 0;
    for (int e = 0; e < 3; ++e) {
      for (int k = 0; k < kV30[e].length; ++k, ++global) {
        Frame f = d.decode_at(kV30[e].from_timestamp + k / kFps, kV30Tolerance);
        ASSERT_EQ(stripe_index(f), global) << camera;
      }
    }
    EXPECT_EQ(d.stats().seeks, 0);
    EXPECT_EQ(d.stats().frames_decoded, 44 + 68 + 31);
  }
}

TEST(Video, V30EveryFrameRandomOrder) {
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(v30_path("observation.images.top", 0));
  std::mt19937 rng(30);
  for (const char* camera : kCameras) {
    std::vector<Expected> frames = v30_frames(camera);
    std::shuffle(frames.begin(), frames.end(), rng);
    check_frames(frames, kV30Tolerance);
  }
}

// The drift kV30Tolerance allows for is real: the first frame of episode 1 is 0.33 ms late.
TEST(Video, V30ConcatenationDriftExceedsLeRobotTolerance) {
  std::string path = v30_path("observation.images.wrist", 0);
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(path);
  VideoDecoder d(path);
  std::vector<double> ts = d.frame_timestamps();
  ASSERT_EQ(ts.size(), 143u);
  EXPECT_DOUBLE_EQ(ts[44], 22533 / 15360.0);  // not 44/30 = 22528/15360
  std::string message;
  EXPECT_EQ(error_kind_of([&] { d.decode_at(1.466667); }, &message), ErrorKind::kCorruption);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("1.466667"), std::string::npos) << message;
  EXPECT_NE(message.find("1.466992"), std::string::npos) << message;
  EXPECT_EQ(stripe_index(d.decode_at(1.466667, kV30Tolerance)), 44);
}

TEST(Video, DecodeManyKeepsTheCallersOrder) {
  std::string path = v21_path("observation.images.wrist", 1);
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(path);
  VideoDecoder d(path);
  std::vector<int> ks = {40, 3, 61, 3, 0, 17, 16};
  std::vector<double> ts;
  for (int k : ks) ts.push_back(k / kFps);
  std::vector<Frame> frames = d.decode_many(ts);
  ASSERT_EQ(frames.size(), ks.size());
  for (size_t i = 0; i < ks.size(); ++i) EXPECT_EQ(stripe_index(frames[i]), 37 + ks[i]);
}

TEST(Video, ShortForwardJumpsContinueInsteadOfSeeking) {
  std::string path = v21_path("observation.images.top", 1);
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(path);
  VideoDecoder d(path);
  for (int k : {0, 3, 4, 9, 9, 12}) EXPECT_EQ(stripe_index(d.decode_at(k / kFps)), 37 + k);
  EXPECT_EQ(d.stats().seeks, 0);
  EXPECT_EQ(d.stats().frames_decoded, 13);
  // backwards, and far ahead past unseen key frames: seeks
  EXPECT_EQ(stripe_index(d.decode_at(2 / kFps)), 37 + 2);
  EXPECT_EQ(d.stats().seeks, 1);
  EXPECT_EQ(stripe_index(d.decode_at(50 / kFps)), 37 + 50);
  EXPECT_EQ(d.stats().seeks, 2);
}

TEST(Video, TimeBetweenFramesBeyondToleranceThrows) {
  std::string path = v21_path("observation.images.top", 0);
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(path);
  VideoDecoder d(path);
  double t = 10.4 / kFps;  // 0.4 frames after frame 10
  std::string message;
  EXPECT_EQ(error_kind_of([&] { d.decode_at(t); }, &message), ErrorKind::kCorruption);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("0.346667"), std::string::npos) << message;  // t
  EXPECT_NE(message.find("0.333333"), std::string::npos) << message;  // frame 10
  // within a looser tolerance the nearest frame comes back; the decoder stays usable
  EXPECT_EQ(stripe_index(d.decode_at(t, 0.5 / kFps)), 10);
  EXPECT_EQ(stripe_index(d.decode_at(10.6 / kFps, 0.5 / kFps)), 11);
}

TEST(Video, TimePastTheEndThrowsNamingTheFile) {
  std::string path = v21_path("observation.images.wrist", 2);
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(path);
  VideoDecoder d(path);
  for (double t : {36 / kFps, 100.0}) {
    std::string message;
    EXPECT_EQ(error_kind_of([&] { d.decode_at(t); }, &message), ErrorKind::kInvalidArgument);
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("past the end"), std::string::npos) << message;
    EXPECT_NE(message.find("1.166667"), std::string::npos) << message;  // the last frame
  }
  EXPECT_EQ(error_kind_of([&] { d.decode_at(-1.0); }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(error_kind_of([&] { d.decode_at(std::nan("")); }), ErrorKind::kInvalidArgument);
  // the last frame itself, and the first after the errors
  EXPECT_EQ(stripe_index(d.decode_at(35 / kFps)), 37 + 62 + 35);
  EXPECT_EQ(stripe_index(d.decode_at(0)), 37 + 62);
}

TEST(Video, MissingFileIsNotFound) {
  std::string path = kData + "/lerobot_v2_1/videos/chunk-000/observation.images.top/missing.mp4";
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(path);
  std::string message;
  EXPECT_EQ(error_kind_of([&] { VideoDecoder d(path); }, &message), ErrorKind::kNotFound);
  EXPECT_NE(message.find(path), std::string::npos);
  EXPECT_EQ(error_kind_of([&] { probe_video(path); }), ErrorKind::kNotFound);
  VideoCache cache;
  EXPECT_EQ(error_kind_of([&] { cache.get(path); }), ErrorKind::kNotFound);
}

TEST(Video, NonVideoFileIsCorruption) {
  for (std::string path : {kData + "/lerobot_v2_1/meta/info.json",
                           kData + "/lerobot_v2_1/data/chunk-000/episode_000000.parquet"}) {
    CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(path);
    std::string message;
    EXPECT_EQ(error_kind_of([&] { VideoDecoder d(path); }, &message), ErrorKind::kCorruption);
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_EQ(error_kind_of([&] { probe_video(path); }), ErrorKind::kCorruption);
  }
  // a video cut short: the header survives, the pictures do not
  std::vector<uint8_t> bytes = read_file(v21_path("observation.images.top", 1));
  bytes.resize(bytes.size() / 3);
  std::string message;
  EXPECT_EQ(error_kind_of(
                [&] {
                  VideoDecoder d(memory_source(bytes, "cut.mp4"));
                  for (int k = 0; k < 62; ++k) d.decode_at(k / kFps);
                },
                &message),
            ErrorKind::kCorruption);
  EXPECT_NE(message.find("cut.mp4"), std::string::npos) << message;
}

// v3.0 files keep their index (moov) before the pictures: cut short, the header survives
// and promises frames that are not there.
TEST(Video, TruncatedFileIsCorruption) {
  std::string path = v30_path("observation.images.wrist", 0);
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(path);
  std::vector<uint8_t> bytes = read_file(path);
  bytes.resize(bytes.size() / 2);
  VideoDecoder d(memory_source(bytes, "half.mp4"));
  EXPECT_EQ(stripe_index(d.decode_at(0)), 0);
  std::string message;
  EXPECT_EQ(error_kind_of([&] { d.decode_at(4.7); }, &message), ErrorKind::kCorruption);
  EXPECT_NE(message.find("half.mp4"), std::string::npos) << message;
}

// A read error inside FFmpeg's byte callback comes out as the Source's own Error.
TEST(Video, ReadErrorsPassThroughFFmpeg) {
  std::string path = v21_path("observation.images.top", 1);
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(path);
  class FailingSource : public Source {
   public:
    explicit FailingSource(std::unique_ptr<Source> s) : s_(std::move(s)) {}
    uint64_t size() const override { return s_->size(); }
    const std::string& name() const override { return s_->name(); }
    void read_at(uint64_t offset, uint64_t n, uint8_t* out) const override {
      if (offset + n > 1000) throw Error(ErrorKind::kIO, name() + ": disk on fire");
      s_->read_at(offset, n, out);
    }

   private:
    std::unique_ptr<Source> s_;
  };
  std::string message;
  EXPECT_EQ(error_kind_of([&] { VideoDecoder d(std::make_unique<FailingSource>(open_file(path))); },
                          &message),
            ErrorKind::kIO);
  EXPECT_EQ(message, path + ": disk on fire");
}

// A stream whose first presentation time is 6.4 s, in a container without a seek index:
// times count from the stream's start.
TEST(Video, StreamStartingLaterThanZero) {
  std::string path = kData + "/video/wrist_ep1_start5s.ts";
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(path);
  VideoInfo info = probe_video(path);
  EXPECT_NEAR(info.start_time, 6.4, 1e-9);
  EXPECT_EQ(info.codec, "h264");
  EXPECT_DOUBLE_EQ(info.fps, 30);
  VideoDecoder d(path);
  std::vector<double> ts = d.frame_timestamps();
  ASSERT_EQ(ts.size(), 62u);
  EXPECT_NEAR(ts[0], 0, 1e-9);
  for (int k = 0; k < 62; ++k) {
    ASSERT_EQ(stripe_index(d.decode_at(k / kFps)), 37 + k) << k;
  }
  std::mt19937 rng(5);
  for (int i = 0; i < 40; ++i) {
    int k = static_cast<int>(rng() % 62);
    ASSERT_EQ(stripe_index(d.decode_at(k / kFps)), 37 + k) << k;
  }
}

TEST(Video, DecodesFromMemory) {
  std::string path = v21_path("observation.images.wrist", 0);
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(path);
  VideoDecoder d(memory_source(read_file(path), "in-memory.mp4"));
  EXPECT_EQ(d.path(), "in-memory.mp4");
  EXPECT_EQ(stripe_index(d.decode_at(5 / kFps)), 5);
}

TEST(Video, ResizeGivesTheRequestedSize) {
  std::string path = v21_path("observation.images.top", 1);
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(path);
  for (auto [w, h] : {std::pair{48, 32}, std::pair{224, 224}, std::pair{37, 23}}) {
    DecoderOptions o;
    o.width = w;
    o.height = h;
    VideoDecoder d(path, o);
    EXPECT_EQ(d.output_width(), w);
    EXPECT_EQ(d.output_height(), h);
    Frame f = d.decode_at(20 / kFps);
    EXPECT_EQ(f.width, w);
    EXPECT_EQ(f.height, h);
    ASSERT_EQ(f.rgb.size(), static_cast<size_t>(w) * h * 3);
    if (w >= 48) {
      EXPECT_EQ(stripe_index(f), 37 + 20) << w << "x" << h;
    }
  }
  DecoderOptions bad;
  bad.width = 10;
  EXPECT_EQ(error_kind_of([&] { VideoDecoder d(path, bad); }), ErrorKind::kInvalidArgument);
}

TEST(Video, DecoderThreads) {
  std::string path = v30_path("observation.images.top", 0);
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(path);
  for (int threads : {0, 2}) {
    DecoderOptions o;
    o.threads = threads;
    VideoDecoder d(path, o);
    for (int k : {0, 1, 2, 43, 20, 21, 60})
      EXPECT_EQ(stripe_index(d.decode_at(k / kFps, kV30Tolerance)), k);
  }
}

TEST(VideoCache, EvictsBeyondCapacity) {
  std::string a = v21_path("observation.images.top", 0), b = v21_path("observation.images.top", 1),
              c = v21_path("observation.images.top", 2);
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(a);
  VideoCache::Options o;
  o.capacity = 2;
  VideoCache cache(o);
  for (const std::string& p : {a, b, c}) EXPECT_EQ(cache.get(p)->path(), p);
  VideoCache::Stats s = cache.stats();
  EXPECT_EQ(s.misses, 3);
  EXPECT_EQ(s.hits, 0);
  EXPECT_EQ(s.evictions, 1);
  EXPECT_EQ(s.idle, 2u);
  cache.get(c);  // still there
  cache.get(a);  // evicted first: reopened, evicting b
  s = cache.stats();
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.misses, 4);
  EXPECT_EQ(s.evictions, 2);
  EXPECT_EQ(s.idle, 2u);
  cache.get(b);
  EXPECT_EQ(cache.stats().misses, 5);

  // two leases of one file at once are two decoders
  {
    VideoCache::Lease x = cache.get(a), y = cache.get(a);
    EXPECT_NE(x.get(), y.get());
  }
  EXPECT_EQ(cache.stats().idle, 2u);
  cache.clear();
  EXPECT_EQ(cache.stats().idle, 0u);
}

TEST(VideoCache, LeaseOutlivesTheCache) {
  std::string path = v21_path("observation.images.wrist", 0);
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(path);
  VideoCache::Lease lease;
  {
    VideoCache cache;
    lease = cache.get(path);
  }
  EXPECT_EQ(stripe_index(lease->decode_at(1 / kFps)), 1);
}

TEST(VideoCache, ThreadsShareOneCache) {
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(v30_path("observation.images.top", 0));
  std::vector<Expected> frames = v30_frames("observation.images.top");
  for (const Expected& x : v30_frames("observation.images.wrist")) frames.push_back(x);
  VideoCache::Options o;
  o.capacity = 3;
  VideoCache cache(o);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937 rng(w);
      std::uniform_int_distribution<size_t> pick(0, frames.size() - 1);
      for (int i = 0; i < 150; ++i) {
        const Expected& x = frames[pick(rng)];
        VideoCache::Lease d = cache.get(x.path);
        if (stripe_index(d->decode_at(x.t, kV30Tolerance)) != x.index) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_LE(cache.stats().idle, 3u);
}

TEST(Video, BenchCountsEveryFrame) {
  std::vector<std::string> files = {v21_path("observation.images.top", 0),
                                    v21_path("observation.images.wrist", 1)};
  CHECK_UNSUPPORTED_AND_RETURN_IF_NO_VIDEO(files[0]);
  bench::DecodeBenchOptions o;
  o.workers = 2;
  o.random_per_file = 10;
  bench::DecodeBenchResult r = bench::bench_decode(files, o);
  EXPECT_EQ(r.files, 2);
  EXPECT_EQ(r.sequential_frames, 37 + 62);
  EXPECT_EQ(r.random_frames, 20);
  EXPECT_GT(r.sequential_fps, 0);
  EXPECT_GT(r.random_fps, 0);
}

}  // namespace
}  // namespace ember::io
