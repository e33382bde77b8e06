// The fixtures' frames (and the tests' own) show a frame index as 12 vertical stripes across
// the top half, white for 1 and black for 0, most significant bit at the left. Reading it
// back tells whether a reader returned the right frame, whatever the codec's loss.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "ember/io/png.h"

namespace ember::test {

// The index shown by an RGB frame ([height, width, 3]): the mean of each stripe's centre in
// the top half against 128.
inline int64_t stripe_index(const uint8_t* rgb, int width, int height) {
  double stripe_w = width / 12.0;
  int y0 = height / 8, y1 = 3 * height / 8;
  int64_t index = 0;
  for (int b = 0; b < 12; ++b) {
    int x0 = static_cast<int>(std::ceil((b + 0.3) * stripe_w));
    int x1 = static_cast<int>(std::floor((b + 0.7) * stripe_w));
    double sum = 0;
    int n = 0;
    for (int y = y0; y < y1; ++y) {
      for (int x = x0; x <= x1; ++x) {
        for (int c = 0; c < 3; ++c) sum += rgb[(static_cast<size_t>(y) * width + x) * 3 + c];
        n += 3;
      }
    }
    index = index * 2 + (sum / n > 128 ? 1 : 0);
  }
  return index;
}

// Any frame type with width, height and rgb (io::Frame, io::Image).
template <class F>
int64_t stripe_index(const F& f) {
  return stripe_index(f.rgb.data(), f.width, f.height);
}

// Frame `index` drawn that way: its index as 12 stripes (bit 11 left) in the top half, a
// texture that moves with the index below (so that codecs have real work to do).
inline io::Image draw_stripes(int64_t index, int h, int w) {
  io::Image im;
  im.height = h;
  im.width = w;
  im.rgb.resize(size_t(h) * w * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &im.rgb[(size_t(y) * w + x) * 3];
      if (y < h / 2) {
        p[0] = p[1] = p[2] = (index >> (11 - x * 12 / w)) & 1 ? 255 : 0;
      } else {
        p[0] = uint8_t(x * 2 + index * 3);
        p[1] = uint8_t(y * 3 + index);
        p[2] = uint8_t(128 + 100 * std::sin((x + y + 2 * index) * 0.1));
      }
    }
  return im;
}

}  // namespace ember::test
