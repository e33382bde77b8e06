// Every fixture written by pyarrow reads back with values identical to its .expected.json.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/core/error.h"
#include "ember/io/json.h"
#include "ember/io/parquet/reader.h"

namespace ember::io::parquet {
namespace {

const std::string kDir = std::string(EMBER_TEST_DATA) + "/parquet/";

// Compares one cell (as ember prints it, parsed back) with the fixture's expected value.
// float32 cells compare as float32: the fixture holds the exact float32 value as a double.
void expect_cell(const Column& c, int64_t row, const nlohmann::json& parsed, const nlohmann::ordered_json& expected,
                 const std::string& where) {
  if (expected.is_null()) {
    EXPECT_TRUE(parsed.is_null()) << where << ": expected null, got " << parsed.dump();
    return;
  }
  ASSERT_FALSE(parsed.is_null()) << where << ": expected " << expected.dump() << ", got null";
  switch (c.type) {
    case TypeId::kFloat:
      EXPECT_EQ(c.value<float>(row), expected.get<double>()) << where;
      EXPECT_EQ(double(c.value<float>(row)), expected.get<double>()) << where << ": not an exact float32";
      return;
    case TypeId::kDouble:
      EXPECT_EQ(c.value<double>(row), expected.get<double>()) << where;
      return;
    case TypeId::kList: {
      ASSERT_TRUE(expected.is_array()) << where;
      int64_t b = c.offsets[size_t(row)], e = c.offsets[size_t(row) + 1];
      ASSERT_EQ(size_t(e - b), expected.size()) << where << ": list length";
      for (int64_t i = b; i < e; ++i)
        expect_cell(c.children[0], i, parsed[size_t(i - b)], expected[size_t(i - b)], where + "[" + std::to_string(i - b) + "]");
      return;
    }
    case TypeId::kStruct:
      for (size_t k = 0; k < c.children.size(); ++k) {
        const Column& f = c.children[k];
        std::string key = f.type == TypeId::kBinary ? f.name + "_hex" : f.name;
        ASSERT_TRUE(expected.contains(key)) << where << ": expected has no " << key;
        expect_cell(f, row, parsed[f.name], expected[key], where + "." + f.name);
      }
      return;
    default:
      EXPECT_EQ(parsed, nlohmann::json(expected)) << where;  // one JSON type: json == ordered_json is ambiguous to clang
  }
}

class FixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureTest, ReadsEveryValueExactly) {
  const std::string name = GetParam();
  auto f = FileReader::open(kDir + name + ".parquet");
  std::ifstream in(kDir + name + ".expected.json");
  nlohmann::ordered_json expected = nlohmann::ordered_json::parse(in);
  ASSERT_EQ(f->num_rows(), expected["num_rows"].get<int64_t>());
  if (expected.contains("row_groups")) {
    ASSERT_EQ(f->num_row_groups(), expected["row_groups"].get<int>());
  }
  Table t = f->read();
  ASSERT_EQ(t.num_rows(), f->num_rows());
  ASSERT_EQ(t.columns.size(), expected["columns"].size());
  size_t k = 0;
  for (const auto& item : expected["columns"].items()) {
    const std::string& col_name = item.key();
    const auto& values = item.value();
    const Column& c = t.columns[k++];
    ASSERT_EQ(c.name, col_name);
    ASSERT_EQ(int64_t(values.size()), c.length) << col_name;
    for (int64_t r = 0; r < c.length; ++r) {
      std::string text;
      append_cell_json(text, c, r);
      nlohmann::json parsed = nlohmann::json::parse(text);
      expect_cell(c, r, parsed, values[size_t(r)], name + ":" + col_name + "[" + std::to_string(r) + "]");
      if (HasFailure()) return;  // one mismatch says enough
    }
  }
}

TEST_P(FixtureTest, RowRangesMatchTheWholeFile) {
  auto f = FileReader::open(kDir + GetParam() + ".parquet");
  Table all = f->read();
  int64_t n = f->num_rows();
  for (auto [b, e] : std::vector<std::pair<int64_t, int64_t>>{{0, n}, {1, n - 1}, {n / 3, n / 2}, {n - 1, n}, {5, 5}}) {
    Table part = f->read_rows(b, e);
    ASSERT_EQ(part.num_rows(), e - b);
    for (size_t c = 0; c < all.columns.size(); ++c)
      EXPECT_TRUE(equal(part.columns[c], slice(all.columns[c], b, e))) << GetParam() << " column " << all.columns[c].name
                                                                       << " rows " << b << ".." << e;
  }
}

TEST_P(FixtureTest, ProjectionDecodesOnlyTheColumnsAsked) {
  auto f = FileReader::open(kDir + GetParam() + ".parquet");
  Table all = f->read();
  std::vector<std::string> names = f->column_names();
  std::vector<std::string> pick = {names.back(), names.front()};
  Table t = f->read(pick);
  ASSERT_EQ(t.columns.size(), 2u);
  EXPECT_TRUE(equal(t.columns[0], all.columns.back()));
  EXPECT_TRUE(equal(t.columns[1], all.columns.front()));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FixtureTest,
                         ::testing::Values("snappy_dict_v1_fixed", "snappy_dict_v1_list", "zstd_plain_v2_fixed",
                                           "gzip_dict_v2_list", "none_plain_v1_fixed", "snappy_smallpages",
                                           "episodes_meta"));

TEST(Fixture, TasksTableHasThePandasIndexColumn) {
  auto f = FileReader::open(kDir + "tasks.parquet");
  Table t = f->read();
  const Column* task = t.find("task");
  ASSERT_NE(task, nullptr);
  ASSERT_EQ(task->type, TypeId::kString);
  ASSERT_GT(task->length, 0);
  const Column* idx = t.find("task_index");
  ASSERT_NE(idx, nullptr);
  EXPECT_EQ(idx->type, TypeId::kInt64);
}

TEST(Fixture, UnknownColumnIsAnErrorNamingIt) {
  auto f = FileReader::open(kDir + "tasks.parquet");
  try {
    f->read({"nope"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("tasks.parquet"), std::string::npos);
  }
}

}  // namespace
}  // namespace ember::io::parquet
