// Shards read by training are what the index says they are, and a misbehaving server cannot
// stall, crash or mislead a run (issue 42). Remote: a loopback server that never answers, sends
// without end, announces more than it sends or trickles (tests/data/hostile_http.h); a cache
// holding another dataset's metadata or a killed run's temporary files. Local: a byte flipped,
// a shard replaced by another pack of itself.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "ember/core/error.h"
#include "ember/core/json_file.h"
#include "ember/data/dataset.h"
#include "ember/data/shard_pack.h"
#include "ember/data/shard_store.h"
#include "ember/io/http.h"
#include "hostile_http.h"
#include "remote_fixture.h"

namespace ember::data {
namespace {

namespace fs = std::filesystem;
using test::HostileHttp;
using test::Served;
using test::TempDir;

#define REQUIRE_CURL() \
  if (!::ember::io::http_support_available()) GTEST_SKIP() << "skipped: ember built without libcurl (libcurl4-openssl-dev)"

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

RemoteOptions hostile_options(const std::string& cache) {
  RemoteOptions o = test::quick(cache);
  o.retries = 5;
  o.http.low_speed_bytes = 1024;
  o.http.low_speed_s = 1;
  o.deadline_s = 3;
  return o;
}

std::vector<std::string> temporaries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) out.push_back(e.path().string());
  return out;
}

// shard 0 fails within the piece deadline (plus one attempt's grace), the other shards at once
// naming the first failure, and nothing is left in the cache
void expect_bounded_failure(HostileHttp::Mode mode, const std::string& reason) {
  Served s;
  HostileHttp server(s.shards, mode, "/data/");
  ASSERT_FALSE(server.url().empty());
  const std::string cache = s.dir.path() + "/cache";
  RemoteShards remote(server.url(), hostile_options(cache));
  auto t = std::chrono::steady_clock::now();
  std::string first = test::error_of([&] { remote.localize(remote.local_root() + "/" + s.index.shards[0].path); }, ErrorKind::kIO);
  const double took = seconds_since(t);
  EXPECT_LT(took, 3 + 2.5) << first;
  EXPECT_NE(first.find(s.index.shards[0].path), std::string::npos) << first;
  EXPECT_NE(first.find(reason), std::string::npos) << first;
  std::printf("first failure after %.1f s: %s\n", took, first.c_str());
  t = std::chrono::steady_clock::now();
  for (size_t k = 1; k < s.index.shards.size(); ++k) {
    std::string msg = test::error_of([&] { remote.localize(remote.local_root() + "/" + s.index.shards[k].path); }, ErrorKind::kIO);
    EXPECT_NE(msg.find("shard " + std::to_string(k)), std::string::npos) << msg;
    EXPECT_NE(msg.find("stopped answering"), std::string::npos) << msg;
  }
  EXPECT_LT(seconds_since(t), 0.5);
  EXPECT_TRUE(temporaries(cache).empty());
}

TEST(ShardGuard, ServerThatNeverAnswersFailsWithinTheDeadlineThenAtOnce) {
  REQUIRE_CURL();
  expect_bounded_failure(HostileHttp::Mode::kSilent, "the deadline for one piece");
}

TEST(ShardGuard, ServerThatAnnouncesMoreThanItSendsFailsWithinTheDeadline) {
  REQUIRE_CURL();
  expect_bounded_failure(HostileHttp::Mode::kShortBody, "the deadline for one piece");
}

TEST(ShardGuard, TrickleIsAbandonedWithinTheDeadline) {
  REQUIRE_CURL();
  expect_bounded_failure(HostileHttp::Mode::kTrickle, "the deadline for one piece");
}

TEST(ShardGuard, EndlessShardResponseIsCutAtThePiecesLength) {
  REQUIRE_CURL();
  expect_bounded_failure(HostileHttp::Mode::kEndless, "longer than the");
}

