// Thrift compact protocol: the writer's output reads back, unknown fields of every type are
// skipped, and malformed bytes (truncated, too deep, bad types) raise kCorruption.
#include "ember/io/parquet/thrift.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "ember/core/error.h"
#include "ember/io/parquet/format.h"

namespace ember::io::thrift {
namespace {

using Bytes = std::vector<uint8_t>;

// Runs f and returns the Error it throws; fails the test if it throws nothing.
template <class F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an Error";
  return Error(ErrorKind::kInternal, "no error");
}

TEST(Thrift, IntegersRoundTripIncludingNegativesAndExtremes) {
  const int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  const std::vector<int64_t> i64s = {0, 1, -1, 63, -64, 64, 1 << 20, -(1 << 20), kMax, kMin};
  const std::vector<int32_t> i32s = {0, -1, 1, std::numeric_limits<int32_t>::max(),
                                     std::numeric_limits<int32_t>::min()};
  Writer w;
  w.begin_struct();
  int16_t id = 1;
  for (int64_t v : i64s) w.field_i64(id++, v);
  for (int32_t v : i32s) w.field_i32(id++, v);
  w.field_i8(id++, -128);
  w.field_i8(id++, 127);
  w.end_struct();
  Bytes b = w.take();

  Reader r(b.data(), b.size(), "test");
  r.begin_struct();
  FieldHeader f;
  for (size_t i = 0; i < i64s.size(); ++i) {
    ASSERT_TRUE(r.next_field(f));
    EXPECT_EQ(f.id, int16_t(i + 1));
    EXPECT_EQ(f.type, kI64);
    EXPECT_EQ(r.read_i64(), i64s[i]);
  }
  for (int32_t v : i32s) {
    ASSERT_TRUE(r.next_field(f));
    EXPECT_EQ(f.type, kI32);
    EXPECT_EQ(r.read_i32(), v);
  }
  ASSERT_TRUE(r.next_field(f));
  EXPECT_EQ(r.read_i8(), -128);
  ASSERT_TRUE(r.next_field(f));
  EXPECT_EQ(r.read_i8(), 127);
  EXPECT_FALSE(r.next_field(f));
  r.end_struct();
  EXPECT_EQ(r.position(), b.size());
}

TEST(Thrift, LargeAndDecreasingFieldIdsUseTheLongHeader) {
  // deltas over 15, a decreasing id and a negative id need the long form
  const std::vector<int16_t> ids = {1, 16, 32, 500, 32767, 3, -7};
  Writer w;
  w.begin_struct();
  for (int16_t id : ids) w.field_i32(id, id * 2);
  w.end_struct();
  Bytes b = w.take();
  EXPECT_EQ(b[0], (1 << 4) | kI32) << "a delta of 1 fits the short header";
  EXPECT_EQ(b[2], (15 << 4) | kI32) << "a delta of 15 still fits it";
  EXPECT_EQ(b[4], kI32) << "a delta of 16 takes the long header";

  Reader r(b.data(), b.size(), "test");
  r.begin_struct();
  FieldHeader f;
  for (int16_t id : ids) {
    ASSERT_TRUE(r.next_field(f));
    EXPECT_EQ(f.id, id);
    EXPECT_EQ(r.read_i32(), id * 2);
  }
  EXPECT_FALSE(r.next_field(f));
  r.end_struct();
}

TEST(Thrift, BoolsBinaryNestedStructsAndLongListsRoundTrip) {
  std::vector<int64_t> longs;
  for (int i = 0; i < 40; ++i) longs.push_back(i * i - 100);  // over 14 elements: long list header
  std::vector<std::string> strings = {"", "a", std::string(300, 'x'), std::string("\0\xff", 2)};
  Writer w;
  w.begin_struct();
  w.field_bool(1, true);
  w.field_bool(2, false);
  w.field_binary(3, "hello");
  w.field_struct_begin(4);
  w.field_i32(1, -5);
  w.end_struct();
  w.field_list_begin(5, kI64, uint32_t(longs.size()));
  for (int64_t v : longs) w.i64(v);
  w.field_list_begin(6, kBinary, uint32_t(strings.size()));
  for (const std::string& s : strings) w.binary(s);
  w.field_list_begin(7, kStruct, 15);
  for (int i = 0; i < 15; ++i) {
    w.list_struct_begin();
    w.field_i32(1, i);
    w.end_struct();
  }
  w.end_struct();
  Bytes b = w.take();

  Reader r(b.data(), b.size(), "test");
  r.begin_struct();
  FieldHeader f;
  ASSERT_TRUE(r.next_field(f));
  EXPECT_TRUE(r.read_bool(f));
  ASSERT_TRUE(r.next_field(f));
  EXPECT_FALSE(r.read_bool(f));
  ASSERT_TRUE(r.next_field(f));
  EXPECT_EQ(r.read_binary(), "hello");
  ASSERT_TRUE(r.next_field(f));
  EXPECT_EQ(f.type, kStruct);
  r.begin_struct();
  ASSERT_TRUE(r.next_field(f));
  EXPECT_EQ(f.id, 1);
  EXPECT_EQ(r.read_i32(), -5);
  EXPECT_FALSE(r.next_field(f));
  r.end_struct();

  ASSERT_TRUE(r.next_field(f));
  EXPECT_EQ(f.id, 5) << "the field id continues from the outer struct's last";
  ListHeader h = r.read_list_header();
  EXPECT_EQ(h.elem_type, kI64);
  ASSERT_EQ(h.size, longs.size());
  for (int64_t v : longs) EXPECT_EQ(r.read_i64(), v);

  ASSERT_TRUE(r.next_field(f));
  h = r.read_list_header();
  ASSERT_EQ(h.size, strings.size());
  for (const std::string& s : strings) EXPECT_EQ(r.read_binary(), s);

  ASSERT_TRUE(r.next_field(f));
  h = r.read_list_header();
  EXPECT_EQ(h.elem_type, kStruct);
  ASSERT_EQ(h.size, 15u);
  for (int i = 0; i < 15; ++i) {
    r.begin_struct();
    ASSERT_TRUE(r.next_field(f));
    EXPECT_EQ(r.read_i32(), i);
    EXPECT_FALSE(r.next_field(f));
    r.end_struct();
  }
  EXPECT_FALSE(r.next_field(f));
  r.end_struct();
  EXPECT_EQ(r.position(), b.size());
}

// A struct holding one field of every wire type (ids 1..), then field 100 = i32 42. The
// writer has no i16, double, set or map, so those are spelled out byte by byte.
Bytes every_type_then_42() {
  Bytes b = {
      0x11,                                                  // 1: bool true
      0x12,                                                  // 2: bool false
      0x13, 0x7f,                                            // 3: byte
      0x14, 0x03,                                            // 4: i16 -2
      0x15, 0x80, 0x01,                                      // 5: i32 64
      0x16, 0xff, 0xff, 0xff, 0xff, 0x0f,                    // 6: i64
      0x17, 0,    0,    0,    0,    0,    0,    0xf0, 0x3f,  // 7: double 1.0
      0x18, 0x03, 'a',  'b',  'c',                           // 8: binary "abc"
      0x19, 0x35, 0x02, 0x04, 0x06,                          // 9: list<i32> of 3
      0x19, 0x21, 0x01, 0x02,                                // 10: list<bool> of 2
      0x19, 0x2c, 0x15, 0x02, 0x00, 0x00,                    // 11: list<struct> of 2: {1: i32 1}, {}
      0x1a, 0x28, 0x01, 'x',  0x00,                          // 12: set<binary> of 2
      0x1b, 0x02, 0x55, 0x02, 0x04, 0x06, 0x08,              // 13: map<i32, i32> of 2
      0x1b, 0x00,                                            // 14: empty map
      0x1b, 0x01, 0x51, 0x02, 0x01,                          // 15: map<i32, bool> of 1
      0x1c, 0x18, 0x01, 'q',  0x1c, 0x00, 0x00,              // 16: struct {1: binary, 2: struct {}}
      0x1c, 0x00,                                            // 17: empty struct
  };
  Bytes tail = {0x05, 0xc8, 0x01, 0x54, 0x00};  // 100 (long header): i32 42, stop
  b.insert(b.end(), tail.begin(), tail.end());
  return b;
}

TEST(Thrift, SkipsUnknownFieldsOfEveryType) {
  Bytes b = every_type_then_42();
  Reader r(b.data(), b.size(), "test");
  r.begin_struct();
  FieldHeader f;
  int skipped = 0;
  while (r.next_field(f)) {
    if (f.id == 100) {
      EXPECT_EQ(r.read_i32(), 42);
      continue;
    }
    EXPECT_EQ(f.id, skipped + 1);
    r.skip(f.type);
    ++skipped;
  }
  r.end_struct();
  EXPECT_EQ(skipped, 17);
  EXPECT_EQ(r.position(), b.size());
}

TEST(Thrift, SkippingAWholeStructOfEveryTypeConsumesItExactly) {
  Bytes b = every_type_then_42();
  Reader r(b.data(), b.size(), "test");
  r.skip(kStruct);
  EXPECT_EQ(r.position(), b.size());
}

TEST(Thrift, TruncatedInputRaisesCorruptionAtEveryLength) {
  Bytes b = every_type_then_42();
  for (size_t n = 0; n < b.size(); ++n) {
    Bytes prefix(b.begin(), b.begin() + ptrdiff_t(n));
    Reader r(prefix.data(), prefix.size(), "prefix");
    Error e = error_of([&] { r.skip(kStruct); });
    EXPECT_EQ(e.kind(), ErrorKind::kCorruption) << "prefix of " << n << " bytes";
    EXPECT_NE(std::string(e.what()).find("prefix: corrupt Thrift"), std::string::npos) << e.what();
  }
}

TEST(Thrift, NestingDeeperThanTheLimitRaisesCorruption) {
  Bytes structs(200, 0x1c);  // field 1: struct, nested 200 deep
  Reader r(structs.data(), structs.size(), "deep");
  Error e = error_of([&] { r.skip(kStruct); });
  EXPECT_EQ(e.kind(), ErrorKind::kCorruption);
  EXPECT_NE(std::string(e.what()).find("nesting deeper than"), std::string::npos) << e.what();

  Bytes lists(200, 0x19);  // list of 1 list of 1 list ...
  Reader r2(lists.data(), lists.size(), "deep");
  EXPECT_EQ(error_of([&] { r2.skip(kList); }).kind(), ErrorKind::kCorruption);
}

TEST(Thrift, NestingWithinTheLimitIsAccepted) {
  Bytes b(40, 0x1c);
  b.insert(b.end(), 41, 0x00);
  Reader r(b.data(), b.size(), "nested");
  r.skip(kStruct);
  EXPECT_EQ(r.position(), b.size());
}

TEST(Thrift, OverlongVarintRaisesCorruption) {
  Bytes b(11, 0x80);
  b.push_back(0);
  Reader r(b.data(), b.size(), "varint");
  Error e = error_of([&] { r.read_i64(); });
  EXPECT_EQ(e.kind(), ErrorKind::kCorruption);
  EXPECT_NE(std::string(e.what()).find("varint"), std::string::npos) << e.what();
}

TEST(Thrift, LengthsPastTheEndRaiseCorruption) {
  Bytes binary = {0x0a, 'a', 'b'};  // 10 bytes promised, 2 present
  Reader r1(binary.data(), binary.size(), "t");
  EXPECT_EQ(error_of([&] { r1.read_binary(); }).kind(), ErrorKind::kCorruption);

  Bytes huge = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};  // 2^64 - 1 bytes
  Reader r2(huge.data(), huge.size(), "t");
  EXPECT_EQ(error_of([&] { r2.read_binary(); }).kind(), ErrorKind::kCorruption);
  Reader r2s(huge.data(), huge.size(), "t");
  EXPECT_EQ(error_of([&] { r2s.skip(kBinary); }).kind(), ErrorKind::kCorruption);

