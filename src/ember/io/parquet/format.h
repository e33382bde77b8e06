// Parquet's file metadata (parquet.thrift), the subset ember reads and writes.
// Field ids and enum values are those of the Apache Parquet format specification.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ember::io::parquet {

enum class PhysicalType : int32_t {
  kBoolean = 0, kInt32 = 1, kInt64 = 2, kInt96 = 3, kFloat = 4, kDouble = 5,
  kByteArray = 6, kFixedLenByteArray = 7,
};
enum class Repetition : int32_t { kRequired = 0, kOptional = 1, kRepeated = 2 };
enum class Encoding : int32_t {
  kPlain = 0, kPlainDictionary = 2, kRle = 3, kBitPacked = 4, kDeltaBinaryPacked = 5,
  kDeltaLengthByteArray = 6, kDeltaByteArray = 7, kRleDictionary = 8, kByteStreamSplit = 9,
};
enum class Codec : int32_t {
  kUncompressed = 0, kSnappy = 1, kGzip = 2, kLzo = 3, kBrotli = 4, kLz4 = 5, kZstd = 6, kLz4Raw = 7,
};
enum class PageType : int32_t { kDataPage = 0, kIndexPage = 1, kDictionaryPage = 2, kDataPageV2 = 3 };
// ConvertedType values used by ember.
enum ConvertedType : int32_t {
  kUtf8 = 0, kMap = 1, kMapKeyValue = 2, kList = 3, kEnum = 4, kDecimal = 5, kDate = 6,
  kTimeMillis = 7, kTimeMicros = 8, kTimestampMillis = 9, kTimestampMicros = 10,
  kUint8 = 11, kUint16 = 12, kUint32 = 13, kUint64 = 14, kInt8 = 15, kInt16 = 16, kInt32 = 17,
  kInt64 = 18, kJson = 19, kBson = 20, kInterval = 21,
};
// LogicalType union member ids (field ids of the LogicalType struct).
enum LogicalTypeId : int32_t {
  kLogicalNone = 0, kLogicalString = 1, kLogicalMap = 2, kLogicalList = 3, kLogicalEnum = 4,
  kLogicalDecimal = 5, kLogicalDate = 6, kLogicalTime = 7, kLogicalTimestamp = 8,
  kLogicalInteger = 10, kLogicalUnknown = 11, kLogicalJson = 12, kLogicalBson = 13,
  kLogicalUuid = 14, kLogicalFloat16 = 15, kLogicalVariant = 16, kLogicalGeometry = 17,
  kLogicalGeography = 18,
};

const char* encoding_name(Encoding e);
const char* codec_name(Codec c);
const char* physical_type_name(PhysicalType t);

struct SchemaElement {
  std::optional<PhysicalType> type;  // absent for groups
  int32_t type_length = 0;
  std::optional<Repetition> repetition;
  std::string name;
  int32_t num_children = 0;
  std::optional<int32_t> converted_type;
  int32_t logical_type = kLogicalNone;
  int32_t int_bit_width = 0;  // LogicalType INTEGER
  bool int_signed = true;
};

struct ColumnMetaData {
  PhysicalType type = PhysicalType::kBoolean;
  std::vector<Encoding> encodings;
  std::vector<std::string> path_in_schema;
  Codec codec = Codec::kUncompressed;
  int64_t num_values = 0;
  int64_t total_uncompressed_size = 0;
  int64_t total_compressed_size = 0;
  int64_t data_page_offset = 0;
  std::optional<int64_t> dictionary_page_offset;
};

struct ColumnChunk {
  std::string file_path;  // non-empty: the chunk lives in another file (unsupported)
  int64_t file_offset = 0;
  bool has_meta_data = false;
  ColumnMetaData meta_data;
};

struct RowGroup {
  std::vector<ColumnChunk> columns;
  int64_t total_byte_size = 0;
  int64_t num_rows = 0;
};

struct KeyValue {
  std::string key;
  std::string value;
};

struct FileMetaData {
  int32_t version = 1;
  std::vector<SchemaElement> schema;
  int64_t num_rows = 0;
  std::vector<RowGroup> row_groups;
  std::vector<KeyValue> key_value_metadata;
  std::string created_by;
};

struct DataPageHeader {
  int32_t num_values = 0;
  Encoding encoding = Encoding::kPlain;
  Encoding definition_level_encoding = Encoding::kRle;
  Encoding repetition_level_encoding = Encoding::kRle;
};

struct DictionaryPageHeader {
  int32_t num_values = 0;
  Encoding encoding = Encoding::kPlain;
};

struct DataPageHeaderV2 {
  int32_t num_values = 0;
  int32_t num_nulls = 0;
  int32_t num_rows = 0;
  Encoding encoding = Encoding::kPlain;
  int32_t definition_levels_byte_length = 0;
  int32_t repetition_levels_byte_length = 0;
  bool is_compressed = true;
};

struct PageHeader {
  PageType type = PageType::kDataPage;
  int32_t uncompressed_page_size = 0;
  int32_t compressed_page_size = 0;
  std::optional<DataPageHeader> data_page;
  std::optional<DictionaryPageHeader> dictionary_page;
  std::optional<DataPageHeaderV2> data_page_v2;
};

// Decoders. `what` names the file for error messages. decode_page_header sets *consumed to
// the header's size in bytes.
FileMetaData decode_file_metadata(const uint8_t* data, size_t size, const std::string& what);
PageHeader decode_page_header(const uint8_t* data, size_t size, const std::string& what, size_t* consumed);

// Encoders (the writer's side).
std::vector<uint8_t> encode_file_metadata(const FileMetaData& m);
std::vector<uint8_t> encode_page_header(const PageHeader& h);

}  // namespace ember::io::parquet