TEST(ShardGuard, EndlessIndexIsCutAndNamed) {
  REQUIRE_CURL();
  Served s;
  HostileHttp server(s.shards, HostileHttp::Mode::kEndless, "/meta/shards.json");
  ASSERT_FALSE(server.url().empty());
  RemoteOptions o = hostile_options(s.dir.path() + "/cache");
  o.retries = 1;
  std::string msg = test::error_of([&] { RemoteShards(server.url(), o); }, ErrorKind::kIO);
  EXPECT_NE(msg.find("meta/shards.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("longer than the"), std::string::npos) << msg;
}

// a served index that lists no metadata: the cache's meta/ from another dataset must not be read
TEST(ShardGuard, CachedMetadataTheIndexDoesNotListIsRemoved) {
  REQUIRE_CURL();
  Served s;
  ShardIndex bare = s.index;
  bare.meta.clear();
  {
    std::ofstream f(s.shards + "/meta/shards.json", std::ios::trunc);
    f << bare.to_json().dump();
  }
  const std::string cache = s.dir.path() + "/cache";
  fs::create_directories(cache + "/meta");
  std::ofstream(cache + "/meta/tasks.parquet") << "another dataset's tasks";
  std::ofstream(cache + "/meta/info.json") << "{}";
  std::ofstream(cache + "/meta/shards.json.tmp-999999999") << "a dead run's";
  HostileHttp server(s.shards, HostileHttp::Mode::kGood, "/none");
  ASSERT_FALSE(server.url().empty());
  RemoteShards remote(server.url(), hostile_options(cache));
  EXPECT_FALSE(fs::exists(cache + "/meta/tasks.parquet"));
  EXPECT_FALSE(fs::exists(cache + "/meta/info.json"));
  EXPECT_TRUE(temporaries(cache).empty());
  // so opening it says what is missing instead of reading another dataset's metadata
  EXPECT_THROW(load_metadata(remote.local_root()), Error);
}

TEST(ShardGuard, ServerReadsTheSameSamplesWhenItBehaves) {
  REQUIRE_CURL();
  Served s;
  HostileHttp server(s.shards, HostileHttp::Mode::kGood, "/none");
  ASSERT_FALSE(server.url().empty());
  RemoteShards remote(server.url(), hostile_options(s.dir.path() + "/cache"));
  test::expect_same_samples(remote, s.shards);
}

// every sample of a local shard dataset read through LocalShards; throws what the first bad read throws
void read_all(const std::string& root) {
  LocalShards local(root, read_shard_index(root));
  DatasetOptions o = test::shard_reading();
  o.localize = [&](const std::string& p) { return local.localize(p); };
  Dataset d(load_metadata(root), o);
  for (int64_t i = 0; i < d.size(); ++i) d.get(i);
}

TEST(ShardGuard, LocalShardsAreCheckedOnceWhenFirstRead) {
  Served s;
  read_all(s.shards);  // intact: reads
  LocalShards local(s.shards, s.index);
  const std::string p = s.shards + "/" + s.index.shards[1].path;
  EXPECT_EQ(local.localize(p), p);
  EXPECT_EQ(local.localize(p), p);
  EXPECT_EQ(local.shards_checked(), 1);
}

TEST(ShardGuard, LocalShardWithAFlippedByteIsNamed) {
  Served s;
  const std::string root = s.damaged(2, [&](const std::string& p) {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(std::streamoff(s.index.shards[2].bytes / 2));
    char c;
    f.get(c);
    f.seekp(std::streamoff(s.index.shards[2].bytes / 2));
    f.put(char(c ^ 0x04));
  });
  std::string msg = test::error_of([&] { read_all(root); }, ErrorKind::kCorruption);
  EXPECT_NE(msg.find(s.index.shards[2].path), std::string::npos) << msg;
  EXPECT_NE(msg.find("piece"), std::string::npos) << msg;
  EXPECT_NE(msg.find("CRC-32"), std::string::npos) << msg;
}

TEST(ShardGuard, LocalShardReplacedByAnotherPackIsNamed) {
  Served s;
  const std::string other = s.dir.path() + "/other";
  pack_shards(s.dir.path() + "/src", other, test::pack_options(48, 0.05));
  const std::string root = s.damaged(0, [&](const std::string& p) {
    fs::copy_file(other + "/" + s.index.shards[0].path, p, fs::copy_options::overwrite_existing);
  });
  std::string msg = test::error_of([&] { read_all(root); }, ErrorKind::kCorruption);
  EXPECT_NE(msg.find(s.index.shards[0].path), std::string::npos) << msg;
}

}  // namespace
}  // namespace ember::data
