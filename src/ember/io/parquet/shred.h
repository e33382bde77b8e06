// Dremel shredding: turns a (possibly nested) column into, for each of its leaves, the
// definition and repetition levels and the positions of the non-null values — what a
// Parquet column chunk stores. The inverse of assemble.h.
//
// Levels follow the schema the writer emits (writer.cc): a nullable node adds one definition
// level, a list adds one more (and one repetition level) for its repeated "list" group.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/io/column.h"

namespace ember::io::parquet {

struct ShreddedLeaf {
  const Column* leaf = nullptr;        // the leaf column the values come from (borrowed)
  std::vector<std::string> path;       // path_in_schema, e.g. {"state", "list", "element"}
  int16_t max_def = 0, max_rep = 0;
  int64_t num_entries = 0;             // level entries: values, nulls and empty lists
  std::vector<int16_t> def;            // [num_entries]; empty when max_def == 0
  std::vector<int16_t> rep;            // [num_entries]; empty when max_rep == 0
  std::vector<int64_t> slots;          // [num_values] leaf slots of the non-null values, in order
};

// Checks that `c` is well formed (validity and value sizes, list and string offsets inside
// their data, struct fields as long as the struct, no nulls in a non-nullable slot) and
// throws Error(kInvalidArgument) naming `what` and the column's dotted path otherwise.
// Nothing else in this file reads a column that has not passed this check.
void check_column(const Column& c, const std::string& what);

// Shreds a top-level column that passed check_column(); one entry per leaf, in schema order.
// The result borrows `c`, which must outlive it.
std::vector<ShreddedLeaf> shred(const Column& c);

}  // namespace ember::io::parquet
