#include "ember/kernels/fp8_reference.h"

#include "ember/kernels/reference.h"

#include <c10/util/Float8_e4m3fn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace ember::kernels::ref {

float fp8_scale(float amax) { return std::max(amax / kE4m3Max, 0x1p-126f); }

uint8_t to_e4m3(float v) {
  // c10's conversion rounds to nearest even (and turns magnitudes past 464 into NaN: clamp first)
  return c10::Float8_e4m3fn(std::clamp(v, -kE4m3Max, kE4m3Max)).x;
}

float from_e4m3(uint8_t bits) { return float(c10::Float8_e4m3fn(bits, c10::Float8_e4m3fn::from_bits())); }

namespace {

// x[r][c], zero past the real rows
inline float at(const float* x, int64_t rows, int64_t cols, int64_t r, int64_t c) { return r < rows ? x[r * cols + c] : 0.f; }

void quantize_rows(const float* x, int64_t rows, int64_t cols, int64_t padded, uint8_t* q, float* scale) {
  for (int64_t r = 0; r < padded; ++r)
    for (int64_t j = 0; j < cols / kFp8Tile; ++j) {
      float amax = 0;
      for (int64_t c = j * kFp8Tile; c < (j + 1) * kFp8Tile; ++c) amax = std::max(amax, std::fabs(at(x, rows, cols, r, c)));
      const float s = fp8_scale(amax);
      scale[j * padded + r] = s;
      for (int64_t c = j * kFp8Tile; c < (j + 1) * kFp8Tile; ++c) q[r * cols + c] = to_e4m3(at(x, rows, cols, r, c) / s);
    }
}

void quantize_columns(const float* x, int64_t rows, int64_t cols, int64_t padded, uint8_t* qt, float* scale_t) {
  for (int64_t i = 0; i < padded / kFp8Tile; ++i)
    for (int64_t c = 0; c < cols; ++c) {
      float amax = 0;
      for (int64_t r = i * kFp8Tile; r < (i + 1) * kFp8Tile; ++r) amax = std::max(amax, std::fabs(at(x, rows, cols, r, c)));
      const float s = fp8_scale(amax);
      scale_t[i * cols + c] = s;
      for (int64_t r = i * kFp8Tile; r < (i + 1) * kFp8Tile; ++r) qt[c * padded + r] = to_e4m3(at(x, rows, cols, r, c) / s);
    }
}

void quantize_blocks(const float* x, int64_t rows, int64_t cols, uint8_t* q, float* scale, uint8_t* qt) {
  const int64_t bc = cols / kFp8Tile;
  for (int64_t i = 0; i < rows / kFp8Tile; ++i)
    for (int64_t j = 0; j < bc; ++j) {
      float amax = 0;
      for (int64_t r = i * kFp8Tile; r < (i + 1) * kFp8Tile; ++r)
        for (int64_t c = j * kFp8Tile; c < (j + 1) * kFp8Tile; ++c) amax = std::max(amax, std::fabs(x[r * cols + c]));
      const float s = fp8_scale(amax);
      scale[i * bc + j] = s;
      for (int64_t r = i * kFp8Tile; r < (i + 1) * kFp8Tile; ++r)
        for (int64_t c = j * kFp8Tile; c < (j + 1) * kFp8Tile; ++c) {
          const uint8_t b = to_e4m3(x[r * cols + c] / s);
          q[r * cols + c] = b;
          if (qt) qt[c * rows + r] = b;
        }
    }
}

}  // namespace

void fp8_quantize(const float* x, int64_t rows, int64_t cols, int64_t padded_rows, bool blocks, uint8_t* q, float* scale,
                  uint8_t* qt, float* scale_t) {
  if (blocks) return quantize_blocks(x, rows, cols, q, scale, qt);
  quantize_rows(x, rows, cols, padded_rows, q, scale);
  if (qt) quantize_columns(x, rows, cols, padded_rows, qt, scale_t);
}

void fp8_quantize_gelu_mul(const float* gate, const float* up, int64_t ld, int64_t rows, int64_t hidden,
                           int64_t padded_rows, uint8_t* q, float* scale, uint8_t* qt, float* scale_t) {
  std::vector<float> h(rows * hidden);
  for (int64_t r = 0; r < rows; ++r) gelu_tanh_mul_forward(gate + r * ld, up + r * ld, h.data() + r * hidden, hidden);
  fp8_quantize(h.data(), rows, hidden, padded_rows, false, q, scale, qt, scale_t);
}

void fp8_quantize_gelu_mul_backward(const float* dh, const float* gate, const float* up, int64_t ld, int64_t rows,
                                    int64_t hidden, int64_t padded_rows, uint8_t* q, float* scale, uint8_t* qt,
                                    float* scale_t) {
  std::vector<float> d(rows * 2 * hidden);  // [rows, 2 hidden]: d_gate | d_up
  for (int64_t r = 0; r < rows; ++r) {
    float* row = d.data() + r * 2 * hidden;
    gelu_tanh_mul_backward(dh + r * hidden, gate + r * ld, up + r * ld, row, row + hidden, hidden);
  }
  fp8_quantize(d.data(), rows, 2 * hidden, padded_rows, false, q, scale, qt, scale_t);
}

}  // namespace ember::kernels::ref
