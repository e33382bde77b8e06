// Remote training shards (http://, https://, s3://): the index and metadata fetched into a
// local cache directory at open, the shards (data files) fetched on demand and ahead of the
// training order, in ranged GETs of the index's pieces, each piece's CRC-32 checked. A failed
// or damaged piece is fetched again with exponential back-off; after `retries` attempts the
// error names the shard, the piece and the last reason; a piece gets at most `deadline_s` over
// all its attempts. Once a shard has failed because the server stopped answering (timeouts, cut or
// endless transfers: no HTTP status), every shard not yet fetched fails at once with that first
// error (a run needs them all: it should not wait a deadline per shard to learn that the server
// is gone). No byte that failed its check is ever read: a shard is renamed into the cache
// only when all its pieces passed; no response may hold more than the index says it should.
//
// The cache is checked against the index at open: shards by size and CRC-32, metadata fetched
// again, any other file under meta/ removed (another dataset's, or one the index no longer
// lists), temporary files of processes that are gone removed.
//
// The cache holds shards up to cache_bytes (least recently used first out; a shard in use by
// an open reader stays readable after eviction, its file being mapped). Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ember/data/shard_index.h"
#include "ember/io/http.h"

namespace ember::data {

struct RemoteOptions {
  std::string cache_dir;         // empty: ~/.cache/ember/shards/<hash of the URL>
  uint64_t cache_bytes = uint64_t(8) << 30;
  int retries = 5;               // attempts per piece
  double backoff_s = 0.1;        // first wait; doubled after each failed attempt
  double deadline_s = 60;        // one piece's attempts together
  io::HttpOptions http;
};

struct RemoteStats {
  int64_t shards_fetched = 0, pieces_fetched = 0, retries = 0, evicted = 0;
  uint64_t bytes_fetched = 0;
};

class RemoteShards {
 public:
  // Fetches meta/shards.json and the metadata it lists (each checked against its CRC-32).
  // Throws kIO naming the URL and file when they cannot be fetched.
  RemoteShards(std::string url, RemoteOptions options);
  ~RemoteShards();  // stops prefetching (a transfer under way is abandoned)

  const std::string& url() const { return url_; }
  // The local directory that mirrors the remote root (load_metadata reads it).
  const std::string& local_root() const { return root_; }
  const ShardIndex& index() const { return index_; }

  // The local path of data file `path` (under local_root()), fetched first if it is not in
  // the cache; blocks until it is. Throws kIO naming the shard after the retries, kNotFound
  // for a path the index does not list.
  std::string localize(const std::string& path);
  // Shards (indices into index().shards) wanted next, in order: fetched in the background,
  // replacing the previous list; at most as many as fit in half the cache.
  void prefetch(const std::vector<int>& shards);
  RemoteStats stats() const;

 private:
  enum class State { kAbsent, kFetching, kPresent, kFailed };
  struct Entry {
    State state = State::kAbsent;
    uint64_t last_use = 0;
    std::string error;
  };
  void fetch_shard(int shard);            // into the cache (no lock held)
  void ensure(int shard, std::unique_lock<std::mutex>& lock);
  void evict(int keep);                   // with the lock held
  void prefetch_loop();
  std::vector<uint8_t> fetch_piece(const std::string& rel, uint64_t offset, uint64_t bytes, uint32_t crc);

  std::string url_, root_;
  RemoteOptions options_;
  ShardIndex index_;
  std::map<std::string, int> shard_by_path_;  // relative path -> shard

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Entry> entries_;
  uint64_t clock_ = 0, cached_bytes_ = 0;
  std::vector<int> wanted_;
  bool stop_ = false;
  std::string first_failure_;  // the first shard's error: later shards fail at once with it
  std::atomic<bool> cancel_{false};
  RemoteStats stats_;
  std::thread prefetcher_;
};

// Training shards in a local directory: each data file is checked against the index (its size,
// then every piece's CRC-32) the first time this process opens it, as the remote reader checks
// what it fetches; the metadata files the index lists are checked at construction. A damaged
// file throws kCorruption naming it, the piece and what differs (`ember data check` finds the
// same). Thread-safe; a file is read once for its check.
class LocalShards {
 public:
  LocalShards(std::string root, ShardIndex index);
  // `path` (root/rel, as the dataset opens it), checked first if it is a shard not yet checked.
  std::string localize(const std::string& path);
  int64_t shards_checked() const;

 private:
  enum class State { kUnchecked, kChecking, kGood, kBad };
  std::string root_, absolute_root_;
  ShardIndex index_;
  std::map<std::string, int> shard_by_path_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<State> state_;
  std::vector<std::string> error_;
  int64_t checked_ = 0;
};

}  // namespace ember::data
