// Malformed and unsupported Parquet input: every case raises ember::Error of the right kind,
// with a message that names the file (and the column where there is one), and none crashes.
// Files are fixtures patched in memory or built page by page with parquet_test_files.h.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <initializer_list>
#include <optional>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/io/parquet/reader.h"
#include "parquet_test_files.h"

namespace ember::io::parquet {
namespace {

using namespace testfile;
using PT = PhysicalType;

const std::string kDir = std::string(EMBER_TEST_DATA) + "/parquet/";
const std::string kName = "bad.parquet";

// Opens and reads every row group (and a row range) of `bytes`; returns the Error raised.
std::optional<Error> try_read(const Bytes& bytes, const std::string& name = kName) {
  try {
    auto r = FileReader::open(memory_source(bytes, name));
    for (int g = 0; g < r->num_row_groups(); ++g) r->read_row_group(g);
    r->read_rows(1, r->num_rows() - 1);
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}

// Expects `bytes` to raise `kind` with a message starting with the file name and holding
// every one of `needles`.
void expect_error(const Bytes& bytes, ErrorKind kind, std::initializer_list<std::string> needles) {
  std::optional<Error> e = try_read(bytes);
  ASSERT_TRUE(e.has_value()) << "the file read without error";
  EXPECT_EQ(e->kind(), kind) << error_kind_name(e->kind()) << ": " << e->what();
  std::string msg = e->what();
  EXPECT_EQ(msg.rfind(kName + ": ", 0), 0u) << "does not name the file: " << msg;
  for (const std::string& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "no '" << n << "' in: " << msg;
}

// A file that is either read or rejected with an Error naming it; never a crash.
void expect_read_or_error(const Bytes& bytes, const std::string& context) {
  std::optional<Error> e = try_read(bytes);
  if (!e) return;
  EXPECT_NE(e->kind(), ErrorKind::kInternal) << context << ": " << e->what();
  EXPECT_EQ(std::string(e->what()).rfind(kName + ": ", 0), 0u) << context << ": " << e->what();
}

uint32_t footer_length(const Bytes& f) {
  uint32_t n;
  std::memcpy(&n, f.data() + f.size() - 8, 4);
  return n;
}

// One required INT32 column "x" with values 1, 2, 3 in a single PLAIN page.
Column int32_column() {
  Column c = flat("x", PT::kInt32);
  c.chunks.push_back(chunk({data_page(3, plain_i32({1, 2, 3}))}));
  return c;
}
Bytes int32_file(const std::function<void(FileMetaData&)>& edit = {}) {
  return build({.columns = {int32_column()}, .row_group_rows = {3}}, edit);
}

TEST(ParquetBadInput, BuiltFilesReadCorrectly) {
  // the builder itself is sound: what the tests below break is valid to begin with
  auto r = FileReader::open(memory_source(int32_file(), kName));
  Table t = r->read();
  ASSERT_EQ(t.num_rows(), 3);
  EXPECT_EQ(t.columns[0].value<int32_t>(2), 3);

  Column d = flat("d", PT::kDouble, Repetition::kOptional);
  d.chunks.push_back(
      chunk({dict_page(2, plain_f64({0.5, 7.0})),
             data_page(3, concat({rle_prefixed({1, 0, 1}, 1), dict_indices({1, 0}, 1)}), Encoding::kRleDictionary)},
            Codec::kGzip));
  Table td = FileReader::open(memory_source(build({.columns = {d}, .row_group_rows = {3}}), kName))->read();
  EXPECT_EQ(td.columns[0].value<double>(0), 7.0);
  EXPECT_FALSE(td.columns[0].is_valid(1));
  EXPECT_EQ(td.columns[0].value<double>(2), 0.5);
}

TEST(ParquetBadInput, MissingFileIsNotFound) {
  const std::string path = "/nonexistent-dir/missing.parquet";
  try {
    FileReader::open(path);
    FAIL() << "opened a missing file";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(ParquetBadInput, EmptyFileIsCorruption) {
  expect_error({}, ErrorKind::kCorruption, {"not a Parquet file", "0 bytes"});
}

TEST(ParquetBadInput, EveryTruncatedPrefixOfAFixtureRaisesCorruption) {
  Bytes f = read_file(kDir + "tasks.parquet");
  ASSERT_GT(f.size(), 100u);
  for (size_t n = 0; n < f.size(); ++n) {
    std::optional<Error> e = try_read(Bytes(f.begin(), f.begin() + ptrdiff_t(n)));
    ASSERT_TRUE(e.has_value()) << "prefix of " << n << " bytes read";
    EXPECT_EQ(e->kind(), ErrorKind::kCorruption) << n << ": " << e->what();
    EXPECT_EQ(std::string(e->what()).rfind(kName + ": ", 0), 0u) << e->what();
  }
}

TEST(ParquetBadInput, DataCutOutBeforeAnIntactFooterReadsOrRaisesError) {
  // drop the bytes [k, data end) but keep the footer: chunk offsets then point at the wrong
  // bytes or past the end
  for (const char* name : {"tasks.parquet", "episodes_meta.parquet"}) {
    Bytes f = read_file(kDir + name);
    size_t tail = footer_length(f) + 8;
    for (size_t k = 0; k + tail < f.size(); k += 7) {
      Bytes cut(f.begin(), f.begin() + ptrdiff_t(k));
      cut.insert(cut.end(), f.end() - ptrdiff_t(tail), f.end());
      expect_read_or_error(cut, std::string(name) + " cut at " + std::to_string(k));
    }
  }
}

TEST(ParquetBadInput, BadMagicAtTheStartIsCorruption) {
  Bytes f = int32_file();
  f[0] = 'X';
  expect_error(f, ErrorKind::kCorruption, {"magic bytes PAR1 missing"});
}

TEST(ParquetBadInput, BadMagicAtTheEndIsCorruption) {
  Bytes f = int32_file();
  f.back() = '0';
  expect_error(f, ErrorKind::kCorruption, {"magic bytes PAR1 missing"});
}

TEST(ParquetBadInput, EncryptedFooterMagicIsUnsupported) {
  Bytes f = int32_file();
  f.back() = 'E';
  expect_error(f, ErrorKind::kUnsupported, {"encrypted"});
}

TEST(ParquetBadInput, FooterLengthPastTheFileIsCorruption) {
  Bytes f = int32_file();
  for (uint32_t len : {uint32_t(f.size() - 11), uint32_t(f.size()), 0xffffffffu}) {
    std::memcpy(f.data() + f.size() - 8, &len, 4);
    expect_error(f, ErrorKind::kCorruption, {"footer length " + std::to_string(len), "runs past the start"});
  }
}

TEST(ParquetBadInput, FooterLengthTooShortIsCorruption) {
  Bytes f = int32_file();
  uint32_t len = footer_length(f) - 5;  // the footer now starts inside it
  std::memcpy(f.data() + f.size() - 8, &len, 4);
  expect_error(f, ErrorKind::kCorruption, {"footer"});
}

TEST(ParquetBadInput, EveryFlippedFooterByteReadsOrRaisesError) {
  for (const char* name : {"tasks.parquet", "episodes_meta.parquet"}) {
    Bytes f = read_file(kDir + name);
    size_t start = f.size() - 8 - footer_length(f);
    for (size_t i = start; i < f.size() - 8; ++i) {
      for (uint8_t mask : {uint8_t(0xff), uint8_t(0x01), uint8_t(0x80), uint8_t(0x10)}) {
        Bytes g = f;
        g[i] ^= mask;
        expect_read_or_error(g, std::string(name) + " byte " + std::to_string(i) + " ^ " + std::to_string(mask));
      }
    }
  }
}

TEST(ParquetBadInput, FooterThatIsNotThriftIsCorruption) {
  Bytes f = int32_file();
  size_t start = f.size() - 8 - footer_length(f);
  std::fill(f.begin() + ptrdiff_t(start), f.end() - 8, 0xff);
  expect_error(f, ErrorKind::kCorruption, {"footer", "corrupt Thrift"});
}

TEST(ParquetBadInput, PageSizeRunningPastTheChunkIsCorruption) {
  Column c = int32_column();
  c.chunks[0].pages[0].compressed_size = 1000;
  expect_error(build({.columns = {c}, .row_group_rows = {3}}), ErrorKind::kCorruption,
               {"column 'x'", "page of 1000 bytes runs past the column chunk"});
}

TEST(ParquetBadInput, NegativePageSizeIsCorruption) {
  Column c = int32_column();
  c.chunks[0].pages[0].compressed_size = -4;
  expect_error(build({.columns = {c}, .row_group_rows = {3}}), ErrorKind::kCorruption, {"column 'x'", "-4"});
  Column u = int32_column();
  u.chunks[0].pages[0].uncompressed_size = -1;
  expect_error(build({.columns = {u}, .row_group_rows = {3}}), ErrorKind::kCorruption,
               {"column 'x'", "uncompressed_page_size -1"});
}

TEST(ParquetBadInput, UncompressedSizeDifferentFromThePageIsCorruption) {
  Column c = int32_column();
  c.chunks[0].pages[0].uncompressed_size = 13;
  expect_error(build({.columns = {c}, .row_group_rows = {3}}), ErrorKind::kCorruption,
               {"column 'x'", "decompressed to 12 bytes, the page header says 13"});
}

TEST(ParquetBadInput, ChunkOutsideTheFileIsCorruption) {
  Bytes f = int32_file([](FileMetaData& m) { m.row_groups[0].columns[0].meta_data.data_page_offset = 1 << 20; });
  expect_error(f, ErrorKind::kCorruption, {"column 'x'", "lies outside the file"});
  Bytes g = int32_file([](FileMetaData& m) { m.row_groups[0].columns[0].meta_data.total_compressed_size = 1 << 20; });
  expect_error(g, ErrorKind::kCorruption, {"column 'x'", "lies outside the file"});
}

TEST(ParquetBadInput, PagesHoldingFewerValuesThanTheChunkIsCorruption) {
  // a list column, whose level entries need not match the row count
  Column c = list_of("l", PT::kInt64, Repetition::kRequired);
  c.chunks.push_back(
      chunk({data_page(2, concat({rle_prefixed({0, 1}, 1), rle_prefixed({2, 2}, 2), plain_i64({1, 2})}))}));
  c.chunks[0].num_values = 5;
  expect_error(build({.columns = {c}, .row_group_rows = {1}}), ErrorKind::kCorruption,
               {"column 'l'", "column chunk ends after 2 of its 5 values"});
}

// Regression (fuzz/regressions/review_chunk_values_over_row_group.parquet): a chunk and its
// page agreeing on 2^28 nulls in a row group of 3 rows used to be decoded and assembled in
// full (30 s under ASan) before the row count was compared.
TEST(ParquetBadInput, ChunkValueCountDifferentFromTheRowGroupIsCorruption) {
  Bytes f = int32_file([](FileMetaData& m) { m.row_groups[0].columns[0].meta_data.num_values = 4; });
  expect_error(f, ErrorKind::kCorruption, {"column 'x'", "column chunk has num_values 4, the row group has 3 rows"});
}

// Regression (fuzz/regressions/review_page_values_over_chunk.parquet): a 120-byte page whose
// RLE levels stand for 2^28 nulls used to be decoded in full (600 MB, seconds) before the
// count was compared with the chunk's.
TEST(ParquetBadInput, PageWithMoreValuesThanTheChunkLeavesIsCorruptionBeforeDecoding) {
  const int32_t n = 1 << 28;
  Column c = flat("x", PT::kInt32, Repetition::kOptional);
  Bytes levels = {0, 0, 0, 0};
  put_uleb(levels, uint64_t(n) << 1);  // one RLE run of n zeros: n nulls
  levels.push_back(0);
  uint32_t len = uint32_t(levels.size() - 4);
  std::memcpy(levels.data(), &len, 4);
  c.chunks.push_back(chunk({data_page(n, levels)}));
  c.chunks[0].num_values = 3;
  expect_error(build({.columns = {c}, .row_group_rows = {3}}), ErrorKind::kCorruption,
               {"column 'x'", "data page has num_values 268435456, more than the 3"});
}

// Regression (fuzz/regressions/review_delta_count_mismatch.parquet): a DELTA_BINARY_PACKED
// page of 3 values whose page header claims 2^28 used to allocate 2 GiB before its header
// was read.
TEST(ParquetBadInput, DeltaHeaderCountDifferentFromThePageIsCorruptionBeforeAllocating) {
  const int32_t n = 1 << 24;  // the most values a page may hold
  Column c = flat("x", PT::kInt64);
  c.chunks.push_back(chunk({data_page(n, delta_binary_packed({1, 2, 3}), Encoding::kDeltaBinaryPacked)}));
  expect_error(build({.columns = {c}, .row_group_rows = {n}}), ErrorKind::kCorruption,
               {"column 'x'", "DELTA_BINARY_PACKED holds 3 values, the page needs 16777216"});
  Column s = flat("s", PT::kByteArray);
  s.chunks.push_back(
      chunk({data_page(n, concat({delta_binary_packed({1}, 4), Bytes{'a'}}), Encoding::kDeltaLengthByteArray)}));
  expect_error(build({.columns = {s}, .row_group_rows = {n}}), ErrorKind::kCorruption,
               {"column 's'", "DELTA_BINARY_PACKED holds 1 values, the page needs 16777216"});
}

// A tiny file whose footer claims 2^25 rows is refused before anything is allocated.
TEST(ParquetBadInput, ChunkClaimingFarMoreValuesThanTheFileCouldHoldIsUnsupported) {
  const int64_t n = int64_t(1) << 25;
  Bytes f = int32_file([n](FileMetaData& m) {
    m.num_rows = n;
    m.row_groups[0].num_rows = n;
    m.row_groups[0].columns[0].meta_data.num_values = n;
  });
  expect_error(f, ErrorKind::kUnsupported, {"column 'x'", "claims 33554432 values in a file of"});
}

// A legal page whose RLE levels stand for more values than any writer puts in a page is
// refused before anything is allocated for it.
TEST(ParquetBadInput, PageOfMoreThan16MValuesIsUnsupported) {
  const int32_t n = (1 << 24) + 1;
  Column c = flat("x", PT::kInt32, Repetition::kOptional);
  Bytes levels = {0, 0, 0, 0};
  put_uleb(levels, uint64_t(n) << 1);  // one RLE run of n zeros: n nulls
  levels.push_back(0);
  uint32_t len = uint32_t(levels.size() - 4);
  std::memcpy(levels.data(), &len, 4);
  c.chunks.push_back(chunk({data_page(n, levels)}));
  expect_error(build({.columns = {c}, .row_group_rows = {n}}), ErrorKind::kUnsupported,
               {"column 'x'", "ember reads at most 16777216 values per page"});
}

TEST(ParquetBadInput, PlainValuesRunningPastThePageAreCorruption) {
  Column c = flat("x", PT::kInt64);
  c.chunks.push_back(chunk({data_page(3, plain_i64({1, 2}))}));
  expect_error(build({.columns = {c}, .row_group_rows = {3}}), ErrorKind::kCorruption,
               {"column 'x'", "PLAIN values need 24 bytes, the page has 16"});
  Column s = flat("s", PT::kByteArray);
  Bytes body = plain_bytes({"abc"});
  body[0] = 200;  // the first value's length
  s.chunks.push_back(chunk({data_page(1, body)}));
  expect_error(build({.columns = {s}, .row_group_rows = {1}}), ErrorKind::kCorruption,
               {"column 's'", "PLAIN byte array of 200 bytes runs past the page"});
}

TEST(ParquetBadInput, DictionaryIndexOutOfRangeIsCorruption) {
  Column c = flat("x", PT::kInt64);
  c.chunks.push_back(
      chunk({dict_page(2, plain_i64({10, 20})), data_page(3, dict_indices({0, 1, 3}, 2), Encoding::kRleDictionary)}));
  expect_error(build({.columns = {c}, .row_group_rows = {3}}), ErrorKind::kCorruption,
               {"column 'x'", "dictionary index 3 is out of range (dictionary has 2 entries)"});
}

TEST(ParquetBadInput, DictionaryIndexOutOfRangeForStringsIsCorruption) {
  Column c = flat("s", PT::kByteArray);
  c.chunks.push_back(
      chunk({dict_page(1, plain_bytes({"only"})), data_page(2, dict_indices({0, 1}, 1), Encoding::kRleDictionary)}));
  expect_error(build({.columns = {c}, .row_group_rows = {2}}), ErrorKind::kCorruption,
               {"column 's'", "dictionary index 1 is out of range"});
}

TEST(ParquetBadInput, DictionaryEncodedPageWithoutDictionaryIsCorruption) {
  Column c = flat("x", PT::kInt32);
  c.chunks.push_back(chunk({data_page(2, dict_indices({0, 0}, 1), Encoding::kRleDictionary)}));
  expect_error(build({.columns = {c}, .row_group_rows = {2}}), ErrorKind::kCorruption,
               {"column 'x'", "no dictionary page"});
}

// Regression (fuzz/regressions/review_empty_dictionary_many_indices.parquet): indices into an
// empty dictionary used to be decoded (1 GiB for 2^28 of them) before the first was checked.
TEST(ParquetBadInput, EmptyDictionaryWithIndicesIsCorruption) {
  Column c = flat("x", PT::kInt32);
  c.chunks.push_back(chunk({dict_page(0, {}), data_page(2, dict_indices({0, 0}, 1), Encoding::kRleDictionary)}));
  expect_error(build({.columns = {c}, .row_group_rows = {2}}), ErrorKind::kCorruption,
               {"column 'x'", "the dictionary page holds no values"});
}

TEST(ParquetBadInput, DictionaryIndexBitWidthOver32IsCorruption) {
  Column c = flat("x", PT::kInt32);
  Bytes idx = dict_indices({0, 0}, 1);
  idx[0] = 40;
  c.chunks.push_back(chunk({dict_page(1, plain_i32({5})), data_page(2, idx, Encoding::kRleDictionary)}));
  expect_error(build({.columns = {c}, .row_group_rows = {2}}), ErrorKind::kCorruption, {"column 'x'", "bit width 40"});
}

TEST(ParquetBadInput, LevelOverTheMaximumIsCorruption) {
  // list<int32 required>: definition levels 0..2 in 2 bits, so 3 is encodable but invalid
  Column c = list_of("l", PT::kInt32, Repetition::kRequired);
  Bytes body = concat({rle_prefixed({0}, 1), rle_prefixed({3}, 2), plain_i32({1})});
  c.chunks.push_back(chunk({data_page(1, body)}));
  expect_error(build({.columns = {c}, .row_group_rows = {1}}), ErrorKind::kCorruption,
               {"column 'l'", "definition level 3 is over the maximum 2"});
}

TEST(ParquetBadInput, LevelsRunningPastThePageAreCorruption) {
  Column c = flat("x", PT::kInt32, Repetition::kOptional);
  Bytes levels = rle_prefixed({1, 1, 1}, 1);
  levels[0] = 100;  // the levels' length prefix
  c.chunks.push_back(chunk({data_page(3, concat({levels, plain_i32({1, 2, 3})}))}));
  expect_error(build({.columns = {c}, .row_group_rows = {3}}), ErrorKind::kCorruption,
               {"column 'x'", "definition levels of 100 bytes run past the page"});
}

TEST(ParquetBadInput, RowCountDisagreeingWithTheRowGroupIsCorruption) {
  // two lists (repetition levels 0, 1, 0) where the row group says three rows
  Column c = list_of("l", PT::kInt64, Repetition::kRequired);
  c.chunks.push_back(
      chunk({data_page(3, concat({rle_prefixed({0, 1, 0}, 1), rle_prefixed({2, 2, 2}, 2), plain_i64({1, 2, 3})}))}));
  expect_error(build({.columns = {c}, .row_group_rows = {3}}), ErrorKind::kCorruption,
               {"column 'l' has 2 rows, the row group 3"});
  Bytes g = int32_file([](FileMetaData& m) { m.num_rows = 5; });
  expect_error(g, ErrorKind::kCorruption, {"row groups hold 3 rows, the footer says 5"});
}

TEST(ParquetBadInput, RowGroupWithTheWrongNumberOfChunksIsCorruption) {
  Bytes f = int32_file([](FileMetaData& m) { m.row_groups[0].columns.push_back(m.row_groups[0].columns[0]); });
  expect_error(f, ErrorKind::kCorruption, {"row group 0 has 2 column chunks, the schema has 1 leaf columns"});
}

TEST(ParquetBadInput, ChunkTypeDifferentFromTheSchemaIsCorruption) {
  Bytes f = int32_file([](FileMetaData& m) { m.row_groups[0].columns[0].meta_data.type = PT::kDouble; });
  expect_error(f, ErrorKind::kCorruption, {"column 'x'", "DOUBLE", "INT32"});
}

TEST(ParquetBadInput, SchemaWithTooManyChildrenIsCorruption) {
  Bytes f = int32_file([](FileMetaData& m) { m.schema[0].num_children = 5; });
  expect_error(f, ErrorKind::kCorruption, {"num_children 5"});
  Bytes g = int32_file([](FileMetaData& m) { m.schema.clear(); });
  expect_error(g, ErrorKind::kCorruption, {"empty schema"});
}

TEST(ParquetBadInput, CorruptCompressedPageIsCorruption) {
  for (Codec codec : {Codec::kSnappy, Codec::kGzip, Codec::kZstd}) {
    Column c = int32_column();
    c.chunks[0].codec = codec;
    Bytes f = build({.columns = {c}, .row_group_rows = {3}});
    // the page body sits right after the page header, which follows the magic
    size_t consumed = 0;
    decode_page_header(f.data() + 4, f.size() - 4, "h", &consumed);
    for (size_t i = 4 + consumed; i < 4 + consumed + 4; ++i) f[i] ^= 0x5a;
    std::optional<Error> e = try_read(f);
    ASSERT_TRUE(e.has_value()) << codec_name(codec);
    EXPECT_EQ(e->kind(), ErrorKind::kCorruption) << e->what();
    EXPECT_NE(std::string(e->what()).find("bad.parquet: column 'x'"), std::string::npos) << e->what();
  }
}

TEST(ParquetBadInput, UnsupportedCodecIsUnsupportedNamingCodecAndColumn) {
  for (auto [c, name] : {std::pair{Codec::kLz4, "LZ4"}, std::pair{Codec::kBrotli, "BROTLI"},
                         std::pair{Codec::kLzo, "LZO"}, std::pair{Codec::kLz4Raw, "LZ4_RAW"}}) {
    const Codec codec = c;  // a structured binding in a capture list is C++20 that clang 14 lacks
    Bytes f = int32_file([codec](FileMetaData& m) { m.row_groups[0].columns[0].meta_data.codec = codec; });
    expect_error(f, ErrorKind::kUnsupported, {"column 'x'", std::string("compression codec ") + name});
  }
  Bytes f = int32_file([](FileMetaData& m) { m.row_groups[0].columns[0].meta_data.codec = Codec(42); });
  expect_error(f, ErrorKind::kUnsupported, {"column 'x'", "compression codec"});
}

TEST(ParquetBadInput, UnsupportedValueEncodingIsUnsupportedNamingEncodingAndColumn) {
  Column c = int32_column();
  c.chunks[0].pages[0].encoding = Encoding::kBitPacked;
  expect_error(build({.columns = {c}, .row_group_rows = {3}}), ErrorKind::kUnsupported,
               {"column 'x'", "value encoding BIT_PACKED", "INT32"});
  Column u = int32_column();
  u.chunks[0].pages[0].encoding = Encoding(77);
  expect_error(build({.columns = {u}, .row_group_rows = {3}}), ErrorKind::kUnsupported, {"column 'x'", "(77)"});
}

TEST(ParquetBadInput, EncodingNotMeantForTheTypeIsUnsupported) {
  Column c = flat("d", PT::kDouble);
  c.chunks.push_back(chunk({data_page(1, plain_f64({1.0}), Encoding::kDeltaBinaryPacked)}));
  expect_error(build({.columns = {c}, .row_group_rows = {1}}), ErrorKind::kUnsupported,
               {"column 'd'", "DELTA_BINARY_PACKED is not supported for DOUBLE"});
}

TEST(ParquetBadInput, UnsupportedLevelEncodingIsUnsupported) {
  Column c = flat("x", PT::kInt32, Repetition::kOptional);
  c.chunks.push_back(chunk({data_page(1, concat({rle_prefixed({1}, 1), plain_i32({1})}))}));
  c.chunks[0].pages[0].level_encoding = Encoding::kBitPacked;
  expect_error(build({.columns = {c}, .row_group_rows = {1}}), ErrorKind::kUnsupported,
               {"column 'x'", "definition level encoding BIT_PACKED"});
}

TEST(ParquetBadInput, UnsupportedDictionaryPageEncodingIsUnsupported) {
  Column c = flat("x", PT::kInt32);
  c.chunks.push_back(
      chunk({dict_page(1, plain_i32({5})), data_page(1, dict_indices({0}, 1), Encoding::kRleDictionary)}));
  c.chunks[0].pages[0].encoding = Encoding::kDeltaBinaryPacked;
  expect_error(build({.columns = {c}, .row_group_rows = {1}}), ErrorKind::kUnsupported,
               {"column 'x'", "dictionary page encoding DELTA_BINARY_PACKED"});
}

TEST(ParquetBadInput, Int96IsUnsupportedNamingColumnAndType) {
  Column c = flat("ts", PT::kInt96);
  c.chunks.push_back(chunk({data_page(1, Bytes(12, 0))}));
  expect_error(build({.columns = {c}, .row_group_rows = {1}}), ErrorKind::kUnsupported, {"column 'ts'", "INT96"});
}

TEST(ParquetBadInput, DecimalIsUnsupportedNamingColumnAndType) {
  Column c = int32_column();
  c.schema[0].name = "price";
  c.schema[0].converted_type = kDecimal;
  c.schema[0].logical_type = kLogicalDecimal;
  expect_error(build({.columns = {c}, .row_group_rows = {3}}), ErrorKind::kUnsupported,
               {"column 'price'", "INT32", "DECIMAL"});
}

TEST(ParquetBadInput, MapIsUnsupportedNamingColumn) {
  Column c;
  SchemaElement top = group_element("m", 1, Repetition::kOptional);
  top.converted_type = kMap;
  SchemaElement kv = group_element("key_value", 2, Repetition::kRepeated);
  c.schema = {top, kv, leaf_element("key", PT::kInt32)};
  c.chunks.push_back(chunk({data_page(1, Bytes(8, 0))}));
  SchemaElement value = leaf_element("value", PT::kInt32, Repetition::kOptional);
  Column::Leaf lv;
  lv.schema = {value};
  lv.chunks.push_back(chunk({data_page(1, Bytes(8, 0))}));
  c.extra_leaves.push_back(lv);
  expect_error(build({.columns = {c}, .row_group_rows = {1}}), ErrorKind::kUnsupported, {"column 'm'", "MAP"});
}

}  // namespace
}  // namespace ember::io::parquet
