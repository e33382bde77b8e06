#include "ember/io/parquet/thrift.h"

#include <cstring>

#include "ember/core/error.h"

namespace ember::io::thrift {

namespace {
constexpr int kMaxDepth = 64;
}

Reader::Reader(const uint8_t* data, size_t size, std::string what)
    : data_(data), size_(size), what_(std::move(what)) {}

void Reader::corrupt(const std::string& why) const {
  fail_corrupt(what_ + ": corrupt Thrift at byte " + std::to_string(pos_) + ": " + why);
}

uint8_t Reader::byte() {
  if (pos_ >= size_) corrupt("unexpected end of data");
  return data_[pos_++];
}

uint64_t Reader::varint() {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    uint8_t b = byte();
    v |= uint64_t(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
  corrupt("varint longer than 10 bytes");
}

void Reader::enter() {
  if (++depth_ > kMaxDepth) corrupt("nesting deeper than " + std::to_string(kMaxDepth));
}

void Reader::begin_struct() {
  enter();
  last_id_.push_back(0);
}

void Reader::end_struct() {
  last_id_.pop_back();
  leave();
}

bool Reader::next_field(FieldHeader& f) {
  uint8_t b = byte();
  if (b == kStop) return false;
  uint8_t delta = b >> 4;
  f.type = b & 0x0f;
  if (delta != 0) f.id = int16_t(last_id_.back() + delta);
  else f.id = read_i16();
  if (f.type == kStop || f.type > kStruct) corrupt("unknown field type " + std::to_string(f.type));
  last_id_.back() = f.id;
  return true;
}

bool Reader::read_bool(const FieldHeader& f) {
  if (f.type == kTrue) return true;
  if (f.type == kFalse) return false;
  corrupt("field " + std::to_string(f.id) + " is not a bool");
}

bool Reader::read_bool_elem() { return byte() == kTrue; }
int8_t Reader::read_i8() { return int8_t(byte()); }

int16_t Reader::read_i16() { return int16_t(read_i64()); }
int32_t Reader::read_i32() { return int32_t(read_i64()); }
int64_t Reader::read_i64() {
  uint64_t u = varint();
  return int64_t(u >> 1) ^ -int64_t(u & 1);
}

double Reader::read_double() {
  if (size_ - pos_ < 8) corrupt("double runs past the end");
  double d;
  std::memcpy(&d, data_ + pos_, 8);
  pos_ += 8;
  return d;
}

std::string Reader::read_binary() {
  uint64_t n = varint();
  if (n > size_ - pos_) corrupt("binary of " + std::to_string(n) + " bytes runs past the end");
  std::string s(reinterpret_cast<const char*>(data_ + pos_), size_t(n));
  pos_ += size_t(n);
  return s;
}

ListHeader Reader::read_list_header() {
  uint8_t b = byte();
  ListHeader h;
  h.elem_type = b & 0x0f;
  uint64_t n = b >> 4;
  if (n == 15) n = varint();
  // every element takes at least one byte, except bools in headers (not in lists)
  if (n > size_ - pos_) corrupt("list of " + std::to_string(n) + " elements runs past the end");
  h.size = uint32_t(n);
  return h;
}

void Reader::skip(uint8_t type) {
  switch (type) {
    case kTrue: case kFalse: return;  // a field's bool lives in its header
    case kByte: byte(); return;
    case kI16: case kI32: case kI64: varint(); return;
    case kDouble: read_double(); return;
    case kBinary: {
      uint64_t n = varint();
      if (n > size_ - pos_) corrupt("binary runs past the end");
      pos_ += size_t(n);
      return;
    }
    case kList: case kSet: {
      enter();
      ListHeader h = read_list_header();
      for (uint32_t i = 0; i < h.size; ++i) {
        if (h.elem_type == kTrue || h.elem_type == kFalse) byte();
        else skip(h.elem_type);
      }
      leave();
      return;
    }
    case kMap: {
      enter();
      uint64_t n = varint();
      if (n > size_ - pos_) corrupt("map runs past the end");
      if (n > 0) {
        uint8_t kv = byte();
        for (uint64_t i = 0; i < n; ++i) {
          uint8_t kt = kv >> 4, vt = kv & 0x0f;
          if (kt == kTrue || kt == kFalse) byte(); else skip(kt);
          if (vt == kTrue || vt == kFalse) byte(); else skip(vt);
        }
      }
      leave();
      return;
    }
    case kStruct: {
      begin_struct();
      FieldHeader f;
      while (next_field(f)) skip(f.type);
      end_struct();
      return;
    }
    default: corrupt("cannot skip unknown type " + std::to_string(type));
  }
}

// ---- writer ----

void Writer::varint(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(uint8_t(v) | 0x80);
    v >>= 7;
  }
  out_.push_back(uint8_t(v));
}

void Writer::begin_struct() { last_id_.push_back(0); }

void Writer::end_struct() {
  out_.push_back(kStop);
  last_id_.pop_back();
}

void Writer::field_header(int16_t id, uint8_t type) {
  int delta = id - last_id_.back();
  if (delta > 0 && delta <= 15) {
    out_.push_back(uint8_t(delta << 4) | type);
  } else {
    out_.push_back(type);
    zigzag(id);
  }
  last_id_.back() = id;
}

void Writer::field_i8(int16_t id, int8_t v) { field_header(id, kByte); out_.push_back(uint8_t(v)); }
void Writer::field_i32(int16_t id, int32_t v) { field_header(id, kI32); zigzag(v); }
void Writer::field_i64(int16_t id, int64_t v) { field_header(id, kI64); zigzag(v); }
void Writer::field_bool(int16_t id, bool v) { field_header(id, v ? kTrue : kFalse); }
void Writer::field_binary(int16_t id, const std::string& v) { field_header(id, kBinary); binary(v); }
void Writer::field_struct_begin(int16_t id) { field_header(id, kStruct); begin_struct(); }

void Writer::field_list_begin(int16_t id, uint8_t elem_type, uint32_t size) {
  field_header(id, kList);
  if (size < 15) {
    out_.push_back(uint8_t(size << 4) | elem_type);
  } else {
    out_.push_back(0xf0 | elem_type);
    varint(size);
  }
}

void Writer::i32(int32_t v) { zigzag(v); }
void Writer::i64(int64_t v) { zigzag(v); }
void Writer::binary(const std::string& v) {
  varint(v.size());
  out_.insert(out_.end(), v.begin(), v.end());
}

}  // namespace ember::io::thrift
