#include "ember/io/json.h"

#include <charconv>
#include <cmath>

#include "ember/core/error.h"

namespace ember::io {

void append_json_string(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  out.push_back('"');
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(hex[c >> 4]);
          out.push_back(hex[c & 15]);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
}

namespace {
template <class T>
void append_number(std::string& out, T v) {
  if (std::isnan(v)) { out += "NaN"; return; }
  if (std::isinf(v)) { out += v > 0 ? "Infinity" : "-Infinity"; return; }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  out.append(buf, r.ptr);
}
}  // namespace

void append_float(std::string& out, float v) { append_number(out, v); }
void append_double(std::string& out, double v) { append_number(out, v); }

void append_cell_json(std::string& out, const Column& c, int64_t row) {
  if (!c.is_valid(row)) {
    out += "null";
    return;
  }
  switch (c.type) {
    case TypeId::kBool: out += c.value<uint8_t>(row) ? "true" : "false"; return;
    case TypeId::kInt32: out += std::to_string(c.value<int32_t>(row)); return;
    case TypeId::kInt64: out += std::to_string(c.value<int64_t>(row)); return;
    case TypeId::kFloat: append_float(out, c.value<float>(row)); return;
    case TypeId::kDouble: append_double(out, c.value<double>(row)); return;
    case TypeId::kString: append_json_string(out, c.str(row)); return;
    case TypeId::kBinary: {
      static const char* hex = "0123456789abcdef";
      out.push_back('"');
      for (char ch : c.str(row)) {
        unsigned char b = static_cast<unsigned char>(ch);
        out.push_back(hex[b >> 4]);
        out.push_back(hex[b & 15]);
      }
      out.push_back('"');
      return;
    }
    case TypeId::kList: {
      out.push_back('[');
      for (int64_t i = c.offsets[size_t(row)]; i < c.offsets[size_t(row) + 1]; ++i) {
        if (i > c.offsets[size_t(row)]) out.push_back(',');
        append_cell_json(out, c.children[0], i);
      }
      out.push_back(']');
      return;
    }
    case TypeId::kStruct: {
      out.push_back('{');
      for (size_t k = 0; k < c.children.size(); ++k) {
        if (k) out.push_back(',');
        append_json_string(out, c.children[k].name);
        out.push_back(':');
        append_cell_json(out, c.children[k], row);
      }
      out.push_back('}');
      return;
    }
  }
}

std::string row_json(const Table& t, int64_t row) {
  std::string out = "{";
  for (size_t k = 0; k < t.columns.size(); ++k) {
    if (k) out.push_back(',');
    append_json_string(out, t.columns[k].name);
    out.push_back(':');
    append_cell_json(out, t.columns[k], row);
  }
  out.push_back('}');
  return out;
}

}  // namespace ember::io
