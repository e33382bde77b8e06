// Training shards: JPEG and resizing primitives, `pack` (every frame kept, at the right index,
// with its numbers exact), the index's O(1) lookups, check finding damage, and the
// shard-aware order of one rank (windows of shards; ranks: data_shard_order_test.cc).
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <set>

#include "ember/core/error.h"
#include "ember/data/check.h"
#include "ember/data/dataset.h"
#include "ember/data/sampler.h"
#include "ember/data/shard_check.h"
#include "ember/data/shard_pack.h"
#include "ember/io/jpeg.h"
#include "ember/io/resize.h"
#include "ember/io/video/video_decoder.h"
#include "shard_fixture.h"

namespace ember::data {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

double mean_abs(const io::Image& a, const io::Image& b) {
  double s = 0;
  for (size_t i = 0; i < a.rgb.size(); ++i) s += std::abs(double(a.rgb[i]) - double(b.rgb[i]));
  return s / double(a.rgb.size());
}

TEST(Jpeg, RoundTripIsCloseAndDamageIsAnError) {
  io::Image im = test::draw_stripes(1234, 64, 96);
  auto bytes = io::encode_jpeg(im, 95);
  ASSERT_TRUE(io::is_jpeg(bytes.data(), bytes.size()));
  io::Image back = io::decode_image(bytes.data(), bytes.size(), "x");
  ASSERT_EQ(back.width, 96);
  ASSERT_EQ(back.height, 64);
  EXPECT_LT(mean_abs(im, back), 4.0);
  EXPECT_EQ(test::stripe_index(back), 1234);
  // truncated: an error naming what, never a grey-filled image
  std::string msg = test::error_of([&] { io::decode_jpeg(bytes.data(), bytes.size() / 2, "cell 7"); });
  EXPECT_NE(msg.find("cell 7"), std::string::npos) << msg;
  EXPECT_NE(test::error_of([&] { io::encode_jpeg(im, 0); }, ErrorKind::kInvalidArgument).find("quality"), std::string::npos);
}

TEST(Resize, BilinearKeepsFlatImagesAndHalvesPairs) {
  io::Image flat{4, 4, std::vector<uint8_t>(48, 77)};
  io::Image r = io::resize_bilinear(flat, 3, 5);
  for (uint8_t v : r.rgb) EXPECT_EQ(v, 77);
  // 2x down (align_corners=false): each output pixel is the mean of a 2x2 block
  io::Image ramp{4, 1, {0, 0, 0, 10, 10, 10, 20, 20, 20, 31, 31, 31}};
  io::Image half = io::resize_bilinear(ramp, 2, 1);
  EXPECT_EQ(half.rgb[0], 5);
  EXPECT_EQ(half.rgb[3], 26);  // (20 + 31) / 2 = 25.5, rounded half away from zero
}

struct Packed {
  TempDir dir;
  std::string src, dst;
  ShardIndex index;
  Packed() {
    src = dir.path() + "/src";
    dst = dir.path() + "/shards";
    test::write_stripes_dataset(src, {23, 40, 17, 31});
    index = pack_shards(src, dst, test::pack_options(96, 0.05));  // several shards from 111 frames
  }
};

TEST(Pack, KeepsEveryFrameAtItsIndexWithItsNumbers) {
  Packed p;
  ASSERT_GE(p.index.shards.size(), 3u);
  EXPECT_EQ(p.index.jpeg_quality, 95);
  EXPECT_GT(p.index.jpeg_error.value("psnr_db", 0.0), 30.0) << p.index.jpeg_error.dump();
  Dataset src(p.src), shards(p.dst, test::shard_reading());
  ASSERT_EQ(shards.size(), 111);
  for (int64_t i = 0; i < shards.size(); ++i) {
    Item a = src.get(i), b = shards.get(i);
    EXPECT_EQ(b.episode_index, a.episode_index);
    EXPECT_EQ(b.frame_index, a.frame_index);
    EXPECT_EQ(b.task, a.task);
    EXPECT_EQ(b.values.at("observation.state").data, a.values.at("observation.state").data) << i;
    EXPECT_EQ(b.values.at("action").data, a.values.at("action").data) << i;
    for (const char* cam : {"observation.images.top", "observation.images.wrist"}) {
      const io::Image& im = b.images.at(cam).front();
      ASSERT_EQ(im.width, 96);
      ASSERT_EQ(im.height, 96);
      EXPECT_EQ(test::stripe_index(im), i) << cam;
      EXPECT_LT(mean_abs(im, io::resize_bilinear(a.images.at(cam).front(), 96, 96)), 4.0);
    }
    // O(1) lookup: the shard the index names holds the frame
    const ShardFile& s = p.index.shards[size_t(p.index.shard_of(i))];
    EXPECT_TRUE(i >= s.first_index && i < s.first_index + s.rows);
  }
  EXPECT_EQ(p.index.shard_of(111), -1);
  // the source's statistics are kept, so normalisation is the same
  EXPECT_EQ(shards.meta().stats.at("action").at("mean"), src.meta().stats.at("action").at("mean"));
  // delta timestamps read across row groups
  Dataset chunks(p.dst, test::shard_reading({{"action", {0, 0.1, 0.9}}}));
  DatasetOptions plain;
  plain.delta_timestamps = {{"action", {0, 0.1, 0.9}}};
  Dataset chunks_src(p.src, plain);
  EXPECT_EQ(chunks.get(30).values.at("action").data, chunks_src.get(30).values.at("action").data);
  EXPECT_EQ(chunks.get(30).is_pad.at("action"), chunks_src.get(30).is_pad.at("action"));
}

TEST(Pack, CheckPassesThenFindsDamageNamingTheShard) {
  Packed p;
  CheckReport ok = check_dataset(p.dst);
  check_shards(p.dst, ok);
  for (const auto& pr : ok.problems) ADD_FAILURE() << pr.file << ": " << pr.message;
  EXPECT_EQ(ok.frames_decoded, 2 * 111);
  // one byte flipped in the middle of a shard
  const std::string victim = p.dst + "/" + p.index.shards[1].path;
  {
    std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(std::streamoff(p.index.shards[1].bytes / 2));
    char c = 0;
    f.read(&c, 1);
    f.seekp(std::streamoff(p.index.shards[1].bytes / 2));
    c = char(c ^ 0x5a);
    f.write(&c, 1);
  }
  CheckReport bad;
  check_shards(p.dst, bad);
  ASSERT_EQ(bad.problems.size(), 1u);
  EXPECT_EQ(bad.problems[0].file, victim);
  EXPECT_NE(bad.problems[0].message.find("CRC-32"), std::string::npos) << bad.problems[0].message;
  // truncated
  fs::resize_file(victim, p.index.shards[1].bytes - 100);
  CheckReport cut;
  check_shards(p.dst, cut);
  ASSERT_EQ(cut.problems.size(), 1u);
  EXPECT_NE(cut.problems[0].message.find("bytes"), std::string::npos) << cut.problems[0].message;
}

TEST(Pack, MalformedIndexIsNamedByFileAndField) {
  Packed p;
  const std::string path = p.dst + "/meta/shards.json";
  auto rewrite = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json j = p.index.to_json();
    change(j);
    std::ofstream(path) << j.dump();
  };
  rewrite([](nlohmann::json& j) { j.erase("image_size"); });
  std::string msg = test::error_of([&] { read_shard_index(p.dst); });
  EXPECT_NE(msg.find(path + ": field 'image_size' is missing"), std::string::npos) << msg;
  rewrite([](nlohmann::json& j) { j["shards"][1]["first_index"] = 5; });
  msg = test::error_of([&] { read_shard_index(p.dst); });
  EXPECT_NE(msg.find("shards[1] starts at frame 5"), std::string::npos) << msg;
  rewrite([](nlohmann::json& j) { j["shards"][0]["pieces"][0][1] = 1; });
  msg = test::error_of([&] { read_shard_index(p.dst); });
  EXPECT_NE(msg.find("shards[0]"), std::string::npos) << msg;
  rewrite([](nlohmann::json& j) { j["shards"][0]["path"] = "../../etc/passwd"; });
  msg = test::error_of([&] { read_shard_index(p.dst); });
  EXPECT_NE(msg.find("must be relative, inside the root"), std::string::npos) << msg;
  // issue 42: wrong JSON types were internal errors (exit 70); each names the file and the field
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> wrong_types = {
      {[](nlohmann::json& j) { j["shards"] = "x"; }, "field 'shards' must be an array"},
      {[](nlohmann::json& j) { j["meta"] = "x"; }, "field 'meta' must be an array"},
      {[](nlohmann::json& j) { j["shards"][0]["pieces"] = 7; }, "field 'pieces' must be an array"},
      {[](nlohmann::json& j) { j["jpeg_error"] = "x"; }, "field 'jpeg_error' must be an object"},
      {[](nlohmann::json& j) { j["jpeg_error"]["frames"] = "many"; }, "field 'jpeg_error.frames' must be an integer"},
      {[](nlohmann::json& j) { j["jpeg_error"]["psnr_db"] = nullptr; }, "field 'jpeg_error.psnr_db' must be a number"},
  };
  for (const auto& [change, want] : wrong_types) {
    rewrite(change);
    msg = test::error_of([&] { read_shard_index(p.dst); }, ErrorKind::kCorruption);
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(want), std::string::npos) << msg;
  }
  rewrite([](nlohmann::json& j) { j["version"] = 9; });
  test::error_of([&] { read_shard_index(p.dst); }, ErrorKind::kUnsupported);
  // check lists it as a problem instead of stopping
  CheckReport r;
  check_shards(p.dst, r);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].file, path);
}

