// In-memory columns: the values ember's Parquet reader produces and its writer consumes.
// The layout follows Arrow's so that it maps one to one onto what pyarrow shows:
//   fixed-width leaves:  values  = length * width bytes (bool: one byte per value, 0 or 1)
//   string / binary:     offsets = length + 1 entries into values (the bytes)
//   list:                offsets = length + 1 entries into children[0]
//   struct:              children, each of the struct's length
// Null slots have validity[i] == 0; an empty validity vector means "no nulls". The value
// under a null slot is zero (fixed width) or empty (string, binary, list).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ember::io {

enum class TypeId : uint8_t { kBool, kInt32, kInt64, kFloat, kDouble, kString, kBinary, kList, kStruct };

const char* type_name(TypeId id);
// Bytes per value of a fixed-width type; 0 for string, binary, list and struct.
size_t fixed_width(TypeId id);

struct Column {
  std::string name;     // field name; a list's child is named "element"
  TypeId type = TypeId::kInt64;
  bool nullable = true; // whether the field may hold nulls (the schema); independent of data
  int64_t length = 0;   // number of slots
  std::vector<uint8_t> validity;  // [length] or empty (all valid)
  std::vector<int64_t> offsets;   // [length + 1] for string, binary, list
  std::vector<uint8_t> values;    // fixed-width values or string/binary bytes
  std::vector<Column> children;   // list: 1, struct: n

  bool is_valid(int64_t i) const { return validity.empty() || validity[size_t(i)] != 0; }
  int64_t null_count() const;

  // Typed view of fixed-width values; T must match the type's width.
  template <class T>
  std::span<const T> data() const {
    return {reinterpret_cast<const T*>(values.data()), values.size() / sizeof(T)};
  }
  template <class T>
  T value(int64_t i) const {
    T v;
    std::memcpy(&v, values.data() + size_t(i) * sizeof(T), sizeof(T));
    return v;
  }
  std::string_view str(int64_t i) const {
    return {reinterpret_cast<const char*>(values.data()) + offsets[size_t(i)],
            size_t(offsets[size_t(i) + 1] - offsets[size_t(i)])};
  }
  const Column& child(size_t i = 0) const { return children[i]; }
  const Column* find_child(std::string_view name) const;
};

// Builders for tests and writers. Each returns a column with no nulls unless given validity.
template <class T>
Column make_fixed(std::string name, TypeId type, const std::vector<T>& v) {
  Column c;
  c.name = std::move(name);
  c.type = type;
  c.length = int64_t(v.size());
  c.values.resize(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(c.values.data(), v.data(), c.values.size());
  return c;
}
Column make_bool(std::string name, const std::vector<bool>& v);
Column make_int32(std::string name, const std::vector<int32_t>& v);
Column make_int64(std::string name, const std::vector<int64_t>& v);
Column make_float(std::string name, const std::vector<float>& v);
Column make_double(std::string name, const std::vector<double>& v);
Column make_string(std::string name, const std::vector<std::string>& v, TypeId type = TypeId::kString);
// A list column whose rows are consecutive runs of `element`: row i holds sizes[i] elements.
Column make_list(std::string name, Column element, const std::vector<int64_t>& sizes);
Column make_struct(std::string name, std::vector<Column> fields);

// Rows [begin, end) of a column, deep-copied (offsets rebased to 0).
Column slice(const Column& c, int64_t begin, int64_t end);
// Appends all rows of b to a (same type and shape); used to join row groups.
void append(Column& a, const Column& b);
// Same type tree, lengths, validity and values (bitwise for floats). Used by tests.
bool equal(const Column& a, const Column& b);
// One-line description of the type tree, e.g. "list<element: float>".
std::string type_string(const Column& c);

// A table: top-level columns of equal length.
struct Table {
  std::vector<Column> columns;
  int64_t num_rows() const { return columns.empty() ? 0 : columns[0].length; }
  const Column* find(std::string_view name) const;
};

}  // namespace ember::io
