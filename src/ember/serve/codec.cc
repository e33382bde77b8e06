#include "ember/serve/codec.h"

#include <msgpack.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <utility>

#include "ember/core/error.h"

namespace ember::serve {

namespace {

[[noreturn]] void bad(const std::string& what) { throw Error(ErrorKind::kInvalidArgument, what); }

std::string where(const std::string& key) { return key.empty() ? std::string("the message") : "key '" + key + "'"; }

// {"__ndarray__": true, "data", "dtype", "shape"} -> kNdArray; {"__npgeneric__": true, "data",
// "dtype"} -> the scalar with its dtype. `key`: the map's own key, for messages.
Field numpy_value(const Field& m, const std::string& key) {
  const bool array = m.find("__ndarray__") != nullptr;
  const char* tag = array ? "__ndarray__" : "__npgeneric__";
  for (const auto& item : m.items)
    if (item.key != tag && item.key != "data" && item.key != "dtype" && (!array || item.key != "shape"))
      bad(where(key) + ": a " + tag + " map with an unknown entry '" + item.key + "'");
  const Field* flag = m.find(tag);
  if (flag->kind != Field::Kind::kBool || !flag->boolean) bad(where(key) + ": " + tag + " is not true");
  const Field* dtype = m.find("dtype");
  const Field* data = m.find("data");
  if (!dtype || dtype->kind != Field::Kind::kString) bad(where(key) + ": a " + tag + " map without a 'dtype' string");
  if (!data) bad(where(key) + ": a " + tag + " map without 'data'");
  const size_t item = dtype_size(dtype->bytes);
  if (item == 0) bad(where(key) + ": dtype '" + dtype->bytes + "' is not read (little-endian bool, integers, floats and unicode are)");
  if (!array) {  // a NumPy scalar: its value as msgpack wrote it
    Field v = *data;
    if (v.kind == Field::Kind::kList || v.kind == Field::Kind::kMap || v.kind == Field::Kind::kNdArray)
      bad(where(key) + ": an __npgeneric__ whose data is not a scalar");
    v.dtype = dtype->bytes;
    return v;
  }
  const Field* shape = m.find("shape");
  if (!shape || shape->kind != Field::Kind::kList) bad(where(key) + ": an __ndarray__ map without a 'shape' list");
  if (data->kind != Field::Kind::kBytes) bad(where(key) + ": an __ndarray__ whose 'data' is not bytes");
  Field out;
  out.kind = Field::Kind::kNdArray;
  out.dtype = dtype->bytes;
  // the element count, refused past the data's length before it can overflow
  unsigned __int128 need = item;
  for (const auto& d : shape->items) {
    if (d.kind != Field::Kind::kInt || d.integer < 0) bad(where(key) + ": an __ndarray__ shape holds something other than sizes >= 0");
    out.shape.push_back(d.integer);
    need *= uint64_t(d.integer);
    if (need > std::numeric_limits<uint64_t>::max()) need = std::numeric_limits<uint64_t>::max();
  }
  if (need != data->bytes.size())
    bad(where(key) + ": its data holds " + std::to_string(data->bytes.size()) + " bytes, shape " + shape_text(out.shape) + " of " +
        out.dtype + " needs " + std::to_string(uint64_t(need)));
  out.bytes = data->bytes;
  return out;
}

// Builds the value from msgpack-cxx's parse events, allocating only as elements arrive.
class Builder {
 public:
  explicit Builder(const DecodeLimits& limits) : limits_(limits) {}

  bool visit_nil() { return add(Field{}); }
  bool visit_boolean(bool v) {
    Field f;
    f.kind = Field::Kind::kBool, f.boolean = v;
    return add(std::move(f));
  }
  bool visit_positive_integer(uint64_t v) {
    if (v > uint64_t(std::numeric_limits<int64_t>::max())) return fail("an integer above 2^63 - 1");
    return visit_negative_integer(int64_t(v));
  }
  bool visit_negative_integer(int64_t v) { return add(Field::whole(v)); }
  bool visit_float32(float v) { return visit_float64(v); }
  bool visit_float64(double v) { return add(Field::real(v)); }
  bool visit_str(const char* p, uint32_t n) { return add(Field::text(std::string(p, n))); }
  bool visit_bin(const char* p, uint32_t n) {
    Field f;
    f.kind = Field::Kind::kBytes, f.bytes.assign(p, n);
    return add(std::move(f));
  }
  bool visit_ext(const char*, uint32_t) { return fail("a msgpack extension type (not read)"); }
  bool start_array(uint32_t n) { return open(Field::Kind::kList, n); }
  bool start_array_item() { return true; }
  bool end_array_item() { return true; }
  bool end_array() { return close(); }
  bool start_map(uint32_t n) { return open(Field::Kind::kMap, n); }
  bool start_map_key() {
    in_key_ = true;
    return true;
  }
  bool end_map_key() {
    in_key_ = false;
    return true;
  }
  bool start_map_value() { return true; }
  bool end_map_value() { return true; }
  bool end_map() { return close(); }
  void parse_error(size_t, size_t at) { fail("not msgpack (a malformed value at byte " + std::to_string(at) + ")"); }
  void insufficient_bytes(size_t, size_t) { fail("not msgpack (the frame ends inside a value: cut short?)"); }

