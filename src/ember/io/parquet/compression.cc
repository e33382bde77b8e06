#include "ember/io/parquet/compression.h"

#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>

#include "ember/core/error.h"

namespace ember::io::parquet {

namespace {

void size_mismatch(const std::string& what, const char* codec, size_t got, size_t expected) {
  fail_corrupt(what + ": " + codec + " page decompressed to " + std::to_string(got) +
               " bytes, the page header says " + std::to_string(expected));
}

void gunzip(const uint8_t* data, size_t size, uint8_t* out, size_t expected, const std::string& what) {
  z_stream zs{};
  // 15 + 32: accept both gzip and zlib headers (Parquet's GZIP is RFC 1952 gzip)
  if (inflateInit2(&zs, 15 + 32) != Z_OK) fail(ErrorKind::kInternal, what + ": inflateInit2 failed");
  zs.next_in = const_cast<Bytef*>(data);
  zs.avail_in = uInt(size);
  zs.next_out = out;
  zs.avail_out = uInt(expected);
  int rc = inflate(&zs, Z_FINISH);
  size_t produced = expected - zs.avail_out;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    if (rc == Z_BUF_ERROR && zs.avail_out == 0)
      fail_corrupt(what + ": GZIP page decompresses to more than the page header's " +
                   std::to_string(expected) + " bytes");
    fail_corrupt(what + ": invalid GZIP data (zlib error " + std::to_string(rc) + ")");
  }
  if (produced != expected) size_mismatch(what, "GZIP", produced, expected);
}

}  // namespace

void decompress(Codec codec, const uint8_t* data, size_t size, uint8_t* out, size_t expected_size,
                const std::string& what) {
  switch (codec) {
    case Codec::kUncompressed:
      if (size != expected_size) size_mismatch(what, "uncompressed", size, expected_size);
      if (size > 0) std::memcpy(out, data, size);
      return;
    case Codec::kSnappy: {
      size_t n = 0;
      if (!snappy::GetUncompressedLength(reinterpret_cast<const char*>(data), size, &n))
        fail_corrupt(what + ": invalid SNAPPY data (bad length header)");
      if (n != expected_size) size_mismatch(what, "SNAPPY", n, expected_size);
      if (!snappy::RawUncompress(reinterpret_cast<const char*>(data), size, reinterpret_cast<char*>(out)))
        fail_corrupt(what + ": invalid SNAPPY data");
      return;
    }
    case Codec::kGzip:
      gunzip(data, size, out, expected_size, what);
      return;
    case Codec::kZstd: {
      size_t n = ZSTD_decompress(out, expected_size, data, size);
      if (ZSTD_isError(n)) fail_corrupt(what + ": invalid ZSTD data: " + ZSTD_getErrorName(n));
      if (n != expected_size) size_mismatch(what, "ZSTD", n, expected_size);
      return;
    }
    default:
      fail_unsupported(what + ": compression codec " + codec_name(codec) +
                       " is not supported (ember reads UNCOMPRESSED, SNAPPY, GZIP and ZSTD)");
  }
}

void compress(Codec codec, const uint8_t* data, size_t size, std::vector<uint8_t>& out) {
  switch (codec) {
    case Codec::kUncompressed:
      out.assign(data, data + size);
      return;
    case Codec::kSnappy: {
      out.resize(snappy::MaxCompressedLength(size));
      size_t n = 0;
      snappy::RawCompress(reinterpret_cast<const char*>(data), size, reinterpret_cast<char*>(out.data()), &n);
      out.resize(n);
      return;
    }
    case Codec::kZstd: {
      out.resize(ZSTD_compressBound(size));
      size_t n = ZSTD_compress(out.data(), out.size(), data, size, 3);
      if (ZSTD_isError(n)) fail(ErrorKind::kInternal, std::string("ZSTD_compress: ") + ZSTD_getErrorName(n));
      out.resize(n);
      return;
    }
    default:
      fail(ErrorKind::kInvalidArgument, std::string("the Parquet writer does not support codec ") + codec_name(codec));
  }
}

}  // namespace ember::io::parquet