  Bytes list = {0xf5, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00};  // 2^32 - 1 i32 elements
  Reader r3(list.data(), list.size(), "t");
  EXPECT_EQ(error_of([&] { r3.read_list_header(); }).kind(), ErrorKind::kCorruption);

  Bytes map = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x55};  // a map of 2^32 - 1 entries
  Reader r4(map.data(), map.size(), "t");
  EXPECT_EQ(error_of([&] { r4.skip(kMap); }).kind(), ErrorKind::kCorruption);

  Bytes dbl = {0, 0, 0};
  Reader r5(dbl.data(), dbl.size(), "t");
  EXPECT_EQ(error_of([&] { r5.read_double(); }).kind(), ErrorKind::kCorruption);
}

TEST(Thrift, UnknownWireTypesRaiseCorruption) {
  Bytes field = {0x1d, 0x00};  // field 1 of type 13
  Reader r(field.data(), field.size(), "t");
  r.begin_struct();
  FieldHeader f;
  EXPECT_EQ(error_of([&] { r.next_field(f); }).kind(), ErrorKind::kCorruption);

  Bytes list = {0x1e, 0x00};  // a list of one element of type 14
  Reader r2(list.data(), list.size(), "t");
  EXPECT_EQ(error_of([&] { r2.skip(kList); }).kind(), ErrorKind::kCorruption);

  Bytes map = {0x01, 0x0d};  // a map of one entry whose key type is 0
  Reader r3(map.data(), map.size(), "t");
  EXPECT_EQ(error_of([&] { r3.skip(kMap); }).kind(), ErrorKind::kCorruption);
}

