#include "ember/io/png.h"

#include <png.h>

#include <cstring>

#include "ember/core/error.h"

namespace ember::io {

Image decode_png(const uint8_t* data, size_t size, const std::string& what) {
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, data, size))
    fail_corrupt(what + ": not a valid PNG (" + img.message + ")");
  img.format = PNG_FORMAT_RGB;
  if (img.width == 0 || img.height == 0 || uint64_t(img.width) * img.height > (uint64_t(1) << 28)) {
    png_image_free(&img);
    fail_corrupt(what + ": PNG of " + std::to_string(img.width) + "x" + std::to_string(img.height) + " pixels is out of range");
  }
  Image out;
  out.width = int(img.width);
  out.height = int(img.height);
  out.rgb.resize(size_t(PNG_IMAGE_SIZE(img)));
  if (!png_image_finish_read(&img, nullptr, out.rgb.data(), 0, nullptr)) {
    std::string msg = img.message;
    png_image_free(&img);
    fail_corrupt(what + ": PNG decode failed (" + msg + ")");
  }
  return out;
}

std::vector<uint8_t> encode_png(const Image& image) {
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  img.width = png_uint_32(image.width);
  img.height = png_uint_32(image.height);
  img.format = PNG_FORMAT_RGB;
  // one pass into a buffer of the largest size the image can take (a first call without a
  // buffer would compress it once just to learn the size)
  std::vector<uint8_t> out(PNG_IMAGE_PNG_SIZE_MAX(img));
  png_alloc_size_t size = out.size();
  if (!png_image_write_to_memory(&img, out.data(), &size, 0, image.rgb.data(), 0, nullptr))
    fail(ErrorKind::kInternal, std::string("PNG encode failed: ") + img.message);
  out.resize(size);
  return out;
}

}  // namespace ember::io
