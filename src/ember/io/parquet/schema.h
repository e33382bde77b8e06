// Maps a Parquet schema (the flat list of SchemaElements) to ember's column types, and works
// out for each node the definition and repetition levels that mark it present.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ember/io/column.h"
#include "ember/io/parquet/format.h"

namespace ember::io::parquet {

// One node of the logical (Arrow-like) schema.
struct Node {
  std::string name;
  TypeId type = TypeId::kInt64;
  bool nullable = true;
  int16_t def_present = 0;   // definition level at or above which this node is non-null
  int16_t def_elem = 0;      // lists: level at or above which the list has an element
  int16_t rep = 0;           // lists: the repetition level of their elements
  std::vector<Node> children;
  // leaves only
  int leaf_index = -1;            // index of the column chunk in a row group
  int first_leaf = -1;            // first leaf below (or this leaf)
  int num_leaves = 0;
  PhysicalType physical = PhysicalType::kBoolean;
  int32_t type_length = 0;        // FIXED_LEN_BYTE_ARRAY width
  bool widen_uint32 = false;      // UINT_32 stored in INT32, read as int64
  int16_t max_def = 0, max_rep = 0;
};

struct Schema {
  std::vector<Node> fields;     // top-level columns
  std::vector<const Node*> leaves;  // by leaf index; pointers into fields
  std::vector<std::vector<const Node*>> leaf_paths;  // top-level node .. leaf, per leaf
};

// Builds the logical schema; throws kCorruption for a malformed schema and kUnsupported
// (naming the column) for types ember does not read. `what` names the file.
std::unique_ptr<Schema> build_schema(const std::vector<SchemaElement>& elements, const std::string& what);

// An empty column of the node's type (names, types, nullability, no rows).
Column empty_column(const Node& node);

}  // namespace ember::io::parquet