TEST(Thrift, ReadingABoolFromANonBoolFieldRaisesCorruption) {
  Reader r(nullptr, 0, "t");
  FieldHeader f{.id = 3, .type = kI32};
  Error e = error_of([&] { r.read_bool(f); });
  EXPECT_EQ(e.kind(), ErrorKind::kCorruption);
  EXPECT_NE(std::string(e.what()).find("field 3"), std::string::npos) << e.what();
}

// The footer and page header codecs built on the protocol.
TEST(ThriftFormat, FileMetadataRoundTrips) {
  using namespace ember::io::parquet;
  FileMetaData m;
  m.version = 2;
  SchemaElement root;
  root.name = "schema";
  root.num_children = 1;
  SchemaElement leaf;
  leaf.name = "x";
  leaf.type = PhysicalType::kInt32;
  leaf.repetition = Repetition::kOptional;
  leaf.logical_type = kLogicalInteger;
  leaf.int_bit_width = 16;
  leaf.int_signed = false;
  m.schema = {root, leaf};
  m.num_rows = 1234567890123;
  RowGroup g;
  g.num_rows = m.num_rows;
  ColumnChunk c;
  c.has_meta_data = true;
  c.meta_data.type = PhysicalType::kInt32;
  c.meta_data.codec = Codec::kZstd;
  c.meta_data.encodings = {Encoding::kPlain, Encoding::kRleDictionary};
  c.meta_data.path_in_schema = {"x"};
  c.meta_data.num_values = 17;
  c.meta_data.total_compressed_size = 1 << 20;
  c.meta_data.data_page_offset = 4;
  c.meta_data.dictionary_page_offset = 99;
  g.columns = {c};
  m.row_groups = {g};
  m.key_value_metadata = {{"k", "v"}};
  m.created_by = "test";

  Bytes b = encode_file_metadata(m);
  FileMetaData d = decode_file_metadata(b.data(), b.size(), "x.parquet");
  EXPECT_EQ(d.version, 2);
  ASSERT_EQ(d.schema.size(), 2u);
  EXPECT_EQ(d.schema[0].num_children, 1);
  EXPECT_EQ(d.schema[1].type, PhysicalType::kInt32);
  EXPECT_EQ(d.schema[1].repetition, Repetition::kOptional);
  EXPECT_EQ(d.schema[1].logical_type, kLogicalInteger);
  EXPECT_EQ(d.schema[1].int_bit_width, 16);
  EXPECT_FALSE(d.schema[1].int_signed);
  EXPECT_EQ(d.num_rows, m.num_rows);
  ASSERT_EQ(d.row_groups.size(), 1u);
  const ColumnMetaData& cm = d.row_groups[0].columns[0].meta_data;
  EXPECT_EQ(cm.codec, Codec::kZstd);
  EXPECT_EQ(cm.encodings.size(), 2u);
  EXPECT_EQ(cm.path_in_schema, std::vector<std::string>{"x"});
  EXPECT_EQ(cm.num_values, 17);
  EXPECT_EQ(cm.dictionary_page_offset, 99);
  EXPECT_EQ(d.key_value_metadata[0].value, "v");
  EXPECT_EQ(d.created_by, "test");
}

TEST(ThriftFormat, PageHeaderRoundTripsAndReportsItsSize) {
  using namespace ember::io::parquet;
  PageHeader h;
  h.type = PageType::kDataPage;
  h.uncompressed_page_size = 100;
  h.compressed_page_size = 60;
  h.data_page = DataPageHeader{.num_values = 7, .encoding = Encoding::kRleDictionary};
  Bytes b = encode_page_header(h);
  b.push_back(0xab);  // the page body follows the header
  size_t consumed = 0;
  PageHeader d = decode_page_header(b.data(), b.size(), "x.parquet", &consumed);
  EXPECT_EQ(consumed, b.size() - 1);
  EXPECT_EQ(d.compressed_page_size, 60);
  ASSERT_TRUE(d.data_page.has_value());
  EXPECT_EQ(d.data_page->num_values, 7);
  EXPECT_EQ(d.data_page->encoding, Encoding::kRleDictionary);
}

}  // namespace
}  // namespace ember::io::thrift
