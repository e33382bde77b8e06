// Record assembly: turns the definition/repetition levels and dense values of a column's
// leaves back into nested columns (lists, structs, nulls), Arrow's layout.
#pragma once

#include <string>
#include <vector>

#include "ember/io/column.h"
#include "ember/io/parquet/column_reader.h"
#include "ember/io/parquet/schema.h"

namespace ember::io::parquet {

// Builds the column of top-level `node` from its leaves' chunks: leaves[k] is the chunk of
// leaf node.first_leaf + k (moved from). Checks that the result has `num_rows` rows and
// consistent shapes; throws kCorruption otherwise. `what` names the file.
Column assemble(const Schema& schema, const Node& node, std::vector<LeafData>& leaves, int64_t num_rows,
                const std::string& what);

}  // namespace ember::io::parquet
