#include "ember/io/column.h"

#include "ember/core/error.h"

namespace ember::io {

const char* type_name(TypeId id) {
  switch (id) {
    case TypeId::kBool: return "bool";
    case TypeId::kInt32: return "int32";
    case TypeId::kInt64: return "int64";
    case TypeId::kFloat: return "float";
    case TypeId::kDouble: return "double";
    case TypeId::kString: return "string";
    case TypeId::kBinary: return "binary";
    case TypeId::kList: return "list";
    case TypeId::kStruct: return "struct";
  }
  return "?";
}

size_t fixed_width(TypeId id) {
  switch (id) {
    case TypeId::kBool: return 1;
    case TypeId::kInt32: case TypeId::kFloat: return 4;
    case TypeId::kInt64: case TypeId::kDouble: return 8;
    default: return 0;
  }
}

int64_t Column::null_count() const {
  int64_t n = 0;
  for (uint8_t v : validity) n += v == 0;
  return n;
}

const Column* Column::find_child(std::string_view child_name) const {
  for (const Column& c : children)
    if (c.name == child_name) return &c;
  return nullptr;
}

const Column* Table::find(std::string_view name) const {
  for (const Column& c : columns)
    if (c.name == name) return &c;
  return nullptr;
}

Column make_bool(std::string name, const std::vector<bool>& v) {
  std::vector<uint8_t> bytes(v.begin(), v.end());
  return make_fixed(std::move(name), TypeId::kBool, bytes);
}
Column make_int32(std::string name, const std::vector<int32_t>& v) { return make_fixed(std::move(name), TypeId::kInt32, v); }
Column make_int64(std::string name, const std::vector<int64_t>& v) { return make_fixed(std::move(name), TypeId::kInt64, v); }
Column make_float(std::string name, const std::vector<float>& v) { return make_fixed(std::move(name), TypeId::kFloat, v); }
Column make_double(std::string name, const std::vector<double>& v) { return make_fixed(std::move(name), TypeId::kDouble, v); }

Column make_string(std::string name, const std::vector<std::string>& v, TypeId type) {
  Column c;
  c.name = std::move(name);
  c.type = type;
  c.length = int64_t(v.size());
  c.offsets.reserve(v.size() + 1);
  c.offsets.push_back(0);
  for (const std::string& s : v) {
    c.values.insert(c.values.end(), s.begin(), s.end());
    c.offsets.push_back(int64_t(c.values.size()));
  }
  return c;
}

Column make_list(std::string name, Column element, const std::vector<int64_t>& sizes) {
  Column c;
  c.name = std::move(name);
  c.type = TypeId::kList;
  c.length = int64_t(sizes.size());
  c.offsets.reserve(sizes.size() + 1);
  c.offsets.push_back(0);
  for (int64_t s : sizes) c.offsets.push_back(c.offsets.back() + s);
  if (c.offsets.back() != element.length)
    fail(ErrorKind::kInvalidArgument, "make_list(" + c.name + "): sizes add up to " +
                                          std::to_string(c.offsets.back()) + " but the element column has " +
                                          std::to_string(element.length) + " values");
  element.name = "element";
  c.children.push_back(std::move(element));
  return c;
}

Column make_struct(std::string name, std::vector<Column> fields) {
  Column c;
  c.name = std::move(name);
  c.type = TypeId::kStruct;
  c.length = fields.empty() ? 0 : fields[0].length;
  for (const Column& f : fields)
    if (f.length != c.length)
      fail(ErrorKind::kInvalidArgument, "make_struct(" + c.name + "): field " + f.name + " has " +
                                            std::to_string(f.length) + " rows, expected " + std::to_string(c.length));
  c.children = std::move(fields);
  return c;
}

Column slice(const Column& c, int64_t begin, int64_t end) {
  Column out;
  out.name = c.name;
  out.type = c.type;
  out.nullable = c.nullable;
  out.length = end - begin;
  if (!c.validity.empty()) out.validity.assign(c.validity.begin() + begin, c.validity.begin() + end);
  size_t w = fixed_width(c.type);
  if (w > 0) {
    out.values.assign(c.values.begin() + begin * int64_t(w), c.values.begin() + end * int64_t(w));
    return out;
  }
  if (c.type == TypeId::kStruct) {
    for (const Column& f : c.children) out.children.push_back(slice(f, begin, end));
    return out;
  }
  // string, binary, list: rebase offsets
  int64_t lo = c.offsets[size_t(begin)], hi = c.offsets[size_t(end)];
  out.offsets.reserve(size_t(end - begin + 1));
  for (int64_t i = begin; i <= end; ++i) out.offsets.push_back(c.offsets[size_t(i)] - lo);
  if (c.type == TypeId::kList) {
    out.children.push_back(slice(c.children[0], lo, hi));
  } else {
    out.values.assign(c.values.begin() + lo, c.values.begin() + hi);
  }
  return out;
}

void append(Column& a, const Column& b) {
  if (a.type != b.type || a.children.size() != b.children.size())
    fail(ErrorKind::kInternal, "append: column " + a.name + " has a different type");
  if (!a.validity.empty() || !b.validity.empty()) {
    if (a.validity.empty()) a.validity.assign(size_t(a.length), 1);
    if (b.validity.empty()) a.validity.insert(a.validity.end(), size_t(b.length), 1);
    else a.validity.insert(a.validity.end(), b.validity.begin(), b.validity.end());
  }
  if (fixed_width(a.type) > 0) {
    a.values.insert(a.values.end(), b.values.begin(), b.values.end());
  } else if (a.type == TypeId::kStruct) {
    for (size_t i = 0; i < a.children.size(); ++i) append(a.children[i], b.children[i]);
  } else {
    if (a.offsets.empty()) a.offsets.push_back(0);
    int64_t base = a.offsets.back();
    for (size_t i = 1; i < b.offsets.size(); ++i) a.offsets.push_back(base + b.offsets[i]);
    if (a.type == TypeId::kList) append(a.children[0], b.children[0]);
    else a.values.insert(a.values.end(), b.values.begin(), b.values.end());
  }
  a.length += b.length;
}

bool equal(const Column& a, const Column& b) {
  if (a.name != b.name || a.type != b.type || a.length != b.length) return false;
  if (a.children.size() != b.children.size()) return false;
  for (int64_t i = 0; i < a.length; ++i)
    if (a.is_valid(i) != b.is_valid(i)) return false;
  if (fixed_width(a.type) > 0) return a.values == b.values;
  if (a.type != TypeId::kStruct) {
    auto offs = [](const Column& c) {
      return c.offsets.empty() ? std::vector<int64_t>{0} : c.offsets;
    };
    if (offs(a) != offs(b)) return false;
    if (a.type != TypeId::kList) return a.values == b.values;
  }
  for (size_t i = 0; i < a.children.size(); ++i)
    if (!equal(a.children[i], b.children[i])) return false;
  return true;
}

std::string type_string(const Column& c) {
  std::string s = type_name(c.type);
  if (c.type == TypeId::kList) {
    s += "<" + c.children[0].name + ": " + type_string(c.children[0]) + ">";
  } else if (c.type == TypeId::kStruct) {
    s += "<";
    for (size_t i = 0; i < c.children.size(); ++i) {
      if (i) s += ", ";
      s += c.children[i].name + ": " + type_string(c.children[i]);
    }
    s += ">";
  }
  if (!c.nullable) s += " not null";
  return s;
}

}  // namespace ember::io
