#include "ember/data/shard_store.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/core/json_file.h"
#include "ember/io/checksum.h"

namespace ember::data {

namespace fs = std::filesystem;

namespace {

std::string default_cache_dir(const std::string& url) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the URL: one directory per remote root
  for (char c : url) h = (h ^ uint8_t(c)) * 1099511628211ull;
  const char* home = std::getenv("HOME");
  char name[32];
  std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(h));
  return std::string(home ? home : "/tmp") + "/.cache/ember/shards/" + name;
}

void write_whole(const std::string& path, const std::vector<uint8_t>& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  AtomicFile f(path);
  f.write(bytes.data(), bytes.size());
  f.commit();
}

}  // namespace

RemoteShards::RemoteShards(std::string url, RemoteOptions options) : url_(std::move(url)), options_(std::move(options)) {
  while (!url_.empty() && url_.back() == '/') url_.pop_back();
  root_ = options_.cache_dir.empty() ? default_cache_dir(url_) : options_.cache_dir;
  std::error_code ec;
  fs::create_directories(root_ + "/meta", ec);
  if (ec || !fs::is_directory(root_ + "/meta", ec))
    fail(ErrorKind::kInvalidArgument, "--dataset.cache_dir " + root_ + ": cannot make the shard cache there (" +
                                          (ec ? ec.message() : std::string("a file is in the way")) + ")");
  // the index (its own check is that it parses and agrees with itself), then the metadata
  const std::string index_rel = "meta/shards.json";
  io::HttpResult r;
  for (int attempt = 0; attempt < std::max(1, options_.retries); ++attempt) {
    if (attempt) std::this_thread::sleep_for(std::chrono::duration<double>(options_.backoff_s * double(1 << std::min(attempt - 1, 16))));
    r = io::http_get(url_ + "/" + index_rel, std::nullopt, options_.http);
    if (r.ok() || !r.transient()) break;
  }
  if (!r.ok()) fail(ErrorKind::kIO, url_ + "/" + index_rel + ": cannot fetch the shard index (" + r.describe() + ")");
  index_ = ShardIndex::from_json(parse_json(std::string_view(reinterpret_cast<const char*>(r.body.data()), r.body.size()), url_ + "/" + index_rel),
                                 url_ + "/" + index_rel);
  for (const ShardFile& m : index_.meta)
    write_whole(root_ + "/" + m.path, m.bytes ? fetch_piece(m.path, 0, m.bytes, m.crc32) : std::vector<uint8_t>{});
  write_whole(root_ + "/" + index_rel, r.body);
  entries_.resize(index_.shards.size());
  for (size_t i = 0; i < index_.shards.size(); ++i) {
    shard_by_path_[index_.shards[i].path] = int(i);
    // a shard left by an earlier run is used only if it still matches the index
    const std::string local = root_ + "/" + index_.shards[i].path;
    std::error_code ec;
    if (fs::is_regular_file(local, ec) && fs::file_size(local, ec) == index_.shards[i].bytes &&
        io::file_checksum(local).crc32 == index_.shards[i].crc32) {
      entries_[i].state = State::kPresent;
      cached_bytes_ += index_.shards[i].bytes;
    }
  }
  prefetcher_ = std::thread([this] { prefetch_loop(); });
}

RemoteShards::~RemoteShards() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  prefetcher_.join();
}