  const std::string& error() const { return error_; }
  Field take() { return std::move(root_); }

 private:
  bool fail(const std::string& what) {
    if (error_.empty()) error_ = (path().empty() ? what : where(path()) + ": " + what);
    return false;
  }
  // the key under which the next value goes ("a/b"), for messages
  std::string path() const {
    std::string p;
    for (const Field* f : stack_)
      if (f != &root_ && !f->key.empty()) p += (p.empty() ? "" : "/") + f->key;
    if (!stack_.empty() && stack_.back()->kind == Field::Kind::kMap && !key_.empty()) p += (p.empty() ? "" : "/") + key_;
    return p;
  }
  bool count(uint64_t n) {
    elements_ += n;
    return elements_ <= limits_.max_elements;
  }
  bool add(Field v) {
    if (in_key_) {
      if (v.kind != Field::Kind::kString && v.kind != Field::Kind::kBytes) return fail("a map key that is not a string");
      key_ = std::move(v.bytes);
      for (const auto& item : stack_.back()->items)
        if (item.key == key_) return fail("the key appears twice");
      return true;
    }
    attach(std::move(v));
    return true;
  }
  Field* attach(Field v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Field& parent = *stack_.back();
    if (parent.kind == Field::Kind::kMap) v.key = key_;
    parent.items.push_back(std::move(v));
    return &parent.items.back();
  }
  bool open(Field::Kind kind, uint32_t n) {
    if (in_key_) return fail("a map key that is not a string");
    if (int(stack_.size()) >= limits_.max_depth) return fail("nested deeper than " + std::to_string(limits_.max_depth) + " levels");
    if (!count(n)) return fail("more than " + std::to_string(limits_.max_elements) + " list items and map entries");
    Field f;
    f.kind = kind;
    stack_.push_back(attach(std::move(f)));  // the parent is not touched until this one closes
    return true;
  }
  bool close() {
    Field& done = *stack_.back();
    stack_.pop_back();
    key_.clear();
    if (done.kind == Field::Kind::kMap && (done.find("__ndarray__") || done.find("__npgeneric__"))) {
      try {
        std::string key = done.key;
        done = numpy_value(done, path_of(done));
        done.key = std::move(key);
      } catch (const Error& e) {
        if (error_.empty()) error_ = e.what();
        return false;
      }
    }
    return true;
  }
  std::string path_of(const Field& f) const {
    std::string p;
    for (const Field* s : stack_)
      if (s != &root_ && !s->key.empty()) p += (p.empty() ? "" : "/") + s->key;
    return f.key.empty() ? p : (p.empty() ? f.key : p + "/" + f.key);
  }

