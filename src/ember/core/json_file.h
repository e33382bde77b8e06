// JSON files through the file seam: the one way JSON text read from a file is parsed, and atomic
// writes.
//
// Reading: nlohmann's values are copied, compared and printed by recursion, so a file nested
// tens of thousands of levels deep (no real metadata nests more than a handful) would overflow
// the stack long after parsing succeeded. parse_json refuses text nested deeper than
// kMaxJsonDepth before nlohmann sees it.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <string_view>

namespace ember {

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
// Reads and parses a whole regular file; throws kNotFound / kIO / kCorruption naming the path.
nlohmann::json read_json_file(const std::string& path);
// lerobot-train's --rename_map from its JSON text, '{"observation.images.top":
// "observation.images.base_0_rgb"}': source key -> the policy's key. Throws kInvalidArgument
// naming `flag` when it is not a JSON object of non-empty strings.
std::map<std::string, std::string> parse_rename_map(std::string_view text, const std::string& flag);
// Writes j (indented by 2, newline-terminated) to path atomically (AtomicFile).
void write_json_file(const std::string& path, const nlohmann::json& j);
void write_json_file(const std::string& path, const nlohmann::ordered_json& j);

}  // namespace ember