std::vector<uint8_t> RemoteShards::fetch_piece(const std::string& rel, uint64_t offset, uint64_t bytes, uint32_t crc) {
  const std::string where = url_ + "/" + rel;
  std::string last;
  int attempts = 0;
  for (int attempt = 0; attempt < std::max(1, options_.retries); ++attempt) {
    ++attempts;
    if (attempt) {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.retries;
    }
    if (attempt) std::this_thread::sleep_for(std::chrono::duration<double>(options_.backoff_s * double(1 << std::min(attempt - 1, 16))));
    io::HttpResult r = io::http_get(where, std::make_pair(offset, bytes), options_.http);
    if (!r.ok()) {
      last = r.describe();
      if (!r.transient()) break;  // 404, 403: asking again will not help
      continue;
    }
    if (r.body.size() != bytes) {
      last = "got " + std::to_string(r.body.size()) + " bytes, expected " + std::to_string(bytes);
      continue;
    }
    if (io::crc32_update(0, r.body.data(), r.body.size()) != crc) {
      last = "CRC-32 mismatch (damaged bytes)";
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.pieces_fetched;
    stats_.bytes_fetched += bytes;
    return std::move(r.body);
  }
  fail(ErrorKind::kIO, where + ": bytes [" + std::to_string(offset) + ", " + std::to_string(offset + bytes) + "): " + last +
                           (attempts < std::max(1, options_.retries)
                                ? " (" + std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts") +
                                      ": an answer that asking again cannot change)"
                                : " (after " + std::to_string(attempts) + " attempts)"));
}

void RemoteShards::fetch_shard(int shard) {
  const ShardFile& f = index_.shards[size_t(shard)];
  const std::string local = root_ + "/" + f.path;
  fs::create_directories(fs::path(local).parent_path());
  AtomicFile out(local);  // renamed into place only once every piece passed its check
  for (const ShardPiece& p : f.pieces) {
    auto bytes = fetch_piece(f.path, p.offset, p.bytes, p.crc32);
    out.write(bytes.data(), bytes.size());
  }
  out.commit();
}

void RemoteShards::evict(int keep) {
  while (cached_bytes_ > options_.cache_bytes) {
    int oldest = -1;
    for (size_t i = 0; i < entries_.size(); ++i)
      if (int(i) != keep && entries_[i].state == State::kPresent && (oldest < 0 || entries_[i].last_use < entries_[size_t(oldest)].last_use))
        oldest = int(i);
    if (oldest < 0) return;  // only the shard just asked for: it stays, over the bound
    std::error_code ec;
    fs::remove(root_ + "/" + index_.shards[size_t(oldest)].path, ec);
    entries_[size_t(oldest)].state = State::kAbsent;
    cached_bytes_ -= index_.shards[size_t(oldest)].bytes;
    ++stats_.evicted;
  }
}

void RemoteShards::ensure(int shard, std::unique_lock<std::mutex>& lock) {
  Entry& e = entries_[size_t(shard)];
  cv_.wait(lock, [&] { return e.state != State::kFetching; });
  if (e.state == State::kPresent || e.state == State::kFailed) return;
  e.state = State::kFetching;
  lock.unlock();
  std::string error;
  try {
    fetch_shard(shard);
  } catch (const Error& err) {
    error = err.what();
  }
  lock.lock();
  if (error.empty()) {
    e.state = State::kPresent;
    e.last_use = ++clock_;
    cached_bytes_ += index_.shards[size_t(shard)].bytes;
    ++stats_.shards_fetched;
    evict(shard);
  } else {
    e.state = State::kFailed;
    e.error = "shard " + std::to_string(shard) + " of " + std::to_string(index_.shards.size()) + ": " + error;
  }
  cv_.notify_all();
}

std::string RemoteShards::localize(const std::string& path) {
  std::string rel = fs::path(path).lexically_relative(root_).string();
  auto it = shard_by_path_.find(rel);
  if (it == shard_by_path_.end()) fail(ErrorKind::kNotFound, path + ": not a shard of " + url_ + " (meta/shards.json)");
  std::unique_lock<std::mutex> lock(mu_);
  ensure(it->second, lock);
  Entry& e = entries_[size_t(it->second)];
  if (e.state == State::kFailed) fail(ErrorKind::kIO, e.error);
  e.last_use = ++clock_;
  return root_ + "/" + rel;
}

void RemoteShards::prefetch(const std::vector<int>& shards) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    wanted_.clear();
    uint64_t budget = 0;
    for (int s : shards) {
      if (s < 0 || size_t(s) >= entries_.size()) continue;
      budget += index_.shards[size_t(s)].bytes;
      if (!wanted_.empty() && budget > options_.cache_bytes / 2) break;
      wanted_.push_back(s);
    }
  }
  cv_.notify_all();
}

void RemoteShards::prefetch_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    int next = -1;
    cv_.wait(lock, [&] {
      if (stop_) return true;
      for (int s : wanted_) {
        if (entries_[size_t(s)].state == State::kAbsent) {
          next = s;
          return true;
        }
      }
      return false;
    });
    if (stop_) return;
    ensure(next, lock);  // a failure stays recorded for localize() to report
  }
}

RemoteStats RemoteShards::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace ember::data
