#include "ember/io/parquet/format.h"

#include "ember/core/error.h"
#include "ember/io/parquet/thrift.h"

namespace ember::io::parquet {

using thrift::FieldHeader;
using thrift::ListHeader;
using thrift::Reader;
using thrift::Writer;

const char* encoding_name(Encoding e) {
  switch (e) {
    case Encoding::kPlain: return "PLAIN";
    case Encoding::kPlainDictionary: return "PLAIN_DICTIONARY";
    case Encoding::kRle: return "RLE";
    case Encoding::kBitPacked: return "BIT_PACKED";
    case Encoding::kDeltaBinaryPacked: return "DELTA_BINARY_PACKED";
    case Encoding::kDeltaLengthByteArray: return "DELTA_LENGTH_BYTE_ARRAY";
    case Encoding::kDeltaByteArray: return "DELTA_BYTE_ARRAY";
    case Encoding::kRleDictionary: return "RLE_DICTIONARY";
    case Encoding::kByteStreamSplit: return "BYTE_STREAM_SPLIT";
  }
  return "UNKNOWN_ENCODING";
}

const char* codec_name(Codec c) {
  switch (c) {
    case Codec::kUncompressed: return "UNCOMPRESSED";
    case Codec::kSnappy: return "SNAPPY";
    case Codec::kGzip: return "GZIP";
    case Codec::kLzo: return "LZO";
    case Codec::kBrotli: return "BROTLI";
    case Codec::kLz4: return "LZ4";
    case Codec::kZstd: return "ZSTD";
    case Codec::kLz4Raw: return "LZ4_RAW";
  }
  return "UNKNOWN_CODEC";
}

const char* physical_type_name(PhysicalType t) {
  switch (t) {
    case PhysicalType::kBoolean: return "BOOLEAN";
    case PhysicalType::kInt32: return "INT32";
    case PhysicalType::kInt64: return "INT64";
    case PhysicalType::kInt96: return "INT96";
    case PhysicalType::kFloat: return "FLOAT";
    case PhysicalType::kDouble: return "DOUBLE";
    case PhysicalType::kByteArray: return "BYTE_ARRAY";
    case PhysicalType::kFixedLenByteArray: return "FIXED_LEN_BYTE_ARRAY";
  }
  return "UNKNOWN_TYPE";
}

namespace {

// Reads a struct field by field; `on_field` returns false for fields it did not consume,
// which are then skipped. Fields of an unexpected wire type are skipped as well.
template <class F>
void read_struct(Reader& r, F&& on_field) {
  r.begin_struct();
  FieldHeader f;
  while (r.next_field(f)) {
    if (!on_field(f)) r.skip(f.type);
  }
  r.end_struct();
}

bool is_int(const FieldHeader& f) {
  return f.type == thrift::kI32 || f.type == thrift::kI64 || f.type == thrift::kI16 || f.type == thrift::kByte;
}
int32_t read_int32(Reader& r, const FieldHeader& f) {
  return f.type == thrift::kByte ? r.read_i8() : r.read_i32();
}
template <class E>
E read_enum(Reader& r, const FieldHeader& f) { return static_cast<E>(read_int32(r, f)); }

template <class F>
void read_list(Reader& r, uint8_t elem_type, F&& on_elem) {
  ListHeader h = r.read_list_header();
  if (h.size > 0 && h.elem_type != elem_type)
    r.corrupt("list of element type " + std::to_string(h.elem_type) + ", expected " + std::to_string(elem_type));
  for (uint32_t i = 0; i < h.size; ++i) on_elem();
}

void read_logical_type(Reader& r, SchemaElement& e) {
  read_struct(r, [&](const FieldHeader& f) {
    if (f.type != thrift::kStruct) return false;
    e.logical_type = f.id;
    if (f.id == kLogicalInteger) {
      read_struct(r, [&](const FieldHeader& g) {
        if (g.id == 1 && g.type == thrift::kByte) { e.int_bit_width = r.read_i8(); return true; }
        if (g.id == 2 && (g.type == thrift::kTrue || g.type == thrift::kFalse)) { e.int_signed = r.read_bool(g); return true; }
        return false;
      });
      return true;
    }
    return false;  // other members' contents are skipped
  });
}

SchemaElement read_schema_element(Reader& r) {
  SchemaElement e;
  read_struct(r, [&](const FieldHeader& f) {
    switch (f.id) {
      case 1: if (!is_int(f)) return false; e.type = read_enum<PhysicalType>(r, f); return true;
      case 2: if (!is_int(f)) return false; e.type_length = read_int32(r, f); return true;
      case 3: if (!is_int(f)) return false; e.repetition = read_enum<Repetition>(r, f); return true;
      case 4: if (f.type != thrift::kBinary) return false; e.name = r.read_binary(); return true;
      case 5: if (!is_int(f)) return false; e.num_children = read_int32(r, f); return true;
      case 6: if (!is_int(f)) return false; e.converted_type = read_int32(r, f); return true;
      case 10: if (f.type != thrift::kStruct) return false; read_logical_type(r, e); return true;
      default: return false;
    }
  });
  return e;
}

ColumnMetaData read_column_meta(Reader& r) {
  ColumnMetaData m;
  read_struct(r, [&](const FieldHeader& f) {
    switch (f.id) {
      case 1: if (!is_int(f)) return false; m.type = read_enum<PhysicalType>(r, f); return true;
      case 2: if (f.type != thrift::kList) return false;
        read_list(r, thrift::kI32, [&] { m.encodings.push_back(static_cast<Encoding>(r.read_i32())); });
        return true;
      case 3: if (f.type != thrift::kList) return false;
        read_list(r, thrift::kBinary, [&] { m.path_in_schema.push_back(r.read_binary()); });
        return true;
      case 4: if (!is_int(f)) return false; m.codec = read_enum<Codec>(r, f); return true;
      case 5: if (!is_int(f)) return false; m.num_values = r.read_i64(); return true;
      case 6: if (!is_int(f)) return false; m.total_uncompressed_size = r.read_i64(); return true;
      case 7: if (!is_int(f)) return false; m.total_compressed_size = r.read_i64(); return true;
      case 9: if (!is_int(f)) return false; m.data_page_offset = r.read_i64(); return true;
      case 11: if (!is_int(f)) return false; m.dictionary_page_offset = r.read_i64(); return true;
      default: return false;
    }
  });
  return m;
}

ColumnChunk read_column_chunk(Reader& r) {
  ColumnChunk c;
  read_struct(r, [&](const FieldHeader& f) {
    switch (f.id) {
      case 1: if (f.type != thrift::kBinary) return false; c.file_path = r.read_binary(); return true;
      case 2: if (!is_int(f)) return false; c.file_offset = r.read_i64(); return true;
      case 3: if (f.type != thrift::kStruct) return false;
        c.meta_data = read_column_meta(r);
        c.has_meta_data = true;
        return true;
      default: return false;
    }
  });
  return c;
}

RowGroup read_row_group(Reader& r) {
  RowGroup g;
  read_struct(r, [&](const FieldHeader& f) {
    switch (f.id) {
      case 1: if (f.type != thrift::kList) return false;
        read_list(r, thrift::kStruct, [&] { g.columns.push_back(read_column_chunk(r)); });
        return true;
      case 2: if (!is_int(f)) return false; g.total_byte_size = r.read_i64(); return true;
      case 3: if (!is_int(f)) return false; g.num_rows = r.read_i64(); return true;
      default: return false;
    }
  });
  return g;
}

}  // namespace

FileMetaData decode_file_metadata(const uint8_t* data, size_t size, const std::string& what) {
  Reader r(data, size, what + ": footer");
  FileMetaData m;
  read_struct(r, [&](const FieldHeader& f) {
    switch (f.id) {
      case 1: if (!is_int(f)) return false; m.version = read_int32(r, f); return true;
      case 2: if (f.type != thrift::kList) return false;
        read_list(r, thrift::kStruct, [&] { m.schema.push_back(read_schema_element(r)); });
        return true;
      case 3: if (!is_int(f)) return false; m.num_rows = r.read_i64(); return true;
      case 4: if (f.type != thrift::kList) return false;
        read_list(r, thrift::kStruct, [&] { m.row_groups.push_back(read_row_group(r)); });
        return true;
      case 5: if (f.type != thrift::kList) return false;
        read_list(r, thrift::kStruct, [&] {
          KeyValue kv;
          read_struct(r, [&](const FieldHeader& g) {
            if (g.type != thrift::kBinary) return false;
            if (g.id == 1) kv.key = r.read_binary();
            else if (g.id == 2) kv.value = r.read_binary();
            else return false;
            return true;
          });
          m.key_value_metadata.push_back(std::move(kv));
        });
        return true;
      case 6: if (f.type != thrift::kBinary) return false; m.created_by = r.read_binary(); return true;
      default: return false;
    }
  });
  return m;
}

PageHeader decode_page_header(const uint8_t* data, size_t size, const std::string& what, size_t* consumed) {
  Reader r(data, size, what);
  PageHeader h;
  read_struct(r, [&](const FieldHeader& f) {
    switch (f.id) {
      case 1: if (!is_int(f)) return false; h.type = read_enum<PageType>(r, f); return true;
      case 2: if (!is_int(f)) return false; h.uncompressed_page_size = r.read_i32(); return true;
      case 3: if (!is_int(f)) return false; h.compressed_page_size = r.read_i32(); return true;
      case 5: {
        if (f.type != thrift::kStruct) return false;
        DataPageHeader d;
        read_struct(r, [&](const FieldHeader& g) {
          if (!is_int(g)) return false;
          switch (g.id) {
            case 1: d.num_values = r.read_i32(); return true;
            case 2: d.encoding = read_enum<Encoding>(r, g); return true;
            case 3: d.definition_level_encoding = read_enum<Encoding>(r, g); return true;
            case 4: d.repetition_level_encoding = read_enum<Encoding>(r, g); return true;
            default: return false;
          }
        });
        h.data_page = d;
        return true;
      }
      case 7: {
        if (f.type != thrift::kStruct) return false;
        DictionaryPageHeader d;
        read_struct(r, [&](const FieldHeader& g) {
          if (!is_int(g)) return false;
          if (g.id == 1) d.num_values = r.read_i32();
          else if (g.id == 2) d.encoding = read_enum<Encoding>(r, g);
          else return false;
          return true;
        });
        h.dictionary_page = d;
        return true;
      }
      case 8: {
        if (f.type != thrift::kStruct) return false;
        DataPageHeaderV2 d;
        read_struct(r, [&](const FieldHeader& g) {
          if (g.id == 7 && (g.type == thrift::kTrue || g.type == thrift::kFalse)) {
            d.is_compressed = r.read_bool(g);
            return true;
          }
          if (!is_int(g)) return false;
          switch (g.id) {
            case 1: d.num_values = r.read_i32(); return true;
            case 2: d.num_nulls = r.read_i32(); return true;
            case 3: d.num_rows = r.read_i32(); return true;
            case 4: d.encoding = read_enum<Encoding>(r, g); return true;
            case 5: d.definition_levels_byte_length = r.read_i32(); return true;
            case 6: d.repetition_levels_byte_length = r.read_i32(); return true;
            default: return false;
          }
        });
        h.data_page_v2 = d;
        return true;
      }
      default: return false;
    }
  });
  *consumed = r.position();
  return h;
}

// ---- encoders ----

namespace {

void write_schema_element(Writer& w, const SchemaElement& e) {
  w.list_struct_begin();
  if (e.type) w.field_i32(1, int32_t(*e.type));
  if (e.type == PhysicalType::kFixedLenByteArray) w.field_i32(2, e.type_length);
  if (e.repetition) w.field_i32(3, int32_t(*e.repetition));
  w.field_binary(4, e.name);
  if (!e.type) w.field_i32(5, e.num_children);
  if (e.converted_type) w.field_i32(6, *e.converted_type);
  if (e.logical_type != kLogicalNone) {
    w.field_struct_begin(10);
    w.field_struct_begin(int16_t(e.logical_type));
    if (e.logical_type == kLogicalInteger) {
      w.field_i8(1, int8_t(e.int_bit_width));  // IntType { 1: i8 bitWidth, 2: bool isSigned }
      w.field_bool(2, e.int_signed);
    }
    w.end_struct();
    w.end_struct();
  }
  w.end_struct();
}

void write_column_chunk(Writer& w, const ColumnChunk& c) {
  w.list_struct_begin();
  w.field_i64(2, c.file_offset);
  w.field_struct_begin(3);
  const ColumnMetaData& m = c.meta_data;
  w.field_i32(1, int32_t(m.type));
  w.field_list_begin(2, thrift::kI32, uint32_t(m.encodings.size()));
  for (Encoding e : m.encodings) w.i32(int32_t(e));
  w.field_list_begin(3, thrift::kBinary, uint32_t(m.path_in_schema.size()));
  for (const std::string& p : m.path_in_schema) w.binary(p);
  w.field_i32(4, int32_t(m.codec));
  w.field_i64(5, m.num_values);
  w.field_i64(6, m.total_uncompressed_size);
  w.field_i64(7, m.total_compressed_size);
  w.field_i64(9, m.data_page_offset);
  if (m.dictionary_page_offset) w.field_i64(11, *m.dictionary_page_offset);
  w.end_struct();
  w.end_struct();
}

}  // namespace

std::vector<uint8_t> encode_file_metadata(const FileMetaData& m) {
  Writer w;
  w.begin_struct();
  w.field_i32(1, m.version);
  w.field_list_begin(2, thrift::kStruct, uint32_t(m.schema.size()));
  for (const SchemaElement& e : m.schema) write_schema_element(w, e);
  w.field_i64(3, m.num_rows);
  w.field_list_begin(4, thrift::kStruct, uint32_t(m.row_groups.size()));
  for (const RowGroup& g : m.row_groups) {
    w.list_struct_begin();
    w.field_list_begin(1, thrift::kStruct, uint32_t(g.columns.size()));
    for (const ColumnChunk& c : g.columns) write_column_chunk(w, c);
    w.field_i64(2, g.total_byte_size);
    w.field_i64(3, g.num_rows);
    w.end_struct();
  }
  if (!m.key_value_metadata.empty()) {
    w.field_list_begin(5, thrift::kStruct, uint32_t(m.key_value_metadata.size()));
    for (const KeyValue& kv : m.key_value_metadata) {
      w.list_struct_begin();
      w.field_binary(1, kv.key);
      w.field_binary(2, kv.value);
      w.end_struct();
    }
  }
  if (!m.created_by.empty()) w.field_binary(6, m.created_by);
  w.end_struct();
  return w.take();
}

std::vector<uint8_t> encode_page_header(const PageHeader& h) {
  Writer w;
  w.begin_struct();
  w.field_i32(1, int32_t(h.type));
  w.field_i32(2, h.uncompressed_page_size);
  w.field_i32(3, h.compressed_page_size);
  if (h.data_page) {
    w.field_struct_begin(5);
    w.field_i32(1, h.data_page->num_values);
    w.field_i32(2, int32_t(h.data_page->encoding));
    w.field_i32(3, int32_t(h.data_page->definition_level_encoding));
    w.field_i32(4, int32_t(h.data_page->repetition_level_encoding));
    w.end_struct();
  }
  if (h.dictionary_page) {
    w.field_struct_begin(7);
    w.field_i32(1, h.dictionary_page->num_values);
    w.field_i32(2, int32_t(h.dictionary_page->encoding));
    w.end_struct();
  }
  w.end_struct();
  return w.take();
}

}  // namespace ember::io::parquet