TEST(Pack, RefusesBadOptionsAndAnExistingDestination) {
  TempDir dir;
  test::write_stripes_dataset(dir.path() + "/src", {5});
  PackOptions bad;
  bad.jpeg_quality = 101;
  auto msg = test::error_of([&] { pack_shards(dir.path() + "/src", dir.path() + "/out", bad); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("--jpeg_quality=101"), std::string::npos) << msg;
  fs::create_directories(dir.path() + "/out");
  msg = test::error_of([&] { pack_shards(dir.path() + "/src", dir.path() + "/out", {}); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("already exists"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(dir.path() + "/out.tmp-" + std::to_string(::getpid())));
}

// issue 42: `ember data pack SRC SRC --overwrite` and `ember data pack SRC PARENT --overwrite` exited
// 0 with the source gone. A destination that is, lies inside or holds the source (links
// resolved) is refused naming both paths, before anything is touched.
TEST(Pack, OverwriteNeverDeletesOrWritesIntoTheSource) {
  TempDir dir;
  const std::string src = dir.path() + "/data/src";
  test::write_stripes_dataset(src, {5});
  auto files = [&] {
    int n = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir.path())) n += e.is_regular_file();
    return n;
  };
  const int before = files();
  fs::create_directory_symlink(src, dir.path() + "/link");
  PackOptions o = test::pack_options(96);
  o.overwrite = true;
  for (const std::string& dst : {src, src + "/", dir.path() + "/data", dir.path(), src + "/shards", dir.path() + "/link",
                                 dir.path() + "/data/../data/src"}) {
    auto msg = test::error_of([&] { pack_shards(src, dst, o); }, ErrorKind::kInvalidArgument);
    EXPECT_NE(msg.find(dst), std::string::npos) << msg;
    EXPECT_NE(msg.find(src), std::string::npos) << msg;
    EXPECT_EQ(files(), before) << dst;
  }
  // the source through a link, the destination its real path
  auto msg = test::error_of([&] { pack_shards(dir.path() + "/link", src, o); }, ErrorKind::kInvalidArgument);
  EXPECT_EQ(files(), before);
  // a sibling whose name starts like the source's is apart
  EXPECT_NO_THROW(pack_shards(src, src + "-shards", o));
}

// issue 42: --threads=100000 aborted (SIGABRT) and left DST.tmp-PID directories behind
TEST(Pack, ThreadCountsPastTheBoundAreRefusedBeforeAnythingIsWritten) {
  TempDir dir;
  test::write_stripes_dataset(dir.path() + "/src", {5});
  PackOptions o = test::pack_options(96);
  o.threads = 100000;
  auto msg = test::error_of([&] { pack_shards(dir.path() + "/src", dir.path() + "/out", o); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("--threads=100000"), std::string::npos) << msg;
  for (const auto& e : fs::directory_iterator(dir.path())) EXPECT_EQ(e.path().filename().string().find("out"), std::string::npos) << e.path();
}

TEST(Pack, VideoSourceWhereFFmpegExists) {
  if (!io::video_support_available()) GTEST_SKIP() << "skipped: ember built without FFmpeg, video sources cannot be packed here";
  TempDir dir;
  ShardIndex index = pack_shards(std::string(EMBER_TEST_DATA) + "/lerobot_v3_0", dir.path() + "/shards", test::pack_options(96));
  Dataset shards(dir.path() + "/shards", test::shard_reading());
  for (int64_t i = 0; i < shards.size(); i += 7) EXPECT_EQ(test::stripe_index(shards.get(i).images.at("observation.images.top").front()), i);
}

// --- the shard-aware order ---

std::vector<Episode> episodes_of(const std::vector<int64_t>& lengths) {
  std::vector<Episode> out;
  int64_t at = 0;
  for (size_t e = 0; e < lengths.size(); ++e) {
    Episode ep;
    ep.index = int64_t(e);
    ep.length = lengths[e];
    ep.from_index = at;
    ep.to_index = at += lengths[e];
    out.push_back(ep);
  }
  return out;
}

TEST(ShardOrder, WindowsOfShardsPermutedWithinAndSeeded) {
  auto eps = episodes_of({50, 50, 50, 50, 50, 50, 50});  // 350 frames
  SamplerOptions o;
  o.seed = 7;
  o.shard_starts = {0, 60, 130, 170, 260, 300};  // shards of unequal size
  o.shard_window = 2;
  o.drop_n_last_frames = 3;
  FrameSampler s(eps, o);
  auto order = s.order(0);
  // a permutation of the eligible frames
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, s.eligible());
  // consecutive stretches, one per window: all eligible frames of two shards, nothing else
  auto shard = [&](int64_t f) { return int(std::upper_bound(o.shard_starts.begin(), o.shard_starts.end(), f) - o.shard_starts.begin()) - 1; };
  std::map<int, size_t> count;
  for (int64_t f : s.eligible()) ++count[shard(f)];
  std::set<int> done;
  size_t i = 0, windows = 0;
  while (i < order.size()) {
    const int a = shard(order[i]);
    int b = -1;
    for (size_t k = i; k < order.size() && b < 0; ++k)
      if (shard(order[k]) != a) b = shard(order[k]);
    ASSERT_GE(b, 0);
    const size_t len = count[a] + count[b];
    ASSERT_LE(i + len, order.size());
    for (size_t k = i; k < i + len; ++k) {
      const int w = shard(order[k]);
      ASSERT_TRUE(w == a || w == b) << "position " << k << ": shard " << w << " inside the window of shards " << a << ", " << b;
    }
    EXPECT_FALSE(done.count(a) || done.count(b));
    done.insert(a), done.insert(b);
    i += len, ++windows;
  }
  EXPECT_EQ(windows, 3u);
  // seeded by (seed, epoch) only; another epoch, another order
  EXPECT_EQ(FrameSampler(eps, o).order(0), order);
  EXPECT_NE(s.order(1), order);
  // not the unwindowed order
  SamplerOptions plain = o;
  plain.shard_window = 0;
  EXPECT_NE(FrameSampler(eps, plain).order(0), order);
}

// Ranks, resume and padding of the owned-shard order: data_shard_order_test.cc.

}  // namespace
}  // namespace ember::data
