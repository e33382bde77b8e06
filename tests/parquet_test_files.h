// Builds small Parquet files in memory, page by page, for the bad-input tests and the fuzzer's
// seed corpus (fuzz/make_seeds.cc). Every byte is spelled out by the caller, so a test can
// write exactly the malformed page or footer it wants to check:
//
//   testfile::Column c = testfile::flat("x", PhysicalType::kInt32);
//   c.chunks.push_back(testfile::chunk({testfile::data_page(3, testfile::plain_i32({1, 2, 3}))}));
//   std::vector<uint8_t> bytes = testfile::build({.columns = {c}, .row_group_rows = {3}});
//
// Header-only; links zlib for GZIP pages.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ember/core/error.h"
#include "ember/io/parquet/compression.h"
#include "ember/io/parquet/encoding.h"
#include "ember/io/parquet/format.h"
#include "ember/io/parquet/thrift.h"

namespace ember::io::parquet::testfile {

using Bytes = std::vector<uint8_t>;

// ---- value and level encoders ----

template <class T>
Bytes plain(const std::vector<T>& v) {
  Bytes out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}
inline Bytes plain_i32(const std::vector<int32_t>& v) { return plain(v); }
inline Bytes plain_i64(const std::vector<int64_t>& v) { return plain(v); }
inline Bytes plain_f32(const std::vector<float>& v) { return plain(v); }
inline Bytes plain_f64(const std::vector<double>& v) { return plain(v); }

// BYTE_ARRAY: each value prefixed by its 4-byte little-endian length.
inline Bytes plain_bytes(const std::vector<std::string>& v) {
  Bytes out;
  for (const std::string& s : v) {
    uint32_t n = uint32_t(s.size());
    out.insert(out.end(), reinterpret_cast<uint8_t*>(&n), reinterpret_cast<uint8_t*>(&n) + 4);
    out.insert(out.end(), s.begin(), s.end());
  }
  return out;
}

// FIXED_LEN_BYTE_ARRAY: the values back to back.
inline Bytes plain_fixed(const std::vector<std::string>& v) {
  Bytes out;
  for (const std::string& s : v) out.insert(out.end(), s.begin(), s.end());
  return out;
}

// BOOLEAN: one bit per value, LSB first.
inline Bytes plain_bools(const std::vector<bool>& v) {
  Bytes out((v.size() + 7) / 8, 0);
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i]) out[i / 8] |= uint8_t(1u << (i % 8));
  return out;
}

// The RLE / bit-packed hybrid, without a length prefix.
inline Bytes rle(const std::vector<uint32_t>& v, int bit_width) {
  RleEncoder enc(bit_width);
  for (uint32_t x : v) enc.put(x);
  return enc.finish();
}

