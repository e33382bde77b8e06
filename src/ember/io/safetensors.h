// The safetensors format (Hugging Face), byte level: no tensor library involved.
//
//   [8 bytes]  N, the header's length, little-endian u64
//   [N bytes]  a UTF-8 JSON object: {"__metadata__": {str: str} (optional),
//              NAME: {"dtype": "F32", "shape": [d0, d1, ...], "data_offsets": [begin, end]}, ...}
//   [rest]     the data buffer; offsets are relative to its start, [begin, end)
//
// Tensors are little-endian, row-major (C order), packed (no strides). The buffer must be
// covered exactly: tensors' byte ranges are contiguous, do not overlap, start at 0 and end at
// the end of the file (what the reference library's validation requires). A tensor with a 0 in
// its shape holds no bytes; shape [] is a scalar (one element).
//
// Order written by ember: tensors sorted by element size, largest first, then by name (the
// Python library sorts by dtype, largest alignment first, then by name: the same idea), so that
// every tensor starts at a multiple of its element size within the buffer. The header is padded with spaces to a multiple of 8 bytes, so the
// buffer (and, in a memory map, every tensor) is aligned to its element size. The header lists
// "__metadata__" first, then the tensors in buffer order. Any order is legal to read.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ember/core/file.h"

namespace ember::io::safetensors {

// Element types, in increasing element size (the order the reference library declares them).
enum class DType : uint8_t {
  kBool, kU8, kI8, kF8_E5M2, kF8_E4M3, kI16, kU16, kF16, kBF16, kI32, kU32, kF32, kF64, kI64, kU64,
};

// The header's name of a dtype: "F32", "BF16", "F8_E4M3", "BOOL", ...
const char* dtype_name(DType dtype);
// The dtype of a header name; nullopt for names ember does not know (e.g. "F4", "C64").
std::optional<DType> parse_dtype(std::string_view name);
// Bytes per element: 1, 2, 4 or 8.
size_t dtype_size(DType dtype);

// The number of elements of a shape (1 for []); nullopt if a dimension is negative or the
// product overflows int64.
std::optional<int64_t> num_elements(std::span<const int64_t> shape);

// One tensor to write. The bytes are borrowed: they must stay valid until the write returns.
struct TensorEntry {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;        // row-major; [] is a scalar
  std::span<const uint8_t> bytes;    // num_elements(shape) * dtype_size(dtype) bytes, little-endian
};

using Metadata = std::map<std::string, std::string>;

// The whole file as bytes (header + buffer), in the order described at the top.
// Throws Error kInvalidArgument naming the tensor for: an empty or duplicate name, the name
// "__metadata__", a negative dimension, or bytes whose size does not match the shape.
std::vector<uint8_t> serialize(std::span<const TensorEntry> tensors, const Metadata& metadata = {});

// Writes the file atomically (AtomicFile: a temporary name, fsync, rename); an earlier file at
// path stays untouched if anything fails. Streams the tensors' bytes without copying them.
// Throws like serialize, and kIO naming the path if the system refuses.
void write_file(const std::string& path, std::span<const TensorEntry> tensors,
                const Metadata& metadata = {});

// One tensor as read: a view into the reader's bytes, valid while the Reader lives.
struct TensorView {
  DType dtype = DType::kF32;
  std::span<const int64_t> shape;
  std::span<const uint8_t> bytes;
  int64_t numel() const { return int64_t(bytes.size() / dtype_size(dtype)); }
};

// A header entry.
struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // data_offsets, relative to the buffer's start
};

// Reads a safetensors file. The file is memory-mapped (Source::view), so get() returns views
// of the mapping without copying; where the source cannot be mapped the buffer is read into
// memory once. Opening validates the whole header (see open()); afterwards every accessor is
// const and safe to call from many threads at once.
class Reader {
 public:
  // Opens and validates path. Throws Error kNotFound / kIO for the file, and kCorruption naming
  // the file (and the tensor, where one is at fault) when: the file is shorter than 8 bytes; the
  // header length runs past the end of the file or exceeds 100 MB; the header is not JSON, not
  // an object, or repeats a key; "__metadata__" is not an object of strings; a tensor entry lacks
  // or mistypes dtype / shape / data_offsets; the dtype is unknown; a dimension is negative or
  // the element count overflows; offsets run past the end, are reversed, do not match
  // shape x element size, overlap another tensor, leave a gap, or leave bytes at the end
  // uncovered.
  static Reader open(const std::string& path);
  // The same from any Source (tests: memory_source); takes ownership.
  static Reader from_source(std::unique_ptr<Source> source);

  Reader(Reader&&) noexcept;
  Reader& operator=(Reader&&) noexcept;
  ~Reader();

  // Header entries in buffer order (by begin offset).
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  // The tensor called name; throws kNotFound naming the file and the tensor if there is none.
  TensorView get(const std::string& name) const;
  const TensorInfo& info(const std::string& name) const;
  // The "__metadata__" map (empty if the file has none).
  const Metadata& metadata() const { return metadata_; }
  // The file's name for messages.
  const std::string& name() const;
  // Where the data buffer starts in the file: 8 + N.
  uint64_t buffer_offset() const { return buffer_offset_; }

 private:
  Reader() = default;
  void parse();

  std::unique_ptr<Source> source_;
  uint64_t buffer_offset_ = 0;
  const uint8_t* buffer_ = nullptr;  // the data buffer: mapped, or owned_.data()
  std::vector<uint8_t> owned_;       // the buffer when the source cannot be mapped
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> index_;
  Metadata metadata_;
};

}  // namespace ember::io::safetensors
