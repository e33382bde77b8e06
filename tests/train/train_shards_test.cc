// Training from shards: the first losses match training on the source dataset up to JPEG's
// loss (the pixel error and the loss difference printed), a resumed run on shards continues
// exactly, and shards served over HTTP (nginx on loopback) train the same losses bit for bit.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>

#include "ember/data/shard_pack.h"
#include "ember/io/http.h"
#include "ember/io/resize.h"
#include "ember/train/trainer.h"
#include "nginx_server.h"
#include "shard_fixture.h"

namespace ember::train {
namespace {

using test::TempDir;

TrainConfig config(const std::string& root, const std::string& out, int64_t steps, int64_t window) {
  return parse_train_flags({"--dataset.root=" + root, "--output_dir=" + out, "--device=cpu", "--steps=" + std::to_string(steps),
                            "--batch_size=8", "--optimizer.lr=3e-3", "--policy.horizon=4", "--dataset.image_size=32",
                            "--num_workers=1", "--log_freq=50", "--save_freq=100000",
                            "--dataset.shard_window=" + std::to_string(window)});
}

TrainerHooks quiet() {
  TrainerHooks h;
  h.quiet = true;
  return h;
}

struct Sources {
  TempDir dir;
  std::string src, shards;
  data::ShardIndex index;
  Sources() {
    src = dir.path() + "/src";
    shards = dir.path() + "/shards";
    test::write_stripes_dataset(src, {23, 40, 17, 31});
    index = data::pack_shards(src, shards, test::pack_options(32, 0.02));
  }
};

TEST(TrainShards, ResizeMatchesTheProcessorsBilinear) {
  io::Image im = test::draw_stripes(777, 64, 96);
  auto hwc = at::from_blob(im.rgb.data(), {64, 96, 3}, at::kByte).permute({2, 0, 1}).to(at::kFloat).unsqueeze(0);
  auto want = at::upsample_bilinear2d(hwc, {32, 32}, false).squeeze(0).permute({1, 2, 0}).contiguous();
  io::Image got = io::resize_bilinear(im, 32, 32);
  auto g = at::from_blob(got.rgb.data(), {32, 32, 3}, at::kByte).to(at::kFloat);
  EXPECT_LE((g - want).abs().max().item<double>(), 0.5 + 1e-3);  // rounding only
}

TEST(TrainShards, FirstLossesMatchTheSourceUpToJpeg) {
  Sources s;
  ASSERT_GE(s.index.shards.size(), 2u);
  auto a = train(config(s.src, s.dir.path() + "/a", 8, 0), quiet());
  auto b = train(config(s.shards, s.dir.path() + "/b", 8, 0), quiet());  // window 0: the source's order
  ASSERT_EQ(a.losses.size(), 8u);
  ASSERT_EQ(b.losses.size(), 8u);
  double worst = 0;
  for (size_t i = 0; i < 8; ++i) {
    const double rel = std::abs(a.losses[i].second - b.losses[i].second) / a.losses[i].second;
    worst = std::max(worst, rel);
    std::printf("step %zu: loss on the source %.6f, on shards %.6f (relative difference %.2e)\n", i + 1, a.losses[i].second,
                b.losses[i].second, rel);
  }
  std::printf("JPEG quality %d at 32x32: %s; worst relative loss difference %.2e\n", s.index.jpeg_quality, s.index.jpeg_error.dump().c_str(),
              worst);
  // the first step (the same weights on both) differs by JPEG's pixels only; later steps also
  // by the updates those made
  const double first = std::abs(a.losses[0].second - b.losses[0].second) / a.losses[0].second;
  EXPECT_LT(first, 1e-3);
  EXPECT_GT(first, 0.0) << "the shards' frames are JPEG: some difference is expected";
  EXPECT_LT(worst, 0.05);
}

TEST(TrainShards, ResumeOnShardsContinuesExactly) {
  Sources s;
  auto straight = train(config(s.shards, s.dir.path() + "/a", 16, 2), quiet());
  auto half = config(s.shards, s.dir.path() + "/b", 16, 2);
  half.save_freq = 8;
  TrainerHooks stop = quiet();
  stop.keep_going = [](int64_t step) { return step < 8; };
  auto first = train(half, stop);
  half.resume = true;
  auto second = train(half, quiet());
  ASSERT_EQ(second.first_step, 8);
  ASSERT_EQ(second.losses.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(first.losses[i].second, straight.losses[i].second) << "step " << i + 1;
    EXPECT_EQ(second.losses[i].second, straight.losses[8 + i].second) << "step " << 9 + i;
  }
}

TEST(TrainShards, OverHttpTrainsTheSameLosses) {
  if (!io::http_support_available()) GTEST_SKIP() << "skipped: ember built without libcurl (libcurl4-openssl-dev)";
  if (!test::NginxServer::available()) GTEST_SKIP() << "skipped: nginx not installed (apt-get install nginx-light)";
  Sources s;
  test::NginxServer::Options serve;
  serve.root = s.shards;
  test::NginxServer server(s.dir.path() + "/nginx", serve);
  ASSERT_FALSE(server.url().empty());
  auto local = train(config(s.shards, s.dir.path() + "/a", 6, 2), quiet());
  auto c = config(server.url(), s.dir.path() + "/b", 6, 2);
  c.dataset.cache_dir = s.dir.path() + "/cache";
  auto remote = train(c, quiet());
  ASSERT_EQ(remote.losses.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(remote.losses[i].second, local.losses[i].second) << "step " << i + 1;
}

}  // namespace
}  // namespace ember::train
