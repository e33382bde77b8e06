// Remote shards against a real nginx on loopback (tests/nginx_server.h): fetched in ranges into
// a bounded cache, read back sample for sample, and the faults: corrupt, truncated, 503, the
// server killed mid-transfer, too slow. Retried, then an error naming the shard; never a wrong
// sample. Without nginx every test skips, saying so.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "ember/core/error.h"
#include "ember/data/dataset.h"
#include "ember/data/sampler.h"
#include "ember/data/shard_pack.h"
#include "ember/data/shard_store.h"
#include "ember/io/http.h"
#include "remote_fixture.h"

namespace ember::data {
namespace {

namespace fs = std::filesystem;
using test::NginxServer;
using test::TempDir;
using test::Served;
using test::serve;
using test::quick;
using test::expect_same_samples;

TEST(RemoteShards, ReadsTheSameSamplesAsLocalShards) {
  REQUIRE_NGINX();
  Served s;
  NginxServer server(s.dir.path() + "/nginx", serve(s.shards));
  ASSERT_FALSE(server.url().empty()) << "nginx did not start (see " << s.dir.path() << "/nginx/logs)";
  RemoteShards remote(server.url(), quick(s.dir.path() + "/cache"));
  expect_same_samples(remote, s.shards);
  auto st = remote.stats();
  EXPECT_EQ(st.shards_fetched, int64_t(s.index.shards.size()));
  EXPECT_EQ(st.retries, 0);
}

TEST(RemoteShards, CacheStaysWithinItsBoundAndPrefetchRunsAhead) {
  REQUIRE_NGINX();
  Served s;
  NginxServer server(s.dir.path() + "/nginx", serve(s.shards));
  ASSERT_FALSE(server.url().empty());
  uint64_t largest = 0;
  for (const auto& f : s.index.shards) largest = std::max(largest, f.bytes);
  RemoteOptions o = quick(s.dir.path() + "/cache");
  o.cache_bytes = largest * 2;
  RemoteShards remote(server.url(), o);
  expect_same_samples(remote, s.shards);
  EXPECT_GT(remote.stats().evicted, 0);
  uint64_t on_disk = 0;
  for (const auto& e : fs::recursive_directory_iterator(s.dir.path() + "/cache/data"))
    if (e.is_regular_file()) on_disk += e.file_size();
  EXPECT_LE(on_disk, o.cache_bytes);
  // prefetch: the next shards arrive without being asked for
  const int64_t before = remote.stats().shards_fetched;
  remote.prefetch({0});
  for (int i = 0; i < 200 && remote.stats().shards_fetched == before; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(remote.stats().shards_fetched, before + (fs::exists(s.dir.path() + "/cache/" + s.index.shards[0].path) ? 1 : 0));
  EXPECT_TRUE(fs::exists(s.dir.path() + "/cache/" + s.index.shards[0].path));
}

// localize() on shard k must fail, naming it and `reason`, and leave no file in the cache.
void expect_named_failure(RemoteShards& remote, const Served& s, int k, const std::string& reason) {
  const std::string path = remote.local_root() + "/" + s.index.shards[size_t(k)].path;
  std::string msg = test::error_of([&] { remote.localize(path); }, ErrorKind::kIO);
  EXPECT_NE(msg.find(s.index.shards[size_t(k)].path), std::string::npos) << msg;
  EXPECT_NE(msg.find(reason), std::string::npos) << msg;
  EXPECT_NE(msg.find("after 3 attempts"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(path)) << "a damaged shard reached the cache";
  std::printf("error as reported: %s\n", msg.c_str());
}

TEST(RemoteShards, CorruptShardIsRetriedThenNamed) {
  REQUIRE_NGINX();
  Served s;
  std::string root = s.damaged(1, [&](const std::string& p) {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(s.index.shards[1].bytes / 3));
    f.write("\x13\x37", 2);
  });
  NginxServer server(s.dir.path() + "/nginx", serve(root));
  ASSERT_FALSE(server.url().empty());
  RemoteShards remote(server.url(), quick(s.dir.path() + "/cache"));
  expect_named_failure(remote, s, 1, "CRC-32 mismatch");
  EXPECT_EQ(remote.stats().retries, 2);
  remote.localize(remote.local_root() + "/" + s.index.shards[0].path);  // the others still read
}

TEST(RemoteShards, TruncatedShardIsNamed) {
  REQUIRE_NGINX();
  Served s;
  std::string root = s.damaged(2, [&](const std::string& p) { fs::resize_file(p, s.index.shards[2].bytes - 1000); });
  NginxServer server(s.dir.path() + "/nginx", serve(root));
  ASSERT_FALSE(server.url().empty());
  RemoteShards remote(server.url(), quick(s.dir.path() + "/cache"));
  expect_named_failure(remote, s, 2, "expected " + std::to_string(s.index.shards[2].bytes));
}

// issue 42: a 404 said "after 5 attempts" after one attempt
TEST(RemoteShards, MissingShardIsNamedAfterOneAttempt) {
  REQUIRE_NGINX();
  Served s;
  std::string root = s.damaged(1, [](const std::string& p) { fs::remove(p); });
  NginxServer server(s.dir.path() + "/nginx", serve(root));
  ASSERT_FALSE(server.url().empty());
  RemoteShards remote(server.url(), quick(s.dir.path() + "/cache"));
  const std::string path = remote.local_root() + "/" + s.index.shards[1].path;
  std::string msg = test::error_of([&] { remote.localize(path); }, ErrorKind::kIO);
  EXPECT_NE(msg.find("HTTP 404"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(1 attempt: "), std::string::npos) << msg;
  EXPECT_EQ(msg.find("after"), std::string::npos) << msg;
  EXPECT_EQ(remote.stats().retries, 0);
  EXPECT_FALSE(fs::exists(path));
}

// issue 42: a cache_dir that is a regular file, or lies under one, was an internal error (exit 70)
TEST(RemoteShards, CacheDirThatIsAFileIsAUserErrorNamingIt) {
  TempDir dir;
  const std::string file = dir.path() + "/plain";
  std::ofstream(file) << "x";
  for (const std::string& cache : {file, file + "/under"}) {
    RemoteOptions o;
    o.cache_dir = cache;
    std::string msg = test::error_of([&] { RemoteShards("http://127.0.0.1:9/none", o); }, ErrorKind::kInvalidArgument);
    EXPECT_NE(msg.find("--dataset.cache_dir " + cache), std::string::npos) << msg;
  }
}

TEST(RemoteShards, ServerErrorsAreRetriedThenNamed) {
  REQUIRE_NGINX();
  Served s;
  NginxServer server(s.dir.path() + "/nginx", serve(s.shards, "", "/data/"));
  ASSERT_FALSE(server.url().empty());
  RemoteShards remote(server.url(), quick(s.dir.path() + "/cache"));
  expect_named_failure(remote, s, 0, "HTTP 503");
}

TEST(RemoteShards, SlowServerIsAbandonedThenNamed) {
  REQUIRE_NGINX();
  Served s;
  NginxServer server(s.dir.path() + "/nginx", serve(s.shards, "2k"));
  ASSERT_FALSE(server.url().empty());
  RemoteOptions o = quick(s.dir.path() + "/cache");
  o.http.low_speed_bytes = 16 << 10;  // below 16 KiB/s for 1 s: abandoned
  o.http.low_speed_s = 1;
  RemoteShards remote(server.url(), o);
  expect_named_failure(remote, s, 0, "Timeout");
}

TEST(RemoteShards, ServerKilledMidTransferIsRetriedAndRecovers) {
  REQUIRE_NGINX();
  Served s;
  NginxServer server(s.dir.path() + "/nginx", serve(s.shards, "40k"));  // a shard takes > 1 s
  ASSERT_FALSE(server.url().empty());
  RemoteOptions o = quick(s.dir.path() + "/cache");
  o.retries = 6;
  o.backoff_s = 0.3;
  RemoteShards remote(server.url(), o);
  const std::string path = remote.local_root() + "/" + s.index.shards[1].path;
  auto fetch = std::async(std::launch::async, [&] { return remote.localize(path); });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  server.kill_now();  // mid-transfer
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  server.restart();
  ASSERT_FALSE(server.url().empty());
  EXPECT_EQ(fetch.get(), path);
  EXPECT_GE(remote.stats().retries, 1);
  // and the bytes are the shard's
  std::ifstream a(path, std::ios::binary), b(s.shards + "/" + s.index.shards[1].path, std::ios::binary);
  EXPECT_TRUE(std::equal(std::istreambuf_iterator<char>(a), {}, std::istreambuf_iterator<char>(b)));
}

// 8 simulated ranks, each with its own cache, fetch an epoch's samples over HTTP: in the
// owned-shard order each fetches only its own shards (together the dataset once); strided
// shares of one windowed order (the order before it) had each fetch nearly every shard.
TEST(RemoteShards, EightRanksFetchOnlyTheShardsTheirSamplesLiveIn) {
  REQUIRE_NGINX();
  TempDir dir;
  test::write_stripes_dataset(dir.path() + "/src", {9, 12, 7, 10, 8, 11, 6, 13, 9, 10, 7, 12, 8, 11, 10, 9});
  const std::string shards = dir.path() + "/shards";
  ShardIndex index = pack_shards(dir.path() + "/src", shards, test::pack_options(64, 0.01));
  ASSERT_EQ(index.shards.size(), 16u);  // one episode a shard
  NginxServer server(dir.path() + "/nginx", serve(shards));
  ASSERT_FALSE(server.url().empty());
  SamplerOptions so;
  so.seed = 5;
  so.shard_starts = index.starts();
  so.shard_window = 2;
  FrameSampler sampler(load_metadata(shards).episodes, so);
  const auto global = sampler.order(0);
  const int world = 8;
  uint64_t dataset = 0, owned_sum = 0, strided_sum = 0;
  for (const auto& f : index.shards) dataset += f.bytes;
  // the bytes rank r's store fetched for `frames`
  auto fetched = [&](const std::string& cache, const std::vector<int64_t>& frames) {
    RemoteShards remote(server.url(), quick(cache));
    const uint64_t meta = remote.stats().bytes_fetched;
    for (int64_t f : frames) remote.localize(remote.local_root() + "/" + index.shards[size_t(index.shard_of(f))].path);
    return remote.stats().bytes_fetched - meta;
  };
  for (int r = 0; r < world; ++r) {
    std::vector<int64_t> owned, strided;
    for (LoaderPosition at; at.epoch == 0;) {
      auto b = sampler.next_batch(at, 2 * world, r, world);
      owned.insert(owned.end(), b.frames.begin(), b.frames.end());
      at = b.next;
    }
    for (size_t p = size_t(r); p < global.size(); p += world) strided.push_back(global[p]);
    const uint64_t a = fetched(dir.path() + "/owned" + std::to_string(r), owned);
    const uint64_t b = fetched(dir.path() + "/strided" + std::to_string(r), strided);
    std::printf("rank %d of 8: fetched %.0f KB owned, %.0f KB strided (dataset %.0f KB)\n", r, a / 1e3, b / 1e3, dataset / 1e3);
    EXPECT_LE(a, dataset / 4) << "rank " << r;
    EXPECT_GE(b, dataset / 2) << "rank " << r;
    owned_sum += a, strided_sum += b;
  }
  std::printf("8 ranks together: %.2f x the dataset owned, %.2f x strided\n", double(owned_sum) / dataset, double(strided_sum) / dataset);
  EXPECT_EQ(owned_sum, dataset);  // every shard fetched once, by the rank that owns it
}

}  // namespace
}  // namespace ember::data
