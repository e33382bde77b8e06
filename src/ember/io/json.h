// JSON for ember's files: the one way JSON text read from a file is parsed, and writing column
// cells as JSON text (what `ember data parquet --json` prints).
//
// Reading: nlohmann's values are copied, compared and printed by recursion, so a file nested
// tens of thousands of levels deep (no real metadata nests more than a handful) would overflow
// the stack long after parsing succeeded. parse_json refuses text nested deeper than
// kMaxJsonDepth before nlohmann sees it.
//
// Writing:
// float32 values are printed in their shortest form that reads back to the same float32,
// float64 likewise; NaN and infinities as NaN / Infinity / -Infinity (as Python's json).
// Binary cells are lowercase hex strings.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ember/core/json_file.h"
#include "ember/io/column.h"

namespace ember::io {

// The one JSON read path (core/json_file.h), under the names the readers here use.
using ember::check_json_depth;
using ember::kMaxJsonDepth;
using ember::parse_json;
using ember::parse_ordered_json;

void append_json_string(std::string& out, std::string_view s);
void append_float(std::string& out, float v);
void append_double(std::string& out, double v);
// Appends row `row` of column c as a JSON value.
void append_cell_json(std::string& out, const Column& c, int64_t row);
// One table row as a JSON object {"col": value, ...}.
std::string row_json(const Table& t, int64_t row);

}  // namespace ember::io
