#include "ember/data/shard_store.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <signal.h>
#include <unistd.h>

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

// meta/shards.json lists every file with its size: an index larger than this is not one
constexpr uint64_t kMaxIndexBytes = uint64_t(256) << 20;

// Removes what the cache at root must not be read from: files under meta/ the index does not
// list (another dataset's, or an older index's), and "<name>.tmp-<pid>" files of processes
// that are gone (a run killed while fetching).
void clean_cache(const std::string& root, const ShardIndex& index) {
  std::set<std::string> listed{"meta/shards.json"};
  for (const ShardFile& m : index.meta) listed.insert(m.path);
  std::error_code ec;
  std::vector<fs::path> remove;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string rel = fs::path(it->path()).lexically_relative(root).string(), name = it->path().filename().string();
    const size_t tmp = name.rfind(".tmp-");
    if (tmp != std::string::npos) {
      char* end = nullptr;
      const long pid = std::strtol(name.c_str() + tmp + 5, &end, 10);
      if (end && *end == '\0' && pid > 0 && pid != long(::getpid()) && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH) remove.push_back(it->path());
      continue;
    }
    if (rel.rfind("meta/", 0) == 0 && !listed.count(rel)) remove.push_back(it->path());
  }
  for (const auto& p : remove) fs::remove(p, ec);
}

// A piece that failed because the server did not answer in time, cut its transfers or sent
// without end (no HTTP status came back): the other shards would wait as long
struct Unresponsive : Error {
  using Error::Error;
};

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
  options_.http.cancel = &cancel_;
  // the index (its own check is that it parses and agrees with itself), then the metadata
  const std::string index_rel = "meta/shards.json";
  io::HttpResult r;
  io::HttpOptions index_http = options_.http;
  index_http.max_bytes = kMaxIndexBytes;
  for (int attempt = 0; attempt < std::max(1, options_.retries); ++attempt) {
    if (attempt) std::this_thread::sleep_for(std::chrono::duration<double>(options_.backoff_s * double(1 << std::min(attempt - 1, 16))));
    r = io::http_get(url_ + "/" + index_rel, std::nullopt, index_http);
    if (r.ok() || !r.transient()) break;
  }
  if (!r.ok()) fail(ErrorKind::kIO, url_ + "/" + index_rel + ": cannot fetch the shard index (" + r.describe() + ")");
  index_ = ShardIndex::from_json(parse_json(std::string_view(reinterpret_cast<const char*>(r.body.data()), r.body.size()), url_ + "/" + index_rel),
                                 url_ + "/" + index_rel);
  clean_cache(root_, index_);
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
  cancel_ = true;
  cv_.notify_all();
  prefetcher_.join();
}

