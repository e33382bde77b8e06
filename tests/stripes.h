// The fixtures' frames (and the tests' own) show a frame index as 12 vertical stripes across
// the top half, white for 1 and black for 0, most significant bit at the left. Reading it
// back tells whether a reader returned the right frame, whatever the codec's loss.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

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

}  // namespace ember::test
