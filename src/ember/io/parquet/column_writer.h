// Encodes one shredded leaf as a Parquet column chunk: an optional dictionary page (PLAIN)
// and v1 data pages (levels RLE, values PLAIN or RLE_DICTIONARY), each compressed with the
// chosen codec, appended to the file being written.
#pragma once

#include <string>

#include "ember/core/file.h"
#include "ember/io/parquet/format.h"
#include "ember/io/parquet/shred.h"
#include "ember/io/parquet/writer.h"

namespace ember::io::parquet {

// The Parquet physical type that stores values of a leaf type (string/binary: BYTE_ARRAY).
PhysicalType physical_type_of(TypeId type);

// Writes the chunk at the file's current end and returns its metadata (offsets are file
// offsets). `what` names the file and column for messages. Throws kInvalidArgument when a
// page cannot be represented (over 2 GiB), kIO when the write fails.
ColumnChunk write_column_chunk(const ShreddedLeaf& leaf, const WriteOptions& options, AtomicFile& out,
                               const std::string& what);

}  // namespace ember::io::parquet