// The hybrid with the 4-byte length prefix of v1 levels and RLE booleans.
inline Bytes rle_prefixed(const std::vector<uint32_t>& v, int bit_width) {
  Bytes body = rle(v, bit_width);
  uint32_t n = uint32_t(body.size());
  Bytes out(reinterpret_cast<uint8_t*>(&n), reinterpret_cast<uint8_t*>(&n) + 4);
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

// RLE_DICTIONARY indices: one bit-width byte, then the hybrid.
inline Bytes dict_indices(const std::vector<uint32_t>& v, int bit_width) {
  Bytes out{uint8_t(bit_width)};
  Bytes body = rle(v, bit_width);
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

inline void put_uleb(Bytes& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(uint8_t(v) | 0x80);
    v >>= 7;
  }
  out.push_back(uint8_t(v));
}
inline void put_zigzag(Bytes& out, int64_t v) { put_uleb(out, (uint64_t(v) << 1) ^ uint64_t(v >> 63)); }

// DELTA_BINARY_PACKED with blocks of 128 values in 4 miniblocks of 32; `width` is 4 for
// INT32 (deltas wrap at 32 bits) or 8 for INT64.
inline Bytes delta_binary_packed(const std::vector<int64_t>& v, int width = 8) {
  const uint64_t mask = width == 4 ? 0xffffffffull : ~0ull;
  Bytes out;
  put_uleb(out, 128);
  put_uleb(out, 4);
  put_uleb(out, v.size());
  put_zigzag(out, v.empty() ? 0 : v[0]);
  for (size_t start = 1; start < v.size(); start += 128) {
    size_t end = std::min(v.size(), start + 128);
    std::vector<uint64_t> deltas;
    for (size_t i = start; i < end; ++i) deltas.push_back((uint64_t(v[i]) - uint64_t(v[i - 1])) & mask);
    // the minimum as a signed delta of the column's width
    int64_t min_delta = 0;
    for (size_t i = 0; i < deltas.size(); ++i) {
      int64_t d = width == 4 ? int64_t(int32_t(uint32_t(deltas[i]))) : int64_t(deltas[i]);
      if (i == 0 || d < min_delta) min_delta = d;
    }
    put_zigzag(out, min_delta);
    std::vector<uint64_t> rel(128, 0);
    for (size_t i = 0; i < deltas.size(); ++i) rel[i] = (deltas[i] - uint64_t(min_delta)) & mask;
    int widths[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < deltas.size(); ++i)
      while (widths[i / 32] < 64 && (rel[i] >> widths[i / 32]) != 0) ++widths[i / 32];
    for (int w : widths) out.push_back(uint8_t(w));
    for (size_t m = 0; m * 32 < deltas.size(); ++m) {
      size_t at = out.size();
      out.resize(at + size_t(widths[m]) * 4, 0);
      for (size_t i = 0; i < 32; ++i)
        for (int b = 0; b < widths[m]; ++b)
          if (rel[m * 32 + i] >> b & 1) {
            size_t bit = i * size_t(widths[m]) + size_t(b);
            out[at + bit / 8] |= uint8_t(1u << (bit % 8));
          }
    }
  }
  return out;
}

inline Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// ---- pages, chunks, files ----

struct Page {
  PageType type = PageType::kDataPage;
  int32_t num_values = 0;
  Encoding encoding = Encoding::kPlain;
  // v1 and dictionary pages: the uncompressed page (v1: rep levels, def levels, values).
  // v2: the uncompressed values only.
  Bytes body;
  // v2 only: repetition and definition levels (never compressed).
  Bytes rep_levels, def_levels;
  int32_t num_nulls = 0, num_rows = 0;
  bool is_compressed = true;
  Encoding level_encoding = Encoding::kRle;  // v1: both levels' stated encoding
  // overrides of the sizes the page header states
  std::optional<int32_t> compressed_size, uncompressed_size;
};

inline Page data_page(int32_t n, Bytes body, Encoding enc = Encoding::kPlain) {
  Page p;
  p.num_values = n;
  p.encoding = enc;
  p.body = std::move(body);
  return p;
}
inline Page dict_page(int32_t n, Bytes values) {
  Page p = data_page(n, std::move(values));
  p.type = PageType::kDictionaryPage;
  return p;
}
inline Page data_page_v2(int32_t n, int32_t rows, Bytes values, Encoding enc = Encoding::kPlain, Bytes def = {},
                         Bytes rep = {}) {
  Page p = data_page(n, std::move(values), enc);
  p.type = PageType::kDataPageV2;
  p.num_rows = rows;
  p.def_levels = std::move(def);
  p.rep_levels = std::move(rep);
  return p;
}

struct Chunk {
  Codec codec = Codec::kUncompressed;
  std::vector<Page> pages;
  std::optional<int64_t> num_values;  // default: the data pages' num_values summed
};

inline Chunk chunk(std::vector<Page> pages, Codec codec = Codec::kUncompressed) {
  Chunk c;
  c.codec = codec;
  c.pages = std::move(pages);
  return c;
}

// One top-level column: its schema elements (top node first, groups with num_children set)
// and one chunk per row group. Only columns with a single leaf are built this way; a struct
// of several leaves is spelled as several Columns sharing one group (see `extra_leaves`).
struct Column {
  std::vector<SchemaElement> schema;
  std::vector<Chunk> chunks;
  // further leaves under the same top-level group (struct fields): schema elements after
  // the first leaf's, and their chunks per row group
  struct Leaf {
    std::vector<SchemaElement> schema;
    std::vector<Chunk> chunks;
  };
  std::vector<Leaf> extra_leaves;
};

struct FileSpec {
  std::vector<Column> columns;
  std::vector<int64_t> row_group_rows;
};

inline SchemaElement leaf_element(std::string name, PhysicalType t, Repetition r = Repetition::kRequired) {
  SchemaElement e;
  e.name = std::move(name);
  e.type = t;
  e.repetition = r;
  return e;
}
inline SchemaElement group_element(std::string name, int32_t children, Repetition r = Repetition::kRequired) {
  SchemaElement e;
  e.name = std::move(name);
  e.num_children = children;
  e.repetition = r;
  return e;
}

// A primitive top-level column.
inline Column flat(std::string name, PhysicalType t, Repetition r = Repetition::kRequired) {
  Column c;
  c.schema.push_back(leaf_element(std::move(name), t, r));
  return c;
}

// A three-level LIST column: optional group name (LIST) { repeated group list { element } }.
inline Column list_of(std::string name, PhysicalType t, Repetition elem = Repetition::kOptional) {
  Column c;
  SchemaElement top = group_element(std::move(name), 1, Repetition::kOptional);
  top.converted_type = kList;
  top.logical_type = kLogicalList;
  c.schema = {top, group_element("list", 1, Repetition::kRepeated), leaf_element("element", t, elem)};
  return c;
}

inline Bytes gzip(const Bytes& in) {
  z_stream zs{};
  if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2");
  Bytes out(deflateBound(&zs, uLong(in.size())) + 32);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = uInt(in.size());
  zs.next_out = out.data();
  zs.avail_out = uInt(out.size());
  int rc = deflate(&zs, Z_FINISH);
  out.resize(size_t(zs.total_out));
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate");
  return out;
}

inline Bytes compress_with(Codec codec, const Bytes& in) {
  if (codec == Codec::kGzip) return gzip(in);
  Bytes out;
  compress(codec, in.data(), in.size(), out);
  return out;
}

// The Thrift PageHeader, including DataPageHeaderV2 (which format.h's encoder leaves out).
inline Bytes page_header(const Page& p, int32_t uncompressed, int32_t compressed) {
  thrift::Writer w;
  w.begin_struct();
  w.field_i32(1, int32_t(p.type));
  w.field_i32(2, p.uncompressed_size.value_or(uncompressed));
  w.field_i32(3, p.compressed_size.value_or(compressed));
  if (p.type == PageType::kDataPage) {
    w.field_struct_begin(5);
    w.field_i32(1, p.num_values);
    w.field_i32(2, int32_t(p.encoding));
    w.field_i32(3, int32_t(p.level_encoding));
    w.field_i32(4, int32_t(p.level_encoding));
    w.end_struct();
  } else if (p.type == PageType::kDictionaryPage) {
    w.field_struct_begin(7);
    w.field_i32(1, p.num_values);
    w.field_i32(2, int32_t(p.encoding));
    w.end_struct();
  } else if (p.type == PageType::kDataPageV2) {
    w.field_struct_begin(8);
    w.field_i32(1, p.num_values);
    w.field_i32(2, p.num_nulls);
    w.field_i32(3, p.num_rows);
    w.field_i32(4, int32_t(p.encoding));
    w.field_i32(5, int32_t(p.def_levels.size()));
    w.field_i32(6, int32_t(p.rep_levels.size()));
    w.field_bool(7, p.is_compressed);
    w.end_struct();
  }
  w.end_struct();
  return w.take();
}

// Appends the chunk's pages to `file` and returns its metadata.
inline ColumnChunk write_chunk(Bytes& file, const Chunk& c, PhysicalType type, std::vector<std::string> path) {
  ColumnChunk cc;
  ColumnMetaData& m = cc.meta_data;
  cc.has_meta_data = true;
  m.type = type;
  m.codec = c.codec;
  m.path_in_schema = std::move(path);
  int64_t start = int64_t(file.size()), values = 0;
  bool first_data = true;
  for (const Page& p : c.pages) {
    Bytes stored;
    int32_t uncompressed;
    if (p.type == PageType::kDataPageV2) {
      Bytes values_bytes = p.is_compressed && c.codec != Codec::kUncompressed ? compress_with(c.codec, p.body) : p.body;
      stored = concat({p.rep_levels, p.def_levels, values_bytes});
      uncompressed = int32_t(p.rep_levels.size() + p.def_levels.size() + p.body.size());
    } else {
      stored = compress_with(c.codec, p.body);
      uncompressed = int32_t(p.body.size());
    }
    if (p.type == PageType::kDictionaryPage) {
      m.dictionary_page_offset = int64_t(file.size());
    } else if (first_data) {
      m.data_page_offset = int64_t(file.size());
      first_data = false;
    }
    if (p.type != PageType::kDictionaryPage) values += p.num_values;
    bool seen = false;
    for (Encoding e : m.encodings) seen |= e == p.encoding;
    if (!seen) m.encodings.push_back(p.encoding);
    Bytes h = page_header(p, uncompressed, int32_t(stored.size()));
    file.insert(file.end(), h.begin(), h.end());
    file.insert(file.end(), stored.begin(), stored.end());
    m.total_uncompressed_size += int64_t(h.size()) + uncompressed;
  }
  if (first_data) m.data_page_offset = start;
  m.num_values = c.num_values.value_or(values);
  m.total_compressed_size = int64_t(file.size()) - start;
  cc.file_offset = start;
  return cc;
}

// Builds the whole file. `edit` may change the footer before it is encoded (e.g. to state
// an unsupported codec or a wrong offset).
inline Bytes build(const FileSpec& spec, const std::function<void(FileMetaData&)>& edit = {}) {
  Bytes file = {'P', 'A', 'R', '1'};
  FileMetaData meta;
  meta.created_by = "ember testfile";
  SchemaElement root = group_element("schema", int32_t(spec.columns.size()));
  root.repetition.reset();
  meta.schema.push_back(root);
  struct LeafRef {
    const std::vector<Chunk>* chunks;
    PhysicalType type;
    std::vector<std::string> path;
  };
  std::vector<LeafRef> leaves;
  for (const Column& c : spec.columns) {
    std::vector<std::string> path;
    for (const SchemaElement& e : c.schema) {
      meta.schema.push_back(e);
      path.push_back(e.name);
    }
    leaves.push_back({&c.chunks, *c.schema.back().type, path});
    for (const Column::Leaf& l : c.extra_leaves) {
      std::vector<std::string> p(path.begin(), path.end() - 1);
      for (const SchemaElement& e : l.schema) {
        meta.schema.push_back(e);
        p.push_back(e.name);
      }
      leaves.push_back({&l.chunks, *l.schema.back().type, p});
    }
  }
  for (size_t g = 0; g < spec.row_group_rows.size(); ++g) {
    RowGroup rg;
    rg.num_rows = spec.row_group_rows[g];
    for (const LeafRef& l : leaves) rg.columns.push_back(write_chunk(file, (*l.chunks)[g], l.type, l.path));
    for (const ColumnChunk& c : rg.columns) rg.total_byte_size += c.meta_data.total_uncompressed_size;
    meta.num_rows += rg.num_rows;
    meta.row_groups.push_back(std::move(rg));
  }
  if (edit) edit(meta);
  Bytes footer = encode_file_metadata(meta);
  file.insert(file.end(), footer.begin(), footer.end());
  uint32_t n = uint32_t(footer.size());
  file.insert(file.end(), reinterpret_cast<uint8_t*>(&n), reinterpret_cast<uint8_t*>(&n) + 4);
  for (char ch : {'P', 'A', 'R', '1'}) file.push_back(uint8_t(ch));
  return file;
}

}  // namespace ember::io::parquet::testfile
