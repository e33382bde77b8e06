// openpi's wire format (openpi-client's msgpack_numpy.py): every frame is one msgpack value; a
// NumPy array travels as the map {"__ndarray__": true, "data": <bin: its bytes, C order>,
// "dtype": <numpy's dtype.str, e.g. "|u1", "<f4">, "shape": [dims]}, a NumPy scalar as
// {"__npgeneric__": true, "data": <the value>, "dtype": ...}. openpi's packer writes those four
// keys as bin (Python bytes), the rest as str; both are read, and encode() writes them as openpi
// does so that its client turns them back into arrays.
//
// Decoding is bounded: it walks the bytes with msgpack-cxx's event parser and allocates only as
// elements arrive (a header that claims 2^32 entries costs nothing), refuses more than
// max_elements entries in all, nesting deeper than max_depth, anything but strings as map keys,
// extension types, trailing bytes, and arrays whose data length disagrees with shape x dtype.
// Nothing executable is ever deserialised.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ember::serve {

struct Field {
  enum class Kind { kNil, kBool, kInt, kFloat, kString, kBytes, kList, kMap, kNdArray };
  Kind kind = Kind::kNil;
  bool boolean = false;          // kBool
  int64_t integer = 0;           // kInt
  double number = 0;             // kFloat
  std::string bytes;             // kString, kBytes, kNdArray (its data, C order)
  std::string dtype;             // kNdArray; a NumPy scalar (kBool, kInt, kFloat, kString): its dtype
  std::vector<int64_t> shape;    // kNdArray
  std::vector<Field> items;      // kList items; kMap values, each with its key
  std::string key;               // a map's value: its key

  static Field text(std::string s);
  static Field real(double x);
  static Field whole(int64_t x);
  static Field map();
  // a NumPy array: dtype as numpy writes it ("<f4"), data of shape x itemsize bytes
  static Field ndarray(std::string dtype, std::vector<int64_t> shape, std::string data);
  // a map's value under key (added, or replaced); returns it
  Field& set(const std::string& key, Field value);
  // a map's value under key, or null
  const Field* find(std::string_view key) const;
};

// What a client may send (the frame size itself is bounded before it is read: the server's
// --max_message_mb).
struct DecodeLimits {
  size_t max_elements = 4096;  // list items and map entries, all levels together
  int max_depth = 16;
};

// A frame's value. Throws Error kInvalidArgument whose message says what is wrong and, inside a
// map, under which key ("key 'observation/state': ...").
Field decode(std::string_view frame, const DecodeLimits& limits = {});

// A value as openpi's packer writes it.
std::string encode(const Field& value);

// The element size in bytes of a NumPy dtype string ("<f4" 4, "|u1" 1, "<U6" 24), or 0 when
// ember does not read that dtype (big-endian, object, void, complex, datetime).
size_t dtype_size(std::string_view dtype);

// "[2, 3]"
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace ember::serve
