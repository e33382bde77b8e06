#include "ember/io/video/video_cache.h"

#include <list>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ember::io {

// Idle decoders in least-recently-returned order, shared by the cache and its leases.
struct VideoCache::Lease::Pool {
  struct Entry {
    std::string path;
    std::unique_ptr<VideoDecoder> decoder;
  };

  explicit Pool(Options o) : options(std::move(o)) {}

  // Takes an idle decoder for path (any one, if several); null if none.
  std::unique_ptr<VideoDecoder> take(const std::string& path) {
    std::lock_guard lock(mu);
    auto it = by_path.find(path);
    if (it == by_path.end()) {
      ++stats.misses;
      return nullptr;
    }
    ++stats.hits;
    auto entry = it->second;
    by_path.erase(it);
    std::unique_ptr<VideoDecoder> d = std::move(entry->decoder);
    lru.erase(entry);
    return d;
  }

  // Keeps a returned decoder, closing the least recently returned ones beyond capacity.
  void put(std::string path, std::unique_ptr<VideoDecoder> decoder) {
    std::vector<std::unique_ptr<VideoDecoder>> evicted;  // closed after unlocking
    {
      std::lock_guard lock(mu);
      if (closed || options.capacity == 0) {
        evicted.push_back(std::move(decoder));
      } else {
        lru.push_front(Entry{path, std::move(decoder)});
        by_path.emplace(std::move(path), lru.begin());
        while (lru.size() > options.capacity) {
          auto oldest = std::prev(lru.end());
          erase_index(oldest);
          evicted.push_back(std::move(oldest->decoder));
          lru.erase(oldest);
          ++stats.evictions;
        }
      }
    }
  }

  // Removes one index entry pointing at e (a path may have several idle decoders).
  void erase_index(std::list<Entry>::iterator e) {
    auto [first, last] = by_path.equal_range(e->path);
    for (auto it = first; it != last; ++it) {
      if (it->second == e) {
        by_path.erase(it);
        return;
      }
    }
  }

  std::list<Entry> drain() {
    std::lock_guard lock(mu);
    by_path.clear();
    std::list<Entry> out;
    out.swap(lru);
    return out;
  }

  const Options options;
  mutable std::mutex mu;
  std::list<Entry> lru;  // front: most recently returned
  // path -> its idle entries
  std::unordered_multimap<std::string, std::list<Entry>::iterator> by_path;
  Stats stats;
  bool closed = false;
};

VideoCache::Lease::Lease(std::shared_ptr<Pool> pool, std::string path,
                         std::unique_ptr<VideoDecoder> decoder)
    : pool_(std::move(pool)), path_(std::move(path)), decoder_(std::move(decoder)) {}

VideoCache::Lease& VideoCache::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    give_back();
    pool_ = std::move(other.pool_);
    path_ = std::move(other.path_);
    decoder_ = std::move(other.decoder_);
  }
  return *this;
}

VideoCache::Lease::~Lease() { give_back(); }

void VideoCache::Lease::give_back() {
  if (pool_ && decoder_) pool_->put(std::move(path_), std::move(decoder_));
  pool_.reset();
  decoder_.reset();
}

VideoCache::VideoCache(Options options)
    : pool_(std::make_shared<Lease::Pool>(std::move(options))) {}

VideoCache::~VideoCache() {
  {
    std::lock_guard lock(pool_->mu);
    pool_->closed = true;
  }
  clear();
}

VideoCache::Lease VideoCache::get(const std::string& path) {
  std::unique_ptr<VideoDecoder> decoder = pool_->take(path);
  // opening is slow (file, demuxer, decoder): done outside the lock
  if (!decoder) decoder = std::make_unique<VideoDecoder>(path, pool_->options.decoder);
  return Lease(pool_, path, std::move(decoder));
}

VideoCache::Stats VideoCache::stats() const {
  std::lock_guard lock(pool_->mu);
  Stats s = pool_->stats;
  s.idle = pool_->lru.size();
  return s;
}

void VideoCache::clear() {
  pool_->drain();  // the decoders close as the returned list dies, outside the lock
}

}  // namespace ember::io
