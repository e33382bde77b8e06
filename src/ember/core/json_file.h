// JSON files through the file seam: reading with a nesting bound (a file nested tens of thousands
// of levels deep is refused instead of overflowing the parser's stack) and writing atomically.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace ember {

// Deepest nesting of arrays and objects any JSON file ember reads may have.
constexpr int kMaxJsonDepth = 256;

// Parses text (from `name`, for messages); throws kCorruption naming it when the text is not
// JSON or nests deeper than kMaxJsonDepth.
nlohmann::json parse_json(std::string_view text, const std::string& name);
// Reads and parses a whole file; throws kNotFound / kIO / kCorruption naming the path.
nlohmann::json read_json_file(const std::string& path);
// Writes j (indented by 2, newline-terminated) to path atomically (AtomicFile).
void write_json_file(const std::string& path, const nlohmann::json& j);
void write_json_file(const std::string& path, const nlohmann::ordered_json& j);

// The nesting depth of JSON text (strings skipped); stops counting past `limit` + 1.
int json_depth(std::string_view text, int limit = kMaxJsonDepth);

}  // namespace ember
