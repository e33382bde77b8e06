#pragma once
// The block-wise FP8 quantisation on CUDA, one pass over the input: per 128x128 tile of x it
// finds the amax of each 1x128 row tile (and of each 128x1 column tile for the transposed copy,
// or of the whole block for weights), scales, rounds to e4m3 and writes q and, when asked, the
// transposed qt that the backward pass multiplies with. Layouts, scales and rounding are exactly
// those of ref::fp8_quantize (fp8_reference.h), which the GPU test holds it to byte for byte.
// The gated MLP's producers quantise in the same pass as they compute (fp8_gelu_mul_*): the
// bf16 result of gelu_tanh(gate) * up and of its gradients is never written.
// Built only when CMake finds nvcc (EMBER_CUDA_KERNELS).
//
// Two kernels give the same bytes: kVector (the default; registers, 16-byte loads, the transposed
// copy through shared memory in 16-byte stores) and kStaged, the first version (a float tile
// staged in shared memory, single-byte stores), kept so that a benchmark can time one against the
// other in one run (`ember bench fp8_linear`, `ember bench policy --fp8_kernels`).

#include <cstdint>

namespace ember::kernels {

enum class Fp8QuantKernel { kVector, kStaged };
// Which kernel the functions below launch from now on, process-wide (default kVector).
void set_fp8_quant_kernel(Fp8QuantKernel kernel);
Fp8QuantKernel fp8_quant_kernel();

// x: device pointer, [rows, cols] row-major and 16-byte aligned, dtype 0 float, 1 bfloat16,
// 2 half; cols a multiple of 128; padded_rows >= rows a multiple of 128 (block mode: = rows).
// q, scale, qt, scale_t: device outputs as ref::fp8_quantize lays them out (qt, scale_t null:
// no transposed copy; block mode ignores scale_t). stream: a cudaStream_t.
void fp8_quantize(const void* x, int dtype, int64_t rows, int64_t cols, int64_t padded_rows, bool blocks, void* q,
                  float* scale, void* qt, float* scale_t, void* stream);

// h = gelu_tanh(gate) * up in float32, quantised in rows mode with its transposed copy, as
// ref::fp8_quantize_gelu_mul. gate, up: [rows, hidden] with row stride ld elements (16-byte
// aligned rows; the two halves of one [rows, 2 hidden] product qualify), dtype as above; hidden a
// multiple of 128. q [padded, hidden], scale [hidden/128, padded], qt [hidden, padded],
// scale_t [padded/128, hidden].
void fp8_gelu_mul_quantize(const void* gate, const void* up, int64_t ld, int dtype, int64_t rows, int64_t hidden,
                           int64_t padded_rows, void* q, float* scale, void* qt, float* scale_t, void* stream);

// Its gradients from dh [rows, hidden] (contiguous): d_gate = dh * up * gelu_tanh'(gate) and
// d_up = dh * gelu_tanh(gate) in float32, quantised side by side as one [padded, 2 hidden]
// operand (d_gate in columns [0, hidden), d_up in [hidden, 2 hidden)), rows mode with the
// transposed copy, as ref::fp8_quantize_gelu_mul_backward: q [padded, 2 hidden],
// scale [2 hidden/128, padded], qt [2 hidden, padded], scale_t [padded/128, 2 hidden].
void fp8_gelu_mul_backward_quantize(const void* dh, const void* gate, const void* up, int64_t ld, int dtype,
                                    int64_t rows, int64_t hidden, int64_t padded_rows, void* q, float* scale, void* qt,
                                    float* scale_t, void* stream);

}  // namespace ember::kernels
