#include "ember/io/resize.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ember/core/error.h"

namespace ember::io {

namespace {

// For each output coordinate: the two source indices and the weight of the second, with
// torch's rule for align_corners=false: src = (dst + 0.5) * in / out - 0.5, clamped at 0.
struct Taps {
  std::vector<int> lo, hi;
  std::vector<float> w;
};

Taps taps(int in, int out) {
  Taps t;
  const float scale = float(in) / float(out);
  for (int d = 0; d < out; ++d) {
    float s = std::max(0.0f, (float(d) + 0.5f) * scale - 0.5f);
    int lo = std::min(int(s), in - 1);
    t.lo.push_back(lo);
    t.hi.push_back(std::min(lo + 1, in - 1));
    t.w.push_back(s - float(lo));
  }
  return t;
}

}  // namespace

Image resize_bilinear(const Image& image, int width, int height) {
  if (width <= 0 || height <= 0) fail(ErrorKind::kInvalidArgument, "resize_bilinear: target size must be positive");
  if (image.width == width && image.height == height) return image;
  const Taps x = taps(image.width, width), y = taps(image.height, height);
  Image out;
  out.width = width;
  out.height = height;
  out.rgb.resize(size_t(width) * size_t(height) * 3);
  auto at = [&](int r, int c, int ch) { return float(image.rgb[(size_t(r) * size_t(image.width) + size_t(c)) * 3 + size_t(ch)]); };
  for (int r = 0; r < height; ++r) {
    const float wy = y.w[size_t(r)];
    for (int c = 0; c < width; ++c) {
      const float wx = x.w[size_t(c)];
      for (int ch = 0; ch < 3; ++ch) {
        float top = at(y.lo[size_t(r)], x.lo[size_t(c)], ch) * (1 - wx) + at(y.lo[size_t(r)], x.hi[size_t(c)], ch) * wx;
        float bottom = at(y.hi[size_t(r)], x.lo[size_t(c)], ch) * (1 - wx) + at(y.hi[size_t(r)], x.hi[size_t(c)], ch) * wx;
        float v = top * (1 - wy) + bottom * wy;
        out.rgb[(size_t(r) * size_t(width) + size_t(c)) * 3 + size_t(ch)] = uint8_t(std::clamp(std::lround(v), 0L, 255L));
      }
    }
  }
  return out;
}

}  // namespace ember::io
