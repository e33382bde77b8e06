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

#include "ember/io/column.h"

namespace ember::io {

// Arrays and objects nested deeper than this are refused (LeRobot's deepest, image statistics
// of shape [3, 1, 1], nest four levels).
inline constexpr int kMaxJsonDepth = 512;

// Throws kCorruption "<what>: JSON nested deeper than 512 levels (at byte N)" when the text's
// brackets nest deeper than kMaxJsonDepth; strings are skipped, so brackets inside them count
// for nothing. Malformed text is left for the parser to report.
void check_json_depth(std::string_view text, const std::string& what);
// Parses text read from `what` (a file name, or "file: line N"). Throws kCorruption
// "<what>: not valid JSON (...)" or the depth error above; never crashes on any input.
nlohmann::json parse_json(std::string_view text, const std::string& what);
// The same, keeping objects' keys in the file's order.
nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& what);

void append_json_string(std::string& out, std::string_view s);
void append_float(std::string& out, float v);
void append_double(std::string& out, double v);
// Appends row `row` of column c as a JSON value.
void append_cell_json(std::string& out, const Column& c, int64_t row);
// One table row as a JSON object {"col": value, ...}.
std::string row_json(const Table& t, int64_t row);

}  // namespace ember::io
