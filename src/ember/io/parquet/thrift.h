// Thrift's compact protocol, the encoding of every Parquet footer and page header.
// Only what Parquet uses: structs, lists, binary, bool, i8/i16/i32/i64, double; maps and sets
// are skipped. The reader never reads past its buffer and limits nesting depth, so corrupt or
// hostile bytes raise Error(kCorruption) rather than crash or hang.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember::io::thrift {

enum Type : uint8_t {
  kStop = 0, kTrue = 1, kFalse = 2, kByte = 3, kI16 = 4, kI32 = 5, kI64 = 6, kDouble = 7,
  kBinary = 8, kList = 9, kSet = 10, kMap = 11, kStruct = 12,
};

struct FieldHeader {
  int16_t id = 0;
  uint8_t type = kStop;
};

struct ListHeader {
  uint8_t elem_type = 0;
  uint32_t size = 0;
};

class Reader {
 public:
  // `what` names the thing being decoded in error messages, e.g. "foo.parquet: footer".
  Reader(const uint8_t* data, size_t size, std::string what);

  void begin_struct();
  // Reads the next field header; returns false at the struct's stop byte.
  bool next_field(FieldHeader& f);
  void end_struct();

  bool read_bool(const FieldHeader& f);  // a struct field's bool (value in the header)
  bool read_bool_elem();                 // a list element's bool
  int8_t read_i8();
  int16_t read_i16();
  int32_t read_i32();
  int64_t read_i64();
  double read_double();
  std::string read_binary();
  ListHeader read_list_header();
  void skip(uint8_t type);

  size_t position() const { return pos_; }
  [[noreturn]] void corrupt(const std::string& why) const;

 private:
  uint8_t byte();
  uint64_t varint();
  void enter();
  void leave() { --depth_; }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  std::string what_;
  std::vector<int16_t> last_id_;
  int depth_ = 0;
};

class Writer {
 public:
  void begin_struct();
  void end_struct();  // writes the stop byte
  void field_i8(int16_t id, int8_t v);
  void field_i32(int16_t id, int32_t v);
  void field_i64(int16_t id, int64_t v);
  void field_bool(int16_t id, bool v);
  void field_binary(int16_t id, const std::string& v);
  void field_struct_begin(int16_t id);  // follow with the struct's fields and end_struct()
  void field_list_begin(int16_t id, uint8_t elem_type, uint32_t size);
  // list elements
  void i32(int32_t v);
  void i64(int64_t v);
  void binary(const std::string& v);
  void list_struct_begin() { begin_struct(); }

  const std::vector<uint8_t>& bytes() const { return out_; }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  void field_header(int16_t id, uint8_t type);
  void varint(uint64_t v);
  void zigzag(int64_t v) { varint((uint64_t(v) << 1) ^ uint64_t(v >> 63)); }

  std::vector<uint8_t> out_;
  std::vector<int16_t> last_id_;
};

}  // namespace ember::io::thrift
