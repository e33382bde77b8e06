// A bounded pool of open video decoders keyed by path, so that the loader does not reopen a
// file (and restart its decoder) for every sample, while memory stays bounded however many
// files a dataset has.
//
// get(path) checks a decoder out: the Lease gives one thread exclusive use of it and hands it
// back when destroyed. Several threads asking for the same file get a decoder each (a v3.0
// file holds many episodes that are decoded in parallel). At most `capacity` decoders wait
// idle in the pool; returning one more evicts the least recently returned. Decoders checked
// out are not counted: their number is bounded by the threads that hold them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ember/io/video/video_decoder.h"

namespace ember::io {

struct VideoCacheOptions {
  size_t capacity = 64;    // idle decoders kept; 0 closes every decoder when returned
  DecoderOptions decoder;  // how decoders are opened
};

class VideoCache {
 public:
  using Options = VideoCacheOptions;

  struct Stats {
    int64_t hits = 0;       // get() served by an idle decoder
    int64_t misses = 0;     // get() that opened the file
    int64_t evictions = 0;  // idle decoders closed to stay within capacity
    size_t idle = 0;        // decoders waiting in the pool now
  };

  // Exclusive use of one decoder; movable, returns the decoder to the pool on destruction.
  // A lease may outlive its cache (the decoder is then closed).
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&&) noexcept = default;
    Lease& operator=(Lease&& other) noexcept;
    ~Lease();
    VideoDecoder& operator*() const { return *decoder_; }
    VideoDecoder* operator->() const { return decoder_.get(); }
    VideoDecoder* get() const { return decoder_.get(); }
    explicit operator bool() const { return decoder_ != nullptr; }

   private:
    friend class VideoCache;
    struct Pool;
    Lease(std::shared_ptr<Pool> pool, std::string path, std::unique_ptr<VideoDecoder> decoder);
    void give_back();

    std::shared_ptr<Pool> pool_;
    std::string path_;
    std::unique_ptr<VideoDecoder> decoder_;
  };

  explicit VideoCache(Options options = {});
  ~VideoCache();
  VideoCache(const VideoCache&) = delete;
  VideoCache& operator=(const VideoCache&) = delete;

  // An idle decoder for path, or a newly opened one. Thread-safe. Throws what VideoDecoder's
  // constructor throws (kNotFound, kCorruption, kUnsupported naming the file).
  Lease get(const std::string& path);
  Stats stats() const;
  // Closes every idle decoder.
  void clear();

 private:
  std::shared_ptr<Lease::Pool> pool_;
};

}  // namespace ember::io
