#pragma once
// CPU reference of the block-wise FP8 quantisation (fp8_quant.h): e4m3 values with float32 scales,
// the recipe of DeepSeek-V3's FP8 training. The same arithmetic as the CUDA kernel, one element
// at a time, so the GPU test can ask for identical bytes.
//
// A tile's scale is s = max(amax / 448, 2^-126) (448: e4m3's largest finite value; the floor keeps
// an all-zero tile finite: its values stay 0), and each value x becomes e4m3(clamp(x / s, +-448)),
// rounded to nearest even. Dequantised, a value is q * s. Inputs must be finite.
//
// Tiles (cols must be a multiple of 128; rows of activations are zero-padded to padded_rows, a
// multiple of 128, so that the transposed copy's 128-row tiles are whole):
//   rows mode (activations): q [padded_rows, cols], a scale per 1x128 tile of a row, stored
//     [cols/128, padded_rows] (the [padded_rows, cols/128] column-major layout _scaled_mm takes);
//     optionally qt [cols, padded_rows] = x^T quantised per 128x1 tile of x (1x128 tiles of x^T),
//     scales stored [padded_rows/128, cols].
//   block mode (weights): one scale per 128x128 block, stored [rows/128, cols/128]; q [rows, cols]
//     and qt [cols, rows] (the transposed copy, same blocks and scales); rows a multiple of 128.
// Pure functions of their arguments: thread-safe.
#include <cstdint>

namespace ember::kernels::ref {

constexpr int kFp8Tile = 128;
constexpr float kE4m3Max = 448.f;

// The scale of a tile whose largest magnitude is amax.
float fp8_scale(float amax);
// e4m3 bits of clamp(v, +-448), rounded to nearest even.
uint8_t to_e4m3(float v);
// The value of e4m3 bits.
float from_e4m3(uint8_t bits);

// x [rows, cols] row-major. q, scale: see above; qt, scale_t: null to skip the transposed copy
// (rows mode) or null in block mode (which fills qt when given and ignores scale_t).
void fp8_quantize(const float* x, int64_t rows, int64_t cols, int64_t padded_rows, bool blocks, uint8_t* q, float* scale,
                  uint8_t* qt, float* scale_t);

// The gated MLP's producers, quantised as they compute (fp8_quant.h's fp8_gelu_mul_*): float32
// values from reference.h's gelu_tanh_mul_forward / _backward, then rows mode with the transposed
// copy as above. gate, up: [rows, hidden] with row stride ld; hidden a multiple of 128.
//   h = gelu_tanh(gate) * up: q [padded, hidden], scale [hidden/128, padded], qt [hidden, padded],
//   scale_t [padded/128, hidden].
void fp8_quantize_gelu_mul(const float* gate, const float* up, int64_t ld, int64_t rows, int64_t hidden,
                           int64_t padded_rows, uint8_t* q, float* scale, uint8_t* qt, float* scale_t);
//   from dh [rows, hidden] (contiguous): [d_gate | d_up] side by side as one [rows, 2 hidden]
//   operand: q [padded, 2 hidden], scale [2 hidden/128, padded], qt [2 hidden, padded],
//   scale_t [padded/128, 2 hidden].
void fp8_quantize_gelu_mul_backward(const float* dh, const float* gate, const float* up, int64_t ld, int64_t rows,
                                    int64_t hidden, int64_t padded_rows, uint8_t* q, float* scale, uint8_t* qt,
                                    float* scale_t);

}  // namespace ember::kernels::ref
