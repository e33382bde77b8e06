// Decodes one column chunk (all its pages) into levels and dense values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/core/file.h"
#include "ember/io/parquet/format.h"
#include "ember/io/parquet/schema.h"

namespace ember::io::parquet {

// Dense non-null values: fixed-width bytes, or offsets + bytes for byte arrays.
struct DenseValues {
  std::vector<uint8_t> fixed;        // [count * width]
  std::vector<int64_t> offsets{0};   // byte arrays: [count + 1] into bytes
  std::vector<uint8_t> bytes;
};

// A leaf column's decoded chunk. Levels are empty when the maximum level is 0.
struct LeafData {
  std::vector<int16_t> def;     // [num_entries]
  std::vector<int16_t> rep;     // [num_entries]
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
