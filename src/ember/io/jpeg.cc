#include "ember/io/jpeg.h"

#include <turbojpeg.h>

#include <memory>

#include "ember/core/error.h"

namespace ember::io {

namespace {

struct Handle {
  explicit Handle(int kind) : h(tjInitCompress()) {
    if (kind == 1) {
      tjDestroy(h);
      h = tjInitDecompress();
    }
    if (!h) fail(ErrorKind::kIO, std::string("TurboJPEG: cannot start: ") + tjGetErrorStr2(nullptr));
  }
  ~Handle() { tjDestroy(h); }
  tjhandle h;
};

}  // namespace

std::vector<uint8_t> encode_jpeg(const Image& image, int quality) {
  if (quality < 1 || quality > 100) fail(ErrorKind::kInvalidArgument, "JPEG quality must be in 1..100, got " + std::to_string(quality));
  if (image.width <= 0 || image.height <= 0 || image.rgb.size() != size_t(image.width) * size_t(image.height) * 3)
    fail(ErrorKind::kInvalidArgument, "encode_jpeg: image of " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                                          " holds " + std::to_string(image.rgb.size()) + " bytes");
  Handle c(0);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  if (tjCompress2(c.h, image.rgb.data(), image.width, 0, image.height, TJPF_RGB, &out, &size, TJSAMP_420, quality,
                  TJFLAG_ACCURATEDCT) != 0) {
    std::string msg = tjGetErrorStr2(c.h);
    tjFree(out);
    fail(ErrorKind::kIO, "JPEG encode failed: " + msg);
  }
  std::vector<uint8_t> bytes(out, out + size);
  tjFree(out);
  return bytes;
}

Image decode_jpeg(const uint8_t* data, size_t size, const std::string& what) {
  Handle d(1);
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(d.h, data, (unsigned long)size, &w, &h, &subsamp, &colorspace) != 0)
    fail_corrupt(what + ": not a valid JPEG (" + tjGetErrorStr2(d.h) + ")");
  if (w <= 0 || h <= 0 || uint64_t(w) * uint64_t(h) > (uint64_t(1) << 28))
    fail_corrupt(what + ": JPEG of " + std::to_string(w) + "x" + std::to_string(h) + " pixels is out of range");
  Image out;
  out.width = w;
  out.height = h;
  out.rgb.resize(size_t(w) * size_t(h) * 3);
  // TJFLAG_STOPONWARNING: a truncated or damaged stream is an error, never a grey-filled image
  if (tjDecompress2(d.h, data, (unsigned long)size, out.rgb.data(), w, 0, h, TJPF_RGB, TJFLAG_STOPONWARNING) != 0)
    fail_corrupt(what + ": JPEG decode failed (" + tjGetErrorStr2(d.h) + ")");
  return out;
}

bool is_jpeg(const uint8_t* data, size_t size) { return size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF; }

Image decode_image(const uint8_t* data, size_t size, const std::string& what) {
  if (is_jpeg(data, size)) return decode_jpeg(data, size, what);
  if (size >= 4 && data[0] == 0x89 && data[1] == 'P' && data[2] == 'N' && data[3] == 'G') return decode_png(data, size, what);
  fail_corrupt(what + ": image bytes are neither PNG nor JPEG");
}

}  // namespace ember::io
