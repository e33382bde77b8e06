// Parquet's value and level encodings: the RLE / bit-packed hybrid (levels, dictionary
// indices, booleans), PLAIN, BYTE_STREAM_SPLIT and DELTA_BINARY_PACKED. Decoders check every
// length against their buffer and throw Error(kCorruption) with the caller's `what`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember::io::parquet {

// Bits needed to store values 0..max_value.
int bit_width_for(uint32_t max_value);

class RleDecoder {
 public:
  RleDecoder(const uint8_t* data, size_t size, int bit_width, const std::string* what);
  // Decodes exactly n values into out; throws if the data runs out first.
  template <class T>
  void decode(T* out, size_t n);

 private:
  bool next_run();
  [[noreturn]] void corrupt(const std::string& why) const;

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  int bit_width_;
  const std::string* what_;
  // current run
  uint64_t rle_left_ = 0;
  uint32_t rle_value_ = 0;
  uint64_t lit_left_ = 0;
  uint64_t lit_bit_pos_ = 0;  // bit position in data_ of the next literal
};

// Encodes values with the hybrid: runs of 8 or more equal values as RLE, the rest bit-packed.
class RleEncoder {
 public:
  explicit RleEncoder(int bit_width) : bit_width_(bit_width) {}
  void put(uint32_t v) { values_.push_back(v); }
  // The encoded bytes (without any length prefix).
  std::vector<uint8_t> finish();

 private:
  void flush_literals(size_t begin, size_t end);
  void put_rle(uint32_t value, size_t count);
  void varint(uint64_t v);

  int bit_width_;
  std::vector<uint32_t> values_;
  std::vector<uint8_t> out_;
};

// Unpacks n bit-packed values (LSB first) of width bits starting at bit `bit_pos` of data.
// The caller guarantees the bits lie inside [data, data + size).
void unpack_bits(const uint8_t* data, size_t size, uint64_t bit_pos, int width, uint32_t* out, size_t n);

// BYTE_STREAM_SPLIT: n values of `width` bytes stored as `width` streams of n bytes.
void decode_byte_stream_split(const uint8_t* data, size_t size, size_t width, size_t n, uint8_t* out,
                              const std::string& what);

// DELTA_BINARY_PACKED for int32 (width 4) or int64 (width 8): decodes n values into out and
// returns the number of bytes consumed. Throws kCorruption unless the header holds n values.
size_t decode_delta_binary_packed(const uint8_t* data, size_t size, size_t width, size_t n, uint8_t* out,
                                  const std::string& what);
// Checks only the header: that it is whole and holds n values (kCorruption otherwise). Lets
// the caller verify a page's value count before it allocates room for the values.
void check_delta_binary_packed_count(const uint8_t* data, size_t size, size_t n, const std::string& what);

}  // namespace ember::io::parquet
