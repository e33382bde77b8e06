// The in-memory column helpers of column.h: builders, slice, append, equal, type_string.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/core/error.h"
#include "ember/io/column.h"
#include "ember/io/json.h"

namespace ember::io {
namespace {

std::string cells(const Column& c) {
  std::string out;
  for (int64_t i = 0; i < c.length; ++i) {
    if (i) out += " ";
    append_cell_json(out, c, i);
  }
  return out;
}

Column nullable_strings() {
  Column c = make_string("s", {"ab", "", "c", "def"});
  c.validity = {1, 1, 0, 1};
  c.offsets = {0, 2, 2, 2, 5};  // the null slot is empty
  c.values = {'a', 'b', 'd', 'e', 'f'};
  return c;
}

// rows: [[1, 2], [], null, [3]]
Column list_column() {
  Column l = make_list("l", make_int64("x", {1, 2, 3}), {2, 0, 0, 1});
  l.validity = {1, 1, 0, 1};
  return l;
}

TEST(ColumnTest, BuildersSetTypesAndLengths) {
  Column b = make_bool("b", {true, false, true});
  EXPECT_EQ(b.type, TypeId::kBool);
  EXPECT_EQ(b.length, 3);
  EXPECT_EQ(b.values, (std::vector<uint8_t>{1, 0, 1}));
  Column f = make_float("f", {1.5f, -2});
  EXPECT_EQ(f.value<float>(1), -2.0f);
  EXPECT_EQ(f.data<float>().size(), 2u);
  Column s = make_string("s", {"", "héllo"});
  EXPECT_EQ(s.offsets, (std::vector<int64_t>{0, 0, 6}));
  EXPECT_EQ(s.str(1), "héllo");
  EXPECT_EQ(make_string("b", {"x"}, TypeId::kBinary).type, TypeId::kBinary);
  EXPECT_EQ(cells(list_column()), "[1,2] [] null [3]");
  EXPECT_EQ(list_column().children[0].name, "element") << "make_list names the child 'element'";
}

TEST(ColumnTest, MakeListRejectsSizesThatDoNotAddUp) {
  try {
    make_list("actions", make_float("x", {1, 2, 3}), {1, 1});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("actions"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(make_list("empty", make_float("x", {}), {0, 0}));
}

TEST(ColumnTest, MakeStructRejectsFieldsOfDifferentLengths) {
  try {
    make_struct("image", {make_string("bytes", {"a", "b"}, TypeId::kBinary), make_string("path", {"p"})});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("path"), std::string::npos) << e.what();
  }
  Column s = make_struct("image", {make_string("bytes", {"a"}, TypeId::kBinary), make_string("path", {"p"})});
  EXPECT_EQ(s.length, 1);
  ASSERT_NE(s.find_child("path"), nullptr);
  EXPECT_EQ(s.find_child("path")->str(0), "p");
  EXPECT_EQ(s.find_child("nope"), nullptr);
}

TEST(ColumnTest, NullCountAndValidity) {
  Column c = nullable_strings();
  EXPECT_EQ(c.null_count(), 1);
  EXPECT_FALSE(c.is_valid(2));
  EXPECT_TRUE(make_int64("a", {1}).is_valid(0)) << "empty validity means all valid";
  EXPECT_EQ(make_int64("a", {1}).null_count(), 0);
}

TEST(ColumnTest, SliceFixedWidth) {
  Column c = make_int32("a", {1, 2, 3, 4, 5});
  c.validity = {1, 0, 1, 1, 1};
  c.nullable = false;
  Column s = slice(c, 1, 4);
  EXPECT_EQ(s.length, 3);
  EXPECT_EQ(s.validity, (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(s.value<int32_t>(2), 4);
  EXPECT_FALSE(s.nullable) << "slice keeps nullability";
  EXPECT_EQ(slice(c, 2, 2).length, 0);
}

TEST(ColumnTest, SliceStringsRebasesOffsets) {
  Column s = slice(nullable_strings(), 2, 4);
  EXPECT_EQ(s.offsets, (std::vector<int64_t>{0, 0, 3}));
  EXPECT_EQ(cells(s), "null \"def\"");
  EXPECT_EQ(s.values.size(), 3u);
}

TEST(ColumnTest, SliceListsSlicesTheElements) {
  Column s = slice(list_column(), 1, 4);
  EXPECT_EQ(cells(s), "[] null [3]");
  EXPECT_EQ(s.offsets, (std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(s.children[0].length, 1);
}

TEST(ColumnTest, SliceStructSlicesEveryField) {
  Column st = make_struct("st", {make_int64("a", {1, 2, 3}), make_string("b", {"x", "y", "z"})});
  st.validity = {1, 0, 1};
  Column s = slice(st, 1, 3);
  EXPECT_EQ(cells(s), R"(null {"a":3,"b":"z"})");
  EXPECT_EQ(s.children[1].length, 2);
}

TEST(ColumnTest, SliceThenAppendGivesTheColumnBack) {
  for (const Column& c : {list_column(), nullable_strings(), make_double("d", {1, 2, 3, 4})}) {
    for (int64_t cut = 0; cut <= c.length; ++cut) {
      Column a = slice(c, 0, cut);
      append(a, slice(c, cut, c.length));
      EXPECT_TRUE(equal(a, c)) << c.name << " cut at " << cut << ": " << cells(a) << " vs " << cells(c);
    }
  }
}

TEST(ColumnTest, AppendMixesColumnsWithAndWithoutNulls) {
  Column a = make_int64("a", {1, 2});
  Column b = make_int64("a", {0, 4});
  b.validity = {0, 1};
  append(a, b);
  EXPECT_EQ(a.validity, (std::vector<uint8_t>{1, 1, 0, 1}));
  append(a, make_int64("a", {5}));
  EXPECT_EQ(a.validity, (std::vector<uint8_t>{1, 1, 0, 1, 1}));
  EXPECT_EQ(cells(a), "1 2 null 4 5");
}

TEST(ColumnTest, AppendToAnEmptyListWithoutOffsets) {
  Column a;
  a.name = "l";
  a.type = TypeId::kList;
  a.children.push_back(make_int64("element", {}));  // offsets empty: a column of no rows
  append(a, list_column());
  EXPECT_EQ(cells(a), "[1,2] [] null [3]");
}

TEST(ColumnTest, AppendRejectsAnotherType) {
  Column a = make_int64("a", {1});
  try {
    append(a, make_double("a", {1}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
  }
}

TEST(ColumnTest, EqualComparesNamesTypesNullsAndBits) {
  EXPECT_TRUE(equal(list_column(), list_column()));
  EXPECT_FALSE(equal(make_int64("a", {1}), make_int64("b", {1})));
  EXPECT_FALSE(equal(make_int64("a", {1}), make_double("a", {1})));
  EXPECT_FALSE(equal(make_int64("a", {1}), make_int64("a", {1, 2})));
  EXPECT_FALSE(equal(make_int64("a", {1}), make_int64("a", {2})));
  Column nulled = make_int64("a", {0});
  nulled.validity = {0};
  EXPECT_FALSE(equal(make_int64("a", {0}), nulled));
  Column all_valid = make_int64("a", {0});
  all_valid.validity = {1};
  EXPECT_TRUE(equal(make_int64("a", {0}), all_valid)) << "an all-ones validity equals none";
  EXPECT_FALSE(equal(make_float("f", {0.0f}), make_float("f", {-0.0f}))) << "floats compare bitwise";
  EXPECT_TRUE(equal(make_float("f", {std::nanf("")}), make_float("f", {std::nanf("")})));
  Column other = list_column();
  other.children[0].values[0] = 9;
  EXPECT_FALSE(equal(list_column(), other));
  Column empty_offsets;
  empty_offsets.name = "s";
  empty_offsets.type = TypeId::kString;
  EXPECT_TRUE(equal(empty_offsets, make_string("s", {}))) << "no offsets equals {0} for no rows";
}

TEST(ColumnTest, TypeString) {
  Column st = make_struct("img", {make_string("bytes", {}, TypeId::kBinary), make_string("path", {})});
  EXPECT_EQ(type_string(st), "struct<bytes: binary, path: string>");
  Column l = make_list("l", make_list("x", make_float("y", {}), {}), {});
  l.children[0].nullable = false;
  EXPECT_EQ(type_string(l), "list<element: list<element: float> not null>");
  Column r = make_int32("r", {});
  r.nullable = false;
  EXPECT_EQ(type_string(r), "int32 not null");
}

TEST(ColumnTest, TableFindsColumnsByName) {
  Table t{{make_int64("a", {1, 2}), make_string("b", {"x", "y"})}};
  EXPECT_EQ(t.num_rows(), 2);
  ASSERT_NE(t.find("b"), nullptr);
  EXPECT_EQ(t.find("b")->str(1), "y");
  EXPECT_EQ(t.find("c"), nullptr);
  EXPECT_EQ(Table{}.num_rows(), 0);
}

TEST(ColumnTest, FixedWidths) {
  EXPECT_EQ(fixed_width(TypeId::kBool), 1u);
  EXPECT_EQ(fixed_width(TypeId::kInt32), 4u);
  EXPECT_EQ(fixed_width(TypeId::kFloat), 4u);
  EXPECT_EQ(fixed_width(TypeId::kInt64), 8u);
  EXPECT_EQ(fixed_width(TypeId::kDouble), 8u);
  EXPECT_EQ(fixed_width(TypeId::kString), 0u);
  EXPECT_EQ(fixed_width(TypeId::kList), 0u);
  EXPECT_STREQ(type_name(TypeId::kStruct), "struct");
}

}  // namespace
}  // namespace ember::io