std::vector<uint8_t> RemoteShards::fetch_piece(const std::string& rel, uint64_t offset, uint64_t bytes, uint32_t crc) {
  const std::string where = url_ + "/" + rel;
  std::string last;
  int attempts = 0;
  bool out_of_time = false, no_status = false;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  for (int attempt = 0; attempt < std::max(1, options_.retries); ++attempt) {
    const double wait = attempt ? options_.backoff_s * double(1 << std::min(attempt - 1, 16)) : 0.0;
    if (attempt && elapsed() + wait >= options_.deadline_s) {
      out_of_time = true;
      break;
    }
    ++attempts;
    if (attempt) {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.retries;
    }
    if (attempt) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    io::HttpOptions http = options_.http;
    http.timeout_s = std::max(1.0, std::min(http.timeout_s, options_.deadline_s - elapsed()));
    io::HttpResult r = io::http_get(where, std::make_pair(offset, bytes), http);
    if (cancel_) fail(ErrorKind::kIO, where + ": abandoned (the reader is closing)");
    no_status = !r.ok() && (!r.error.empty() || r.status == 0);
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
  const std::string tries = std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts");
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.0f", elapsed());
  const std::string message = where + ": bytes [" + std::to_string(offset) + ", " + std::to_string(offset + bytes) + "): " + last +
                              (out_of_time ? " (" + tries + " in " + seconds + " s: the deadline for one piece)"
                               : attempts < std::max(1, options_.retries) ? " (" + tries + ": an answer that asking again cannot change)"
                                                                          : " (after " + tries + ")");
  if (no_status || out_of_time) throw Unresponsive(ErrorKind::kIO, message);
  fail(ErrorKind::kIO, message);
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
  if (!first_failure_.empty()) {
    e.state = State::kFailed;
    e.error = "shard " + std::to_string(shard) + " of " + std::to_string(index_.shards.size()) + ": not fetched, the server stopped answering for an earlier one: " + first_failure_;
    return;
  }
  e.state = State::kFetching;
  lock.unlock();
  std::string error;
  bool unresponsive = false;
  try {
    fetch_shard(shard);
  } catch (const Unresponsive& err) {
    error = err.what(), unresponsive = true;
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
    if (unresponsive && first_failure_.empty()) first_failure_ = e.error;
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
      if (!first_failure_.empty()) return false;  // the server stopped answering: nothing more is fetched
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

namespace {

// Throws kCorruption when the file at path differs from f: its size, a piece's CRC-32, or (a
// file without pieces) the whole file's CRC-32.
void check_local_file(const std::string& path, const ShardFile& f) {
  auto src = open_file(path);
  if (src->size() != f.bytes)
    fail(ErrorKind::kCorruption, path + ": " + std::to_string(src->size()) + " bytes, meta/shards.json says " + std::to_string(f.bytes) +
                                     " (a damaged or replaced shard: ember data check lists it)");
  if (f.pieces.empty()) {
    if (io::file_checksum(path).crc32 != f.crc32)
      fail(ErrorKind::kCorruption, path + ": CRC-32 differs from meta/shards.json's (damaged bytes: ember data check lists them)");
    return;
  }
  for (size_t i = 0; i < f.pieces.size(); ++i) {
    const ShardPiece& p = f.pieces[i];
    auto bytes = src->read(p.offset, p.bytes);
    if (io::crc32_update(0, bytes.data(), bytes.size()) != p.crc32)
      fail(ErrorKind::kCorruption, path + ": piece " + std::to_string(i) + " (bytes [" + std::to_string(p.offset) + ", " +
                                       std::to_string(p.offset + p.bytes) + ")): CRC-32 differs from meta/shards.json's (damaged bytes: ember data check lists them)");
  }
}

}  // namespace

LocalShards::LocalShards(std::string root, ShardIndex index) : root_(std::move(root)), index_(std::move(index)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  absolute_root_ = fs::absolute(root_).lexically_normal().string();
  for (const ShardFile& m : index_.meta) check_local_file(root_ + "/" + m.path, m);
  for (size_t i = 0; i < index_.shards.size(); ++i) shard_by_path_[index_.shards[i].path] = int(i);
  state_.assign(index_.shards.size(), State::kUnchecked);
  error_.resize(index_.shards.size());
}

std::string LocalShards::localize(const std::string& path) {
  const std::string rel = fs::absolute(path).lexically_normal().lexically_relative(absolute_root_).string();
  auto it = shard_by_path_.find(rel);
  if (it == shard_by_path_.end()) return path;  // not a shard (the dataset's own checks apply)
  const size_t k = size_t(it->second);
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return state_[k] != State::kChecking; });
  if (state_[k] == State::kUnchecked) {
    state_[k] = State::kChecking;
    lock.unlock();
    std::string error;
    try {
      check_local_file(path, index_.shards[k]);
    } catch (const Error& e) {
      error = e.what();
    }
    lock.lock();
    state_[k] = error.empty() ? State::kGood : State::kBad;
    error_[k] = error;
    ++checked_;
    cv_.notify_all();
  }
  if (state_[k] == State::kBad) fail(ErrorKind::kCorruption, error_[k]);
  return path;
}

int64_t LocalShards::shards_checked() const {
  std::lock_guard<std::mutex> lock(mu_);
  return checked_;
}

}  // namespace ember::data
