// JPEG decoding on the GPU with nvJPEG (the CUDA toolkit's libnvjpeg), for the training shards'
// frames, and the choice between it and libjpeg-turbo (jpeg.h). libnvjpeg and the CUDA runtime
// are loaded at run time (dlopen), so ember builds and runs without them: NvJpeg::open() says
// why it cannot open (no library, no CUDA device) and the CPU path stays. Batches go through
// nvjpegDecodeBatched, on the hardware JPEG engines where the GPU has them (A100, H100, H200:
// NVJPEG_BACKEND_HARDWARE), else nvJPEG's default backend; the pixels come back to host memory
// as io::Image, like decode_jpeg's. It decodes on the CUDA device current when it opened (a
// rank's), whichever thread calls it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ember/io/png.h"

namespace ember::io {

class NvJpeg {
 public:
  // The library: $EMBER_NVJPEG (a path), else libnvjpeg.so.13/.12/.so on the loader's path or
  // in /usr/local/cuda/lib64. nullptr, with the reason in *why, when it or a device is missing.
  static std::unique_ptr<NvJpeg> open(std::string* why);
  ~NvJpeg();
  NvJpeg(const NvJpeg&) = delete;
  NvJpeg& operator=(const NvJpeg&) = delete;

  // Decodes JPEGs to 8-bit RGB in one batched call (split into batches of at most max_batch).
  // kCorruption naming `what` and the image's position for bytes nvJPEG refuses. Thread-safe
  // (callers take turns: one decoder state).
  std::vector<Image> decode(const std::vector<std::span<const uint8_t>>& jpegs, const std::string& what);
  // "hardware" or "default": the backend the handle was created with
  const std::string& backend() const;
  // the library file that was loaded
  const std::string& library() const;

  struct Impl;

 private:
  explicit NvJpeg(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Which decoder the loader uses for JPEG frames (--dataset.jpeg_decoder).
enum class JpegDecoder { kCpu, kNvjpeg };

// The default, chosen by measurement on the H200 host at pi05's shapes (224x224 frames, batch
// 32; bench/results/shards_h200_2026-12-01b.md): libjpeg-turbo on the loader's threads.
inline constexpr const char* kDefaultJpegDecoder = "cpu";

// The decoder for flag value `name` ("cpu" or "nvjpeg"), given whether nvJPEG opened (and why
// not). kInvalidArgument naming --dataset.jpeg_decoder for another value, or for "nvjpeg" where
// it did not open (with the reason).
JpegDecoder choose_jpeg_decoder(const std::string& name, bool nvjpeg_opened, const std::string& why_not);

}  // namespace ember::io
