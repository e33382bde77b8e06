// What the remote-shard tests share (data_remote_test, data_s3_test): the stripes dataset's
// shards packed in a temporary directory, nginx options serving them, a store that retries
// quickly, and the check that a store reads every sample as the local shards do.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "ember/data/dataset.h"
#include "ember/data/shard_pack.h"
#include "ember/data/shard_store.h"
#include "ember/io/http.h"
#include "nginx_server.h"
#include "shard_fixture.h"

// skips, saying why, where ember has no libcurl or nginx is not installed
#define REQUIRE_NGINX()                                                                                       \
  if (!::ember::io::http_support_available()) GTEST_SKIP() << "skipped: ember built without libcurl (libcurl4-openssl-dev)"; \
  if (!::ember::test::NginxServer::available()) GTEST_SKIP() << "skipped: nginx not installed (apt-get install nginx-light)"

namespace ember::test {

// Shards of the stripes dataset (4 shards of 50-70 KB), packed once per test.
struct Served {
  TempDir dir;
  std::string shards;
  data::ShardIndex index;
  Served() {
    write_stripes_dataset(dir.path() + "/src", {23, 40, 17, 31});
    shards = dir.path() + "/shards";
    index = data::pack_shards(dir.path() + "/src", shards, pack_options(64, 0.05));
  }
  // a copy of the shards with shard k changed by `damage`
  std::string damaged(int k, const std::function<void(const std::string&)>& damage) {
    std::string copy = dir.path() + "/damaged";
    std::filesystem::remove_all(copy);
    std::filesystem::copy(shards, copy, std::filesystem::copy_options::recursive);
    damage(copy + "/" + index.shards[size_t(k)].path);
    return copy;
  }
};

inline NginxServer::Options serve(const std::string& root, const std::string& limit_rate = "", const std::string& fail_prefix = "") {
  NginxServer::Options o;
  o.root = root;
  o.limit_rate = limit_rate;
  o.fail_prefix = fail_prefix;
  return o;
}

inline data::RemoteOptions quick(const std::string& cache) {
  data::RemoteOptions o;
  o.cache_dir = cache;
  o.retries = 3;
  o.backoff_s = 0.05;
  o.http.low_speed_s = 2;
  return o;
}

// Every frame read through the remote store shows its own index and the local shards' numbers.
inline void expect_same_samples(data::RemoteShards& remote, const std::string& local) {
  data::DatasetOptions o = shard_reading();
  o.localize = [&](const std::string& p) { return remote.localize(p); };
  data::Dataset far(data::load_metadata(remote.local_root()), o), near(local, shard_reading());
  ASSERT_EQ(far.size(), near.size());
  for (int64_t i = 0; i < far.size(); ++i) {
    data::Item a = far.get(i), b = near.get(i);
    EXPECT_EQ(stripe_index(a.images.at("observation.images.top").front()), i);
    EXPECT_EQ(a.images.at("observation.images.wrist").front().rgb, b.images.at("observation.images.wrist").front().rgb) << i;
    EXPECT_EQ(a.values.at("action").data, b.values.at("action").data) << i;
  }
}

}  // namespace ember::test
