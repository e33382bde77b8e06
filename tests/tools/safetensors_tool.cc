// safetensors_tool write DIR   writes DIR/numpy.safetensors (dtypes numpy has) and
//                              DIR/all.safetensors (those plus BF16, F8_E4M3, F8_E5M2)
// safetensors_tool dump FILE   prints the file as ember reads it, as JSON:
//   {"header_length": N, "metadata": {k: v},
//    "tensors": {name: {"dtype": "F32", "shape": [..], "data_offsets": [b, e], "hex": "..."}}}
//
// For tests/python/test_safetensors_interop.py, which builds the same tensors with numpy (the
// contents below are mirrored there) and checks both directions with the safetensors library.
// Errors print one line on stderr and exit with status 2.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/core/error.h"
#include "ember/io/safetensors.h"

namespace {

namespace st = ember::io::safetensors;
using st::DType;

template <class T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

struct Owned {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

std::vector<Owned> numpy_tensors() {
  std::vector<Owned> t;
  std::vector<float> f32(12);
  for (size_t i = 0; i < f32.size(); ++i) f32[i] = (float(i) - 5.0f) * 0.25f;
  t.push_back({"f32", DType::kF32, {3, 4}, bytes_of(f32)});
  std::vector<uint32_t> special = {0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x00000001u};
  t.push_back({"f32_special", DType::kF32, {5}, bytes_of(special)});
  std::vector<double> f64(6);
  for (size_t i = 0; i < f64.size(); ++i) f64[i] = double(i) * 1.5 - 2.0;
  f64.back() = 1e300;
  t.push_back({"f64", DType::kF64, {2, 3}, bytes_of(f64)});
  t.push_back({"i64", DType::kI64, {4}, bytes_of(std::vector<int64_t>{0, -1, int64_t(1) << 62, INT64_MIN})});
  t.push_back({"i32", DType::kI32, {2, 2}, bytes_of(std::vector<int32_t>{1, -2, 3, -4})});
  t.push_back({"i16", DType::kI16, {3}, bytes_of(std::vector<int16_t>{-32768, 0, 32767})});
  t.push_back({"i8", DType::kI8, {3}, bytes_of(std::vector<int8_t>{-128, 0, 127})});
  std::vector<uint8_t> u8(24);
  for (size_t i = 0; i < u8.size(); ++i) u8[i] = uint8_t(i * 37 % 256);
  t.push_back({"u8", DType::kU8, {2, 3, 4}, u8});
  t.push_back({"u16", DType::kU16, {2}, bytes_of(std::vector<uint16_t>{0, 65535})});
  t.push_back({"bool", DType::kBool, {5}, {1, 0, 1, 0, 1}});
  t.push_back({"f16", DType::kF16, {2}, bytes_of(std::vector<uint16_t>{0x3c00, 0xc000})});
  t.push_back({"scalar", DType::kF32, {}, bytes_of(std::vector<float>{3.5f})});
  t.push_back({"empty", DType::kF32, {0, 3}, {}});
  return t;
}

std::vector<Owned> all_tensors() {
  std::vector<Owned> t = numpy_tensors();
  t.push_back({"bf16", DType::kBF16, {5}, bytes_of(std::vector<uint16_t>{0x3f80, 0xc000, 0x7f80, 0x0001, 0x7fc0})});
  t.push_back({"f8_e4m3", DType::kF8_E4M3, {4}, {0x00, 0x38, 0x7e, 0xff}});
  t.push_back({"f8_e5m2", DType::kF8_E5M2, {2}, {0x3c, 0xc0}});
  return t;
}

void write(const std::vector<Owned>& owned, const std::string& path) {
  std::vector<st::TensorEntry> entries;
  for (const Owned& o : owned) entries.push_back({o.name, o.dtype, o.shape, o.bytes});
  st::write_file(path, entries, {{"format", "pt"}, {"written_by", "ember"}});
}

std::string hex(std::span<const uint8_t> bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s.push_back(digits[b >> 4]);
    s.push_back(digits[b & 15]);
  }
  return s;
}

void dump(const std::string& path) {
  st::Reader r = st::Reader::open(path);
  nlohmann::ordered_json out;
  out["header_length"] = r.buffer_offset() - 8;
  out["metadata"] = r.metadata();
  out["tensors"] = nlohmann::ordered_json::object();
  for (const st::TensorInfo& t : r.tensors()) {
    st::TensorView v = r.get(t.name);
    out["tensors"][t.name] = {{"dtype", st::dtype_name(v.dtype)},
                              {"shape", t.shape},
                              {"data_offsets", {t.begin, t.end}},
                              {"hex", hex(v.bytes)}};
  }
  std::printf("%s\n", out.dump().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 3 && std::strcmp(argv[1], "write") == 0) {
      std::filesystem::create_directories(argv[2]);
      write(numpy_tensors(), std::string(argv[2]) + "/numpy.safetensors");
      write(all_tensors(), std::string(argv[2]) + "/all.safetensors");
      return 0;
    }
    if (argc == 3 && std::strcmp(argv[1], "dump") == 0) {
      dump(argv[2]);
      return 0;
    }
    std::fprintf(stderr, "usage: safetensors_tool write DIR | dump FILE\n");
    return 2;
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
