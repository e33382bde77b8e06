// ember's Parquet writer, checked by reading back with ember's reader: every table must
// come back identical (io::equal, bitwise floats) with the same nullability.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <random>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/io/json.h"
#include "ember/io/parquet/reader.h"
#include "ember/io/parquet/writer.h"

namespace ember::io::parquet {
namespace {

namespace fs = std::filesystem;

class WriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) / ("ember_writer_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

// Where two tables differ, as a readable message (first differing row as JSON).
std::string diff(const Table& want, const Table& got) {
  if (want.columns.size() != got.columns.size())
    return std::to_string(want.columns.size()) + " columns vs " + std::to_string(got.columns.size());
  for (size_t k = 0; k < want.columns.size(); ++k) {
    const Column &a = want.columns[k], &b = got.columns[k];
    if (type_string(a) != type_string(b) || a.name != b.name)
      return a.name + ": " + type_string(a) + " vs " + b.name + ": " + type_string(b);
    if (a.length != b.length) return a.name + ": " + std::to_string(a.length) + " vs " + std::to_string(b.length) + " rows";
    for (int64_t r = 0; r < a.length; ++r) {
      std::string x, y;
      append_cell_json(x, a, r);
      append_cell_json(y, b, r);
      if (x != y) return a.name + " row " + std::to_string(r) + ": wrote " + x + ", read " + y;
    }
    if (!equal(a, b)) return a.name + ": same JSON, different bits (null slot contents or -0.0/NaN)";
  }
  return "";
}

void expect_same(const Table& want, const Table& got) {
  ASSERT_EQ(want.columns.size(), got.columns.size());
  std::string d = diff(want, got);
  EXPECT_EQ(d, "");
  for (size_t k = 0; k < want.columns.size(); ++k) {
    EXPECT_TRUE(equal(want.columns[k], got.columns[k])) << want.columns[k].name;
    EXPECT_EQ(type_string(want.columns[k]), type_string(got.columns[k])) << "nullability of " << want.columns[k].name;
  }
}

Table roundtrip(const std::string& file, const Table& t, const WriteOptions& o = {}) {
  write_table(file, t, o);
  return FileReader::open(file)->read();
}

// Options by position (designated initializers would leave fields to -Wmissing-field-initializers).
WriteOptions opts(Codec codec, bool dictionary = true, int64_t page = int64_t(1) << 20,
                  int64_t dictionary_limit = int64_t(1) << 20) {
  WriteOptions o;
  o.codec = codec;
  o.dictionary = dictionary;
  o.data_page_size = page;
  o.dictionary_page_limit = dictionary_limit;
  return o;
}

Column with_nulls(Column c, std::vector<uint8_t> validity) {
  c.validity = std::move(validity);
  return c;
}
Column not_null(Column c) {
  c.nullable = false;
  return c;
}

// ---- random nested tables ----

// Fills a column of the type of `spec` (name, type, nullable, children; no data) with
// `length` random rows. Slots in `forced_null` (a null parent struct) are null, as ember's
// reader produces them; values under nulls are zero / empty as column.h requires.
Column random_fill(std::mt19937_64& rng, const Column& spec, int64_t length, double null_p,
                   const std::vector<uint8_t>* forced_null = nullptr) {
  Column c;
  c.name = spec.name;
  c.type = spec.type;
  c.nullable = spec.nullable;
  c.length = length;
  std::bernoulli_distribution is_null(null_p);
  bool any_null = false;
  c.validity.assign(size_t(length), 1);
  for (int64_t i = 0; i < length; ++i) {
    bool null = (forced_null && (*forced_null)[size_t(i)]) || (spec.nullable && is_null(rng));
    c.validity[size_t(i)] = !null;
    any_null |= null;
  }
  if (!any_null) c.validity.clear();
  std::uniform_int_distribution<int> byte(0, 255), small(0, 4), len(0, 9);
  size_t w = fixed_width(c.type);
  if (w > 0) {
    c.values.assign(size_t(length) * w, 0);
    for (int64_t i = 0; i < length; ++i) {
      if (!c.is_valid(i)) continue;
      uint8_t* p = c.values.data() + size_t(i) * w;
      if (c.type == TypeId::kBool) {
        *p = uint8_t(byte(rng) & 1);
      } else if (c.type == TypeId::kFloat) {
        float f = float(std::normal_distribution<double>(0, 100)(rng));
        std::memcpy(p, &f, 4);
      } else if (c.type == TypeId::kDouble) {
        double d = std::normal_distribution<double>(0, 1e6)(rng);
        std::memcpy(p, &d, 8);
      } else {  // ints: a few distinct values so that dictionaries get used
        int64_t v = int64_t(rng() % 50) - 25;
        std::memcpy(p, &v, w);
      }
    }
    return c;
  }
  if (c.type == TypeId::kStruct) {
    std::vector<uint8_t> nulls(static_cast<size_t>(length), 0);
    for (int64_t i = 0; i < length; ++i) nulls[size_t(i)] = !c.is_valid(i);
    for (const Column& f : spec.children) c.children.push_back(random_fill(rng, f, length, null_p, &nulls));
    return c;
  }
  c.offsets.push_back(0);
  int64_t total = 0;
  for (int64_t i = 0; i < length; ++i) {
    int64_t n = c.is_valid(i) ? (c.type == TypeId::kList ? small(rng) : len(rng)) : 0;
    if (c.type != TypeId::kList)
      for (int64_t k = 0; k < n; ++k) c.values.push_back(uint8_t(c.type == TypeId::kString ? 'a' + byte(rng) % 26 : byte(rng)));
    total += n;
    c.offsets.push_back(total);
  }
  if (c.type == TypeId::kList) c.children.push_back(random_fill(rng, spec.children[0], total, null_p));
  return c;
}

Column spec(std::string name, TypeId type, bool nullable = true, std::vector<Column> children = {}) {
  Column c;
  c.name = std::move(name);
  c.type = type;
  c.nullable = nullable;
  c.children = std::move(children);
  return c;
}
Column list_of(std::string name, Column element, bool nullable = true) {
  element.name = "element";
  return spec(std::move(name), TypeId::kList, nullable, {std::move(element)});
}

// Every leaf type, alone, in lists 1-3 deep and in structs, nullable and not.
std::vector<Column> all_specs() {
  std::vector<Column> out;
  const TypeId leaves[] = {TypeId::kBool, TypeId::kInt32, TypeId::kInt64, TypeId::kFloat,
                           TypeId::kDouble, TypeId::kString, TypeId::kBinary};
  for (TypeId t : leaves) {
    std::string n = type_name(t);
    out.push_back(spec(n, t));
    out.push_back(spec(n + "_req", t, false));
    out.push_back(list_of("list_" + n, spec("", t)));
  }
  out.push_back(list_of("l3", list_of("", list_of("", spec("", TypeId::kDouble)))));
  out.push_back(list_of("l3_req", list_of("", list_of("", spec("", TypeId::kDouble, false), false), false), false));
  out.push_back(list_of("l2_mixed", list_of("", spec("", TypeId::kInt64, false)), false));
  out.push_back(spec("image", TypeId::kStruct, true, {spec("bytes", TypeId::kBinary), spec("path", TypeId::kString)}));
  out.push_back(spec("s_req_fields", TypeId::kStruct, true,
                     {spec("a", TypeId::kInt32, false), list_of("b", spec("", TypeId::kFloat), false)}));
  out.push_back(list_of("list_struct", spec("", TypeId::kStruct, true,
                                            {spec("x", TypeId::kDouble), list_of("y", spec("", TypeId::kString))})));
  out.push_back(spec("nested_struct", TypeId::kStruct, false,
                     {spec("inner", TypeId::kStruct, true, {spec("v", TypeId::kInt64, false)}), spec("w", TypeId::kBool)}));
  return out;
}

Table random_table(uint64_t seed, int64_t rows, double null_p) {
  std::mt19937_64 rng(seed);
  Table t;
  for (const Column& s : all_specs()) t.columns.push_back(random_fill(rng, s, rows, null_p));
  return t;
}

// ---- tests ----

TEST_F(WriterTest, EveryPrimitiveTypeWithoutNulls) {
  Table t;
  t.columns.push_back(not_null(make_bool("b", {true, false, true})));
  t.columns.push_back(not_null(make_int32("i32", {1, -2, std::numeric_limits<int32_t>::min()})));
  t.columns.push_back(not_null(make_int64("i64", {std::numeric_limits<int64_t>::max(), 0, -7})));
  t.columns.push_back(make_float("f", {1.5f, -0.0f, std::numeric_limits<float>::denorm_min()}));
  t.columns.push_back(make_double("d", {std::numeric_limits<double>::infinity(), -0.0, std::nan("")}));
  t.columns.push_back(make_string("s", {"", "héllo", std::string("a\0b", 3)}));
  t.columns.push_back(make_string("bin", {std::string("\x00\xff", 2), "", "xyz"}, TypeId::kBinary));
  for (bool dict : {true, false}) {
    Table got = roundtrip(path(dict ? "dict.parquet" : "plain.parquet"), t, opts(Codec::kSnappy, dict));
    expect_same(t, got);
  }
}

TEST_F(WriterTest, NullsInEveryPrimitiveType) {
  std::vector<uint8_t> v = {0, 1, 0, 1};
  Table t;
  t.columns.push_back(with_nulls(make_bool("b", {false, true, false, false}), v));
  t.columns.push_back(with_nulls(make_int32("i32", {0, 5, 0, 6}), v));
  t.columns.push_back(with_nulls(make_int64("i64", {0, 5, 0, 6}), v));
  t.columns.push_back(with_nulls(make_float("f", {0, 5, 0, 6}), v));
  t.columns.push_back(with_nulls(make_double("d", {0, 5, 0, 6}), v));
  t.columns.push_back(with_nulls(make_string("s", {"", "x", "", ""}), v));
  t.columns.push_back(with_nulls(make_string("bin", {"", "", "", "\x01"}, TypeId::kBinary), v));
  t.columns.push_back(with_nulls(make_int64("all_null", {0, 0, 0, 0}), {0, 0, 0, 0}));
  expect_same(t, roundtrip(path("nulls.parquet"), t));
}

TEST_F(WriterTest, ListsWithNullAndEmptyRows) {
  Column elem = with_nulls(make_float("element", {1, 0, 3, 4}), {1, 0, 1, 1});
  Column l = with_nulls(make_list("state", elem, {2, 0, 0, 2, 0}), {1, 1, 0, 1, 1});
  Table t{{l}};
  expect_same(t, roundtrip(path("list.parquet"), t));
}

TEST_F(WriterTest, ThreeDeepListsWithNullsAndEmptiesAtEveryLevel) {
  // rows: [[[1, null], []], null, [], [null, [[]]], [[[2]]]]
  Column leaf = with_nulls(make_double("element", {1, 0, 2}), {1, 0, 1});
  Column l1 = with_nulls(make_list("element", leaf, {2, 0, 0, 1}), {1, 1, 1, 1});  // [1,null] [] [] [2]
  Column l2 = with_nulls(make_list("element", l1, {2, 0, 1, 1}), {1, 0, 1, 1});    // [a,b] null [[]] [[2]]
  Column l3 = with_nulls(make_list("x", l2, {1, 0, 0, 2, 1}), {1, 0, 1, 1, 1});
  Table t{{l3}};
  EXPECT_EQ(row_json(t, 0), R"({"x":[[[1,null],[]]]})");
  EXPECT_EQ(row_json(t, 3), R"({"x":[null,[[]]]})");
  expect_same(t, roundtrip(path("l3.parquet"), t));
}

TEST_F(WriterTest, LeRobotImageStruct) {
  Column bytes = with_nulls(make_string("bytes", {"\x89PNG", "", ""}, TypeId::kBinary), {1, 0, 1});
  Column p = with_nulls(make_string("path", {"a.png", "", ""}, TypeId::kString), {1, 0, 0});
  Column img = with_nulls(make_struct("observation.image", {bytes, p}), {1, 0, 1});
  Table t{{img}};
  expect_same(t, roundtrip(path("img.parquet"), t));
}

TEST_F(WriterTest, RandomNestedTablesAcrossSettings) {
  int seed = 0;
  for (Codec codec : {Codec::kUncompressed, Codec::kSnappy, Codec::kZstd})
    for (bool dict : {true, false})
      for (int64_t page : {int64_t(64), int64_t(1) << 20})
        for (double null_p : {0.0, 0.3}) {
          Table t = random_table(uint64_t(++seed), 200, null_p);
          WriteOptions o = opts(codec, dict, page);
          Table got = roundtrip(path("r" + std::to_string(seed) + ".parquet"), t, o);
          SCOPED_TRACE("codec " + std::string(codec_name(codec)) + " dict " + std::to_string(dict) + " page " +
                       std::to_string(page) + " null_p " + std::to_string(null_p));
          expect_same(t, got);
        }
}

TEST_F(WriterTest, EmptyTable) {
  Table t = random_table(7, 0, 0.5);
  write_table(path("empty.parquet"), t);
  auto f = FileReader::open(path("empty.parquet"));
  EXPECT_EQ(f->num_rows(), 0);
  EXPECT_EQ(f->num_row_groups(), 1);
  expect_same(t, f->read());
}

TEST_F(WriterTest, ManyRowGroups) {
  FileWriter w(path("groups.parquet"), opts(Codec::kSnappy, true, 100));
  std::vector<Table> groups;
  for (int g = 0; g < 12; ++g) {
    groups.push_back(random_table(uint64_t(100 + g), g % 4 == 3 ? 0 : 10 + g * 7, 0.2));
    w.write_row_group(groups.back());
  }
  w.close();
  auto f = FileReader::open(path("groups.parquet"));
  ASSERT_EQ(f->num_row_groups(), 12);
  Table all = groups[0];
  for (int g = 0; g < 12; ++g) {
    expect_same(groups[size_t(g)], f->read_row_group(g));
    if (g > 0)
      for (size_t k = 0; k < all.columns.size(); ++k) append(all.columns[k], groups[size_t(g)].columns[k]);
  }
  expect_same(all, f->read());
  EXPECT_EQ(f->num_rows(), all.num_rows());
}

// Pages of column chunk (g, k): walks the page headers from the chunk's first page.
std::vector<PageHeader> pages(const std::string& file, int g, int k) {
  auto r = FileReader::open(file);
  const ColumnMetaData& m = r->metadata().row_groups[size_t(g)].columns[size_t(k)].meta_data;
  std::vector<uint8_t> bytes = read_file(file);
  int64_t pos = m.dictionary_page_offset.value_or(m.data_page_offset), end = pos + m.total_compressed_size;
  std::vector<PageHeader> out;
  while (pos < end) {
    size_t used = 0;
    out.push_back(decode_page_header(bytes.data() + pos, size_t(end - pos), file, &used));
    pos += int64_t(used) + out.back().compressed_page_size;
  }
  EXPECT_EQ(pos, end);
  return out;
}

TEST_F(WriterTest, SmallPageSizeSplitsChunksAtRowBoundaries) {
  std::vector<float> v(3000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i) * 0.25f;
  Table t{{make_list("state", make_float("element", v), std::vector<int64_t>(500, 6)), make_float("timestamp", std::vector<float>(v.begin(), v.begin() + 500))}};
  Table got = roundtrip(path("pages.parquet"), t, opts(Codec::kSnappy, false, 1000));
  expect_same(t, got);
  auto ps = pages(path("pages.parquet"), 0, 0);
  ASSERT_GT(ps.size(), 10u);
  for (const PageHeader& h : ps) {
    ASSERT_TRUE(h.data_page);
    EXPECT_EQ(h.data_page->num_values % 6, 0) << "a page split a row of 6 elements";
    EXPECT_LE(h.uncompressed_page_size, 1000 + 6 * 4 + 64);
  }
  EXPECT_GT(pages(path("pages.parquet"), 0, 1).size(), 1u);
}

bool has_encoding(const ColumnMetaData& m, Encoding e) {
  for (Encoding x : m.encodings)
    if (x == e) return true;
  return false;
}

TEST_F(WriterTest, DictionaryFallsBackToPlainOverTheLimit) {
  std::vector<std::string> few, many;
  for (int i = 0; i < 1000; ++i) {
    few.push_back("task " + std::to_string(i % 3));
    many.push_back("distinct value " + std::to_string(i));
  }
  Table t{{make_string("few", few), make_string("many", many), make_bool("flag", std::vector<bool>(1000, true))}};
  Table got = roundtrip(path("dict.parquet"), t, opts(Codec::kSnappy, true, int64_t(1) << 20, 200));
  expect_same(t, got);
  auto f = FileReader::open(path("dict.parquet"));
  const auto& cols = f->metadata().row_groups[0].columns;
  EXPECT_TRUE(has_encoding(cols[0].meta_data, Encoding::kRleDictionary));
  EXPECT_TRUE(cols[0].meta_data.dictionary_page_offset.has_value());
  EXPECT_FALSE(has_encoding(cols[1].meta_data, Encoding::kRleDictionary)) << "dictionary over 200 bytes kept";
  EXPECT_FALSE(cols[1].meta_data.dictionary_page_offset.has_value());
  EXPECT_FALSE(has_encoding(cols[2].meta_data, Encoding::kRleDictionary)) << "bool columns are always PLAIN";
  auto ps = pages(path("dict.parquet"), 0, 0);
  ASSERT_GE(ps.size(), 2u);
  EXPECT_EQ(ps[0].type, PageType::kDictionaryPage);
  EXPECT_EQ(ps[0].dictionary_page->num_values, 3);
  EXPECT_EQ(ps[1].data_page->encoding, Encoding::kRleDictionary);
}

TEST_F(WriterTest, DictionaryKeepsNegativeZeroAndNaNBits) {
  float nan2;
  uint32_t bits = 0x7fc00001;
  std::memcpy(&nan2, &bits, 4);
  Table t{{make_float("f", {0.0f, -0.0f, std::nanf(""), nan2, 0.0f, -0.0f})}};
  expect_same(t, roundtrip(path("bits.parquet"), t));
}

TEST_F(WriterTest, EachCodecRoundTripsAndIsRecorded) {
  Table t = random_table(3, 300, 0.1);
  for (Codec c : {Codec::kUncompressed, Codec::kSnappy, Codec::kZstd}) {
    std::string file = path(std::string(codec_name(c)) + ".parquet");
    expect_same(t, roundtrip(file, t, opts(c)));
    auto f = FileReader::open(file);
    for (const ColumnChunk& cc : f->metadata().row_groups[0].columns)
      EXPECT_EQ(cc.meta_data.codec, c);
  }
  try {
    FileWriter w(path("gzip.parquet"), opts(Codec::kGzip));
    FAIL() << "GZIP accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("GZIP"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path("gzip.parquet")));
}

TEST_F(WriterTest, KeyValueMetadataAndCreatedBy) {
  WriteOptions o;
  o.key_value_metadata = {{"huggingface", R"({"info": {"fps": 30}})"}, {"empty", ""}};
  o.created_by = "ember test 1.0";
  write_table(path("kv.parquet"), Table{{make_int64("a", {1})}}, o);
  auto f = FileReader::open(path("kv.parquet"));
  ASSERT_EQ(f->metadata().key_value_metadata.size(), 2u);
  EXPECT_EQ(f->metadata().key_value_metadata[0].key, "huggingface");
  EXPECT_EQ(f->metadata().key_value_metadata[0].value, R"({"info": {"fps": 30}})");
  EXPECT_EQ(f->metadata().key_value_metadata[1].key, "empty");
  EXPECT_EQ(f->metadata().created_by, "ember test 1.0");
}

TEST_F(WriterTest, NoFileAtThePathUntilClose) {
  std::string file = path("atomic.parquet");
  {
    FileWriter w(file);
    w.write_row_group(Table{{make_int64("a", {1, 2})}});
    EXPECT_FALSE(fs::exists(file));
    w.close();
    EXPECT_TRUE(fs::exists(file));
  }
  {
    FileWriter w(path("never.parquet"));
    w.write_row_group(Table{{make_int64("a", {1, 2})}});
  }
  EXPECT_FALSE(fs::exists(path("never.parquet")));
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename(), "atomic.parquet") << "left behind: " << e.path();
}

TEST_F(WriterTest, ExistingFileSurvivesAWriterDestroyedWithoutClose) {
  std::string file = path("keep.parquet");
  Table old{{make_int64("a", {1, 2, 3})}};
  write_table(file, old);
  {
    FileWriter w(file);
    w.write_row_group(Table{{make_string("b", {"new"})}});
  }
  expect_same(old, FileReader::open(file)->read());
  Table replacement{{make_string("b", {"new"})}};
  write_table(file, replacement);
  expect_same(replacement, FileReader::open(file)->read());
}

void expect_invalid(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one naming " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST_F(WriterTest, RowGroupsMustShareTheSchema) {
  std::string file = path("schema.parquet");
  FileWriter w(file);
  w.write_row_group(Table{{make_int64("a", {1}), make_list("l", make_float("element", {1}), {1})}});
  expect_invalid([&] { w.write_row_group(Table{{make_int32("a", {1}), make_list("l", make_float("element", {1}), {1})}}); }, "'a'");
  expect_invalid([&] { w.write_row_group(Table{{make_int64("a", {1}), make_list("l", make_double("element", {1}), {1})}}); }, "'l'");
  expect_invalid([&] { w.write_row_group(Table{{not_null(make_int64("a", {1})), make_list("l", make_float("element", {1}), {1})}}); }, "'a'");
  expect_invalid([&] { w.write_row_group(Table{{make_int64("b", {1}), make_list("l", make_float("element", {1}), {1})}}); }, "'b'");
  expect_invalid([&] { w.write_row_group(Table{{make_int64("a", {1})}}); }, "columns");
  // a rejected row group writes nothing: the writer goes on
  Table good{{make_int64("a", {2}), make_list("l", make_float("element", {2, 3}), {2})}};
  w.write_row_group(good);
  w.close();
  auto f = FileReader::open(file);
  ASSERT_EQ(f->num_row_groups(), 2);
  expect_same(good, f->read_row_group(1));
}

TEST_F(WriterTest, RejectsMalformedColumnsNamingThem) {
  std::string file = path("bad.parquet");
  auto write = [&](Table t) { return [&, t] { write_table(file, t); }; };
  expect_invalid(write(Table{{make_int64("a", {1, 2}), make_int64("short", {1})}}), "'short'");
  Column l = make_list("lst", make_float("element", {1, 2, 3}), {1, 2});
  Column bad_off = l;
  bad_off.offsets = {0, 2, 1};
  expect_invalid(write(Table{{bad_off}}), "'lst'");
  Column past_end = l;
  past_end.offsets = {0, 2, 4};
  expect_invalid(write(Table{{past_end}}), "'lst'");
  Column too_few = l;
  too_few.offsets = {0, 3};
  expect_invalid(write(Table{{too_few}}), "'lst'");
  Column s = make_string("str", {"ab", "c"});
  s.offsets = {0, 2, 9};
  expect_invalid(write(Table{{s}}), "'str'");
  Column inner = l;
  inner.children[0].values.resize(4);
  expect_invalid(write(Table{{inner}}), "'lst.element'");
  expect_invalid(write(Table{{with_nulls(not_null(make_int64("req", {1, 2})), {1, 0})}}), "'req'");
  Column req_elem = make_list("nested", with_nulls(not_null(make_float("element", {1, 2})), {1, 0}), {2});
  expect_invalid(write(Table{{req_elem}}), "'nested.element'");
  expect_invalid(write(Table{{make_struct("empty_struct", {})}}), "'empty_struct'");
  expect_invalid(write(Table{{make_int64("dup", {1}), make_int64("dup", {2})}}), "'dup'");
  expect_invalid(write(Table{}), "at least one column");
  EXPECT_FALSE(fs::exists(file));
}

TEST_F(WriterTest, CloseWithoutRowGroupsAndUseAfterClose) {
  FileWriter w(path("none.parquet"));
  expect_invalid([&] { w.close(); }, "before any write_row_group");
  w.write_row_group(Table{{make_int64("a", {1})}});
  w.close();
  expect_invalid([&] { w.write_row_group(Table{{make_int64("a", {1})}}); }, "after close");
  EXPECT_EQ(FileReader::open(path("none.parquet"))->num_rows(), 1);
}

TEST_F(WriterTest, NullListSlotWithElementsUnderItIsWrittenAsNull) {
  // Arrow allows a null list slot to span elements; they are not part of the data.
  Column l = make_list("l", make_int64("element", {1, 2, 3, 4}), {1, 2, 1});
  l.validity = {1, 0, 1};
  Table got = roundtrip(path("hidden.parquet"), Table{{l}});
  EXPECT_EQ(row_json(got, 0), R"({"l":[1]})");
  EXPECT_EQ(row_json(got, 1), R"({"l":null})");
  EXPECT_EQ(row_json(got, 2), R"({"l":[4]})");
}

TEST_F(WriterTest, RequiredFieldUnderANullStructMayBeNull) {
  // what ember's reader itself produces for a null struct with a required field
  Column a = with_nulls(not_null(make_int32("a", {1, 0})), {1, 0});
  Table t{{with_nulls(make_struct("s", {a}), {1, 0})}};
  expect_same(t, roundtrip(path("s.parquet"), t));
}

}  // namespace
}  // namespace ember::io::parquet
