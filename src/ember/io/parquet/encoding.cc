#include "ember/io/parquet/encoding.h"

#include <algorithm>
#include <cstring>

#include "ember/core/error.h"

namespace ember::io::parquet {

int bit_width_for(uint32_t max_value) {
  int w = 0;
  while (max_value > 0) {
    ++w;
    max_value >>= 1;
  }
  return w;
}

namespace {

bool read_uleb(const uint8_t* data, size_t size, size_t& pos, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= size) return false;
    uint8_t b = data[pos++];
    v |= uint64_t(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

// Reads up to 8 bytes at byte offset `at` without reading past size.
inline uint64_t load64(const uint8_t* data, size_t size, size_t at) {
  uint64_t v = 0;
  if (at + 8 <= size) {
    std::memcpy(&v, data + at, 8);
  } else if (at < size) {
    std::memcpy(&v, data + at, size - at);
  }
  return v;
}

}  // namespace

namespace {

// unpack_bits for any integer output type, so levels decode straight into int16.
template <class T>
void unpack_bits_to(const uint8_t* data, size_t size, uint64_t bit_pos, int width, T* out, size_t n) {
  if (width == 0) {
    std::memset(out, 0, n * sizeof(T));
    return;
  }
  const uint64_t mask = (uint64_t(1) << width) - 1;
  size_t i = 0;
  // byte-aligned narrow values (levels): whole bytes at a time
  if ((bit_pos & 7) == 0 && (width == 1 || width == 2 || width == 4 || width == 8)) {
    const int per_byte = 8 / width;
    const uint8_t* p = data + (bit_pos >> 3);
    const size_t bytes = std::min<size_t>(n / size_t(per_byte), size - size_t(bit_pos >> 3));
    for (size_t b = 0; b < bytes; ++b) {
      uint32_t v = p[b];
      for (int k = 0; k < per_byte; ++k) out[i++] = T((v >> (k * width)) & uint32_t(mask));
    }
    bit_pos += uint64_t(bytes) * 8;
  }
  // while a whole 8-byte load stays inside the buffer, load without bounds checks
  // (a value starts at most 7 bits into its byte and is at most 32 bits wide: one load holds it)
  if (size >= 8) {
    const uint64_t safe_bits = uint64_t(size - 8) * 8;
    for (; i < n && bit_pos <= safe_bits; ++i, bit_pos += uint64_t(width)) {
      uint64_t word;
      std::memcpy(&word, data + (bit_pos >> 3), 8);
      out[i] = T((word >> (bit_pos & 7)) & mask);
    }
  }
  for (; i < n; ++i, bit_pos += uint64_t(width)) {
    size_t byte = size_t(bit_pos >> 3);
    int shift = int(bit_pos & 7);
    uint64_t word = load64(data, size, byte) >> shift;
    if (shift + width > 64) word |= load64(data, size, byte + 8) << (64 - shift);
    out[i] = T(word & mask);
  }
}

}  // namespace

void unpack_bits(const uint8_t* data, size_t size, uint64_t bit_pos, int width, uint32_t* out, size_t n) {
  unpack_bits_to(data, size, bit_pos, width, out, n);
}

// ---- RleDecoder ----

RleDecoder::RleDecoder(const uint8_t* data, size_t size, int bit_width, const std::string* what)
    : data_(data), size_(size), bit_width_(bit_width), what_(what) {
  if (bit_width < 0 || bit_width > 32) corrupt("bit width " + std::to_string(bit_width) + " is over 32");
}

void RleDecoder::corrupt(const std::string& why) const {
  fail_corrupt(*what_ + ": " + why);
}

bool RleDecoder::next_run() {
  uint64_t header;
  if (!read_uleb(data_, size_, pos_, header)) return false;
  if (header & 1) {
    uint64_t groups = header >> 1;
    if (groups == 0) corrupt("empty bit-packed run");
    uint64_t bytes = groups * uint64_t(bit_width_);
    uint64_t avail = size_ - pos_;
    // the last run may be cut short: keep only the values whose bits are present
    if (bytes > avail) bytes = avail;
    lit_left_ = bit_width_ == 0 ? groups * 8 : (bytes * 8) / uint64_t(bit_width_);
    if (lit_left_ > groups * 8) lit_left_ = groups * 8;
    lit_bit_pos_ = uint64_t(pos_) * 8;
    pos_ += size_t(bytes);
  } else {
    rle_left_ = header >> 1;
    if (rle_left_ == 0) corrupt("empty RLE run");
    size_t vbytes = size_t((bit_width_ + 7) / 8);
    if (size_ - pos_ < vbytes) corrupt("RLE run value runs past the end of the data");
    uint32_t v = 0;
    for (size_t i = 0; i < vbytes; ++i) v |= uint32_t(data_[pos_ + i]) << (8 * i);
    pos_ += vbytes;
    if (bit_width_ < 32 && (v >> bit_width_) != 0) corrupt("RLE run value wider than its bit width");
    rle_value_ = v;
  }
  return true;
}

template <class T>
void RleDecoder::decode(T* out, size_t n) {
  while (n > 0) {
    if (rle_left_ > 0) {
      size_t k = size_t(std::min<uint64_t>(rle_left_, n));
      T v = T(rle_value_);
      for (size_t i = 0; i < k; ++i) out[i] = v;
      out += k;
      n -= k;
      rle_left_ -= k;
    } else if (lit_left_ > 0) {
      size_t k = size_t(std::min<uint64_t>(lit_left_, uint64_t(n)));
      unpack_bits_to(data_, size_, lit_bit_pos_, bit_width_, out, k);
      lit_bit_pos_ += uint64_t(k) * uint64_t(bit_width_);
      out += k;
      n -= k;
      lit_left_ -= k;
    } else if (!next_run()) {
      corrupt("RLE/bit-packed data ends " + std::to_string(n) + " values early");
    }
  }
}

template void RleDecoder::decode<int16_t>(int16_t*, size_t);
template void RleDecoder::decode<uint32_t>(uint32_t*, size_t);
template void RleDecoder::decode<uint8_t>(uint8_t*, size_t);

// ---- RleEncoder ----

void RleEncoder::varint(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(uint8_t(v) | 0x80);
    v >>= 7;
  }
  out_.push_back(uint8_t(v));
}

void RleEncoder::put_rle(uint32_t value, size_t count) {
  varint(uint64_t(count) << 1);
  for (int i = 0; i < (bit_width_ + 7) / 8; ++i) out_.push_back(uint8_t(value >> (8 * i)));
}

void RleEncoder::flush_literals(size_t begin, size_t end) {
  if (begin == end) return;
  size_t groups = (end - begin + 7) / 8;
  varint((uint64_t(groups) << 1) | 1);
  size_t start = out_.size();
  out_.resize(start + groups * size_t(bit_width_), 0);
  uint64_t bit = 0;
  for (size_t i = begin; i < end; ++i, bit += uint64_t(bit_width_)) {
    uint64_t v = values_[i];
    for (int b = 0; b < bit_width_; ++b)
      if (v >> b & 1) out_[start + size_t((bit + uint64_t(b)) >> 3)] |= uint8_t(1u << ((bit + uint64_t(b)) & 7));
  }
}

std::vector<uint8_t> RleEncoder::finish() {
  out_.clear();
  size_t lit_begin = 0, i = 0, n = values_.size();
  while (i < n) {
    size_t j = i;
    while (j < n && values_[j] == values_[i]) ++j;
    size_t run = j - i;
    size_t pending = i - lit_begin;
    if (run >= 8 + (8 - pending % 8) % 8) {
      // top the literals up to a multiple of 8 from the run, then RLE the rest of it
      size_t fill = (8 - pending % 8) % 8;
      flush_literals(lit_begin, i + fill);
      put_rle(values_[i], run - fill);
      lit_begin = j;
    }
    i = j;
  }
  flush_literals(lit_begin, n);
  values_.clear();
  return std::move(out_);
}

// ---- BYTE_STREAM_SPLIT ----

void decode_byte_stream_split(const uint8_t* data, size_t size, size_t width, size_t n, uint8_t* out,
                              const std::string& what) {
  if (size < width * n)
    fail_corrupt(what + ": BYTE_STREAM_SPLIT data holds " + std::to_string(size) + " bytes, expected " +
                 std::to_string(width * n));
  for (size_t b = 0; b < width; ++b) {
    const uint8_t* stream = data + b * (size / width);
    for (size_t i = 0; i < n; ++i) out[i * width + b] = stream[i];
  }
}

// ---- DELTA_BINARY_PACKED ----

namespace {

struct DeltaHeader {
  uint64_t block_size = 0, miniblocks = 0, total = 0, first_zz = 0;
  size_t size = 0;  // bytes
};

[[noreturn]] void delta_corrupt(const std::string& what, const std::string& why) {
  fail_corrupt(what + ": DELTA_BINARY_PACKED " + why);
}

// Reads and checks the header, which must announce n values.
DeltaHeader read_delta_header(const uint8_t* data, size_t size, size_t n, const std::string& what) {
  DeltaHeader h;
  size_t pos = 0;
  if (!read_uleb(data, size, pos, h.block_size) || !read_uleb(data, size, pos, h.miniblocks) ||
      !read_uleb(data, size, pos, h.total) || !read_uleb(data, size, pos, h.first_zz))
    delta_corrupt(what, "header runs past the end");
  if (h.block_size == 0 || h.block_size % 128 != 0 || h.miniblocks == 0 || h.block_size % h.miniblocks != 0 ||
      (h.block_size / h.miniblocks) % 32 != 0 || h.block_size > (1u << 20))
    delta_corrupt(what, "header has block size " + std::to_string(h.block_size) + " with " +
                            std::to_string(h.miniblocks) + " miniblocks");
  if (h.total != n)
    delta_corrupt(what, "holds " + std::to_string(h.total) + " values, the page needs " + std::to_string(n));
  h.size = pos;
  return h;
}

}  // namespace

void check_delta_binary_packed_count(const uint8_t* data, size_t size, size_t n, const std::string& what) {
  read_delta_header(data, size, n, what);
}

size_t decode_delta_binary_packed(const uint8_t* data, size_t size, size_t width, size_t n, uint8_t* out,
                                  const std::string& what) {
  auto bad = [&](const std::string& why) { delta_corrupt(what, why); };
  const DeltaHeader hdr = read_delta_header(data, size, n, what);
  size_t pos = hdr.size;
  const uint64_t miniblocks = hdr.miniblocks, total = hdr.total, first_zz = hdr.first_zz;
  uint64_t per_mini = hdr.block_size / miniblocks;
  uint64_t value = (first_zz >> 1) ^ (~(first_zz & 1) + 1);
  auto put = [&](size_t i, uint64_t v) {
    if (width == 4) { uint32_t x = uint32_t(v); std::memcpy(out + i * 4, &x, 4); }
    else std::memcpy(out + i * 8, &v, 8);
  };
  if (n > 0) put(0, value);
  size_t done = n > 0 ? 1 : 0;
  std::vector<uint8_t> widths(static_cast<size_t>(miniblocks));
  while (done < total) {
    uint64_t mdz;
    if (!read_uleb(data, size, pos, mdz)) bad("block header runs past the end");
    uint64_t min_delta = (mdz >> 1) ^ (~(mdz & 1) + 1);
    if (size - pos < miniblocks) bad("miniblock widths run past the end");
    for (uint64_t m = 0; m < miniblocks; ++m) widths[m] = data[pos++];
    for (uint64_t m = 0; m < miniblocks && done < total; ++m) {
      int w = widths[m];
      if (w > int(width * 8)) bad("miniblock bit width " + std::to_string(w) + " is too wide");
      uint64_t bytes = per_mini * uint64_t(w) / 8;
      uint64_t count = std::min<uint64_t>(per_mini, total - done);
      // the last miniblock may be cut short; only the values needed must be present
      uint64_t need = (count * uint64_t(w) + 7) / 8;
      if (size - pos < need) bad("miniblock runs past the end");
      for (uint64_t i = 0; i < count; ++i) {
        uint64_t bitpos = uint64_t(pos) * 8 + i * uint64_t(w), d = 0;
        for (int b = 0; b < w; ++b, ++bitpos) d |= uint64_t(data[bitpos >> 3] >> (bitpos & 7) & 1) << b;
        value += min_delta + d;
        if (done < n) put(done, value);
        ++done;
      }
      pos += size_t(std::min<uint64_t>(bytes, size - pos));
    }
  }
  return pos;
}

}  // namespace ember::io::parquet
