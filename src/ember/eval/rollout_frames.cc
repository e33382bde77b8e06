#include "ember/eval/rollout_frames.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace ember::eval {

namespace {

constexpr int kMinRows = 256;

// 5x7 glyphs of the letters the labels use, one 5-bit row each (bit 4 the leftmost pixel)
struct Glyph {
  char c;
  uint8_t rows[7];
};
constexpr Glyph kGlyphs[] = {
    {'a', {0x00, 0x00, 0x0E, 0x01, 0x0F, 0x11, 0x0F}}, {'e', {0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E}},
    {'g', {0x00, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x0E}}, {'i', {0x04, 0x00, 0x0C, 0x04, 0x04, 0x04, 0x0E}},
    {'n', {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11}}, {'r', {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10}},
    {'s', {0x00, 0x00, 0x0F, 0x10, 0x0E, 0x01, 0x1E}}, {'t', {0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06}},
    {'v', {0x00, 0x00, 0x11, 0x11, 0x11, 0x0A, 0x04}}, {'w', {0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0A}},
};

int scale_of(int n) { return std::max(1, (kMinRows + n - 1) / n); }
int text_scale(int scale) { return std::max(2, scale); }
int band_rows(int scale) { return 10 * text_scale(scale); }  // 7 rows of glyph + margins, even

// draws `text` (letters of kGlyphs) at (x, y) with pixels of size s into img [h, w, 3]
void draw_text(std::vector<uint8_t>& img, int w, int x, int y, int s, std::string_view text) {
  for (char c : text) {
    const Glyph* g = std::find_if(std::begin(kGlyphs), std::end(kGlyphs), [c](const Glyph& k) { return k.c == c; });
    if (g != std::end(kGlyphs))
      for (int r = 0; r < 7; ++r)
        for (int col = 0; col < 5; ++col)
          if (g->rows[r] & (0x10 >> col))
            for (int dy = 0; dy < s; ++dy)
              for (int dx = 0; dx < s; ++dx) {
                const int px = x + col * s + dx, py = y + r * s + dy;
                if (px < 0 || px >= w) continue;
                std::memset(img.data() + (size_t(py) * w + px) * 3, 235, 3);
              }
    x += 6 * s;
  }
}

}  // namespace

FrameSize presented_size(int n) {
  const int s = scale_of(n);
  return {2 * n * s, n * s + band_rows(s)};
}

std::vector<uint8_t> present_frame(const std::vector<uint8_t>& frame, int n) {
  const int s = scale_of(n), band = band_rows(s), ts = text_scale(s);
  const FrameSize size = presented_size(n);
  std::vector<uint8_t> out(size_t(size.width) * size.height * 3, 24);
  for (int y = 0; y < n * s; ++y) {
    const uint8_t* src = frame.data() + size_t(y / s) * 2 * n * 3;
    uint8_t* dst = out.data() + size_t(band + y) * size.width * 3;
    for (int x = 0; x < size.width; ++x) std::memcpy(dst + size_t(x) * 3, src + size_t(x / s) * 3, 3);
  }
  draw_text(out, size.width, 2 * ts, (band - 7 * ts) / 2, ts, "agentview");
  draw_text(out, size.width, n * s + 2 * ts, (band - 7 * ts) / 2, ts, "wrist");
  return out;
}

}  // namespace ember::eval
