// PNG images (LeRobot's `image` features store PNG bytes in the Parquet table) via libpng.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember::io {

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // [height, width, 3], row-major
};

// Decodes any PNG (grey, palette, alpha, 16-bit) to 8-bit RGB. Throws kCorruption naming `what`.
Image decode_png(const uint8_t* data, size_t size, const std::string& what);
// Encodes 8-bit RGB as PNG bytes.
std::vector<uint8_t> encode_png(const Image& image);

}  // namespace ember::io
