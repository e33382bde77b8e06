#include "ember/io/checksum.h"

#include <zlib.h>

#include <algorithm>
#include <vector>

#include "ember/core/file.h"

namespace ember::io {

FileChecksum file_checksum(const std::string& path) {
  auto source = open_file(path);
  FileChecksum c;
  c.bytes = source->size();
  uLong crc = crc32_z(0L, Z_NULL, 0);
  constexpr uint64_t kBlock = 4 << 20;
  std::vector<uint8_t> buf;
  for (uint64_t at = 0; at < c.bytes; at += kBlock) {
    const uint64_t n = std::min(kBlock, c.bytes - at);
    const uint8_t* p = source->view(at, n);
    if (!p) {
      buf.resize(n);
      source->read_at(at, n, buf.data());
      p = buf.data();
    }
    crc = crc32_z(crc, p, n);
  }
  c.crc32 = uint32_t(crc);
  return c;
}

uint32_t crc32_update(uint32_t crc, const uint8_t* data, size_t n) { return uint32_t(crc32_z(crc, data, n)); }

}  // namespace ember::io
