// Checksums of whole files (zlib's CRC-32), to notice bytes damaged after they were written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ember::io {

struct FileChecksum {
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
};

// Reads the file through the file seam in 4 MiB blocks; throws kNotFound / kIO naming it.
FileChecksum file_checksum(const std::string& path);
// The CRC-32 of n bytes continued from `crc` (0 to start).
uint32_t crc32_update(uint32_t crc, const uint8_t* data, size_t n);

}  // namespace ember::io
