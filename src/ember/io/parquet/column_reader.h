// Decodes one column chunk (all its pages) into levels and dense values.
#pragma once

#include <cstdint>
#include <string>
#include <memory>
#include <utility>
#include <vector>

#include "ember/core/file.h"
#include "ember/io/parquet/format.h"
#include "ember/io/parquet/schema.h"

namespace ember::io::parquet {

// An allocator whose resize() leaves new ints uninitialised: level buffers are written in
// full right after they grow, so zero-filling them first is wasted work.
template <class T>
struct UninitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() = default;
  template <class U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using Levels = std::vector<int16_t, UninitAllocator<int16_t>>;

// Dense non-null values: fixed-width bytes, or offsets + bytes for byte arrays.
struct DenseValues {
  std::vector<uint8_t> fixed;        // [count * width]
  std::vector<int64_t> offsets{0};   // byte arrays: [count + 1] into bytes
  std::vector<uint8_t> bytes;
};

// A leaf column's decoded chunk. Levels are empty when the maximum level is 0.
struct LeafData {
  Levels def;                   // [num_entries]
  Levels rep;                   // [num_entries]
  int64_t num_entries = 0;      // level entries (values + nulls + empty lists)
  int64_t num_values = 0;       // non-null values, stored densely below
  DenseValues values;           // the non-null values, in order
};

// Reads the chunk of `leaf` in `chunk` from `source`; `num_rows` is the row group's. Throws
// kCorruption for malformed pages, or for value counts that disagree with the chunk's
// metadata or the row group (checked before values are decoded), kUnsupported for codecs and
// encodings ember does not read. `what` is "<file>: column '<name>'".
LeafData read_column_chunk(const Source& source, const ColumnChunk& chunk, const Node& leaf, int64_t num_rows,
                           const std::string& what);

}  // namespace ember::io::parquet