  const DecodeLimits& limits_;
  Field root_;
  std::vector<Field*> stack_;  // the open lists and maps, outermost first
  std::string key_;            // the open map's current key
  bool in_key_ = false;
  uint64_t elements_ = 0;
  std::string error_;
};

// msgpack's float 64 (0xcb, the value's bits big-endian). Not packer::pack_double, which writes an
// integral value as an integer (a timing of 3.0 ms would reach the client as int 3, a value of
// 2^63 or more as an unsigned integer this decoder refuses).
void pack_float64(msgpack::sbuffer& buffer, double x) {
  uint64_t bits;
  std::memcpy(&bits, &x, 8);
  char out[9] = {char(0xcb)};
  for (int i = 0; i < 8; ++i) out[1 + i] = char(bits >> (56 - 8 * i));
  buffer.write(out, 9);
}

void pack(msgpack::sbuffer& buffer, msgpack::packer<msgpack::sbuffer>& p, const Field& v) {
  switch (v.kind) {
    case Field::Kind::kNil: p.pack_nil(); return;
    case Field::Kind::kBool: v.boolean ? p.pack_true() : p.pack_false(); return;
    case Field::Kind::kInt: p.pack_int64(v.integer); return;
    case Field::Kind::kFloat: pack_float64(buffer, v.number); return;
    case Field::Kind::kString:
      p.pack_str(uint32_t(v.bytes.size()));
      p.pack_str_body(v.bytes.data(), uint32_t(v.bytes.size()));
      return;
    case Field::Kind::kBytes:
      p.pack_bin(uint32_t(v.bytes.size()));
      p.pack_bin_body(v.bytes.data(), uint32_t(v.bytes.size()));
      return;
    case Field::Kind::kList:
      p.pack_array(uint32_t(v.items.size()));
      for (const auto& item : v.items) pack(buffer, p, item);
      return;
    case Field::Kind::kMap:
      p.pack_map(uint32_t(v.items.size()));
      for (const auto& item : v.items) {
        p.pack_str(uint32_t(item.key.size()));
        p.pack_str_body(item.key.data(), uint32_t(item.key.size()));
        pack(buffer, p, item);
      }
      return;
    case Field::Kind::kNdArray: {
      // openpi's packer: the four keys as bin (Python bytes), dtype a str, shape a list
      auto bin_key = [&](const char* k) {
        const auto n = uint32_t(std::char_traits<char>::length(k));
        p.pack_bin(n);
        p.pack_bin_body(k, n);
      };
      p.pack_map(4);
      bin_key("__ndarray__");
      p.pack_true();
      bin_key("data");
      p.pack_bin(uint32_t(v.bytes.size()));
      p.pack_bin_body(v.bytes.data(), uint32_t(v.bytes.size()));
      bin_key("dtype");
      p.pack_str(uint32_t(v.dtype.size()));
      p.pack_str_body(v.dtype.data(), uint32_t(v.dtype.size()));
      bin_key("shape");
      p.pack_array(uint32_t(v.shape.size()));
      for (int64_t d : v.shape) p.pack_int64(d);
      return;
    }
  }
}

}  // namespace

Field Field::text(std::string s) {
  Field f;
  f.kind = Kind::kString, f.bytes = std::move(s);
  return f;
}

Field Field::real(double x) {
  Field f;
  f.kind = Kind::kFloat, f.number = x;
  return f;
}

Field Field::whole(int64_t x) {
  Field f;
  f.kind = Kind::kInt, f.integer = x;
  return f;
}

Field Field::map() {
  Field f;
  f.kind = Kind::kMap;
  return f;
}

Field Field::ndarray(std::string dtype, std::vector<int64_t> shape, std::string data) {
  Field f;
  f.kind = Kind::kNdArray, f.dtype = std::move(dtype), f.shape = std::move(shape), f.bytes = std::move(data);
  return f;
}

Field& Field::set(const std::string& k, Field value) {
  value.key = k;
  for (auto& item : items)
    if (item.key == k) return item = std::move(value);
  items.push_back(std::move(value));
  return items.back();
}

const Field* Field::find(std::string_view k) const {
  for (const auto& item : items)
    if (item.key == k) return &item;
  return nullptr;
}

Field decode(std::string_view frame, const DecodeLimits& limits) {
  if (frame.empty()) bad("not msgpack (an empty frame)");
  Builder b(limits);
  size_t off = 0;
  const bool ok = msgpack::parse(frame.data(), frame.size(), off, b);
  if (!b.error().empty()) bad(b.error());
  if (!ok) bad("not msgpack");
  if (off != frame.size()) bad("not msgpack (" + std::to_string(frame.size() - off) + " bytes after the value)");
  return b.take();
}

std::string encode(const Field& value) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> p(buffer);
  pack(buffer, p, value);
  return std::string(buffer.data(), buffer.size());
}

size_t dtype_size(std::string_view dtype) {
  // numpy's dtype.str: byte order ('<' little, '|' not applicable, '>' big, '=' native), kind, size
  if (dtype.size() < 3 || (dtype[0] != '<' && dtype[0] != '|' && dtype[0] != '=')) return 0;
  size_t n = 0;
  auto [end, ec] = std::from_chars(dtype.data() + 2, dtype.data() + dtype.size(), n);
  if (ec != std::errc() || end != dtype.data() + dtype.size() || n == 0) return 0;
  switch (dtype[1]) {
    case 'b': return n == 1 ? 1 : 0;
    case 'u':
    case 'i': return n == 1 || n == 2 || n == 4 || n == 8 ? n : 0;
    case 'f': return n == 2 || n == 4 || n == 8 ? n : 0;
    case 'U': return n <= (1u << 20) ? 4 * n : 0;
    default: return 0;
  }
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace ember::serve
