// JPEG images through libjpeg-turbo's TurboJPEG API: ember's training shards store camera
// frames as JPEG bytes in LeRobot image cells (docs/shards.md), where LeRobot stores PNG.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/io/png.h"

namespace ember::io {

// Encodes 8-bit RGB as baseline JPEG, 4:2:0 chroma, at quality 1..100 (kInvalidArgument
// outside). Thread-safe (one TurboJPEG handle per call).
std::vector<uint8_t> encode_jpeg(const Image& image, int quality);
// Decodes a JPEG to 8-bit RGB. Throws kCorruption naming `what` (truncated or damaged bytes,
// sizes out of range). Thread-safe.
Image decode_jpeg(const uint8_t* data, size_t size, const std::string& what);

// Whether the bytes start as a JPEG (FF D8 FF) or a PNG (89 'P' 'N' 'G') does.
bool is_jpeg(const uint8_t* data, size_t size);
// PNG or JPEG, told apart by their first bytes; kCorruption naming `what` for anything else.
Image decode_image(const uint8_t* data, size_t size, const std::string& what);

}  // namespace ember::io
