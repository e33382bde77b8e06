// Page compression codecs: snappy, gzip, zstd (and none). LZ4, LZO and Brotli are reported
// as unsupported by name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/io/parquet/format.h"

namespace ember::io::parquet {

// Decompresses `size` bytes into exactly `expected_size` bytes. Throws kCorruption when the
// data is invalid or its decompressed size differs, kUnsupported for other codecs; `what`
// names the file and column for messages.
void decompress(Codec codec, const uint8_t* data, size_t size, uint8_t* out, size_t expected_size,
                const std::string& what);

// Compresses into `out` (replacing its contents). Only kUncompressed, kSnappy and kZstd.
void compress(Codec codec, const uint8_t* data, size_t size, std::vector<uint8_t>& out);

}  // namespace ember::io::parquet
