// Writing column cells as JSON text: what `ember data parquet --json` prints.
// float32 values are printed in their shortest form that reads back to the same float32,
// float64 likewise; NaN and infinities as NaN / Infinity / -Infinity (as Python's json).
// Binary cells are lowercase hex strings.
#pragma once

#include <string>

#include "ember/io/column.h"

namespace ember::io {

void append_json_string(std::string& out, std::string_view s);
void append_float(std::string& out, float v);
void append_double(std::string& out, double v);
// Appends row `row` of column c as a JSON value.
void append_cell_json(std::string& out, const Column& c, int64_t row);
// One table row as a JSON object {"col": value, ...}.
std::string row_json(const Table& t, int64_t row);

}  // namespace ember::io
