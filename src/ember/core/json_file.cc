#include "ember/core/json_file.h"

#include "ember/core/error.h"
#include "ember/core/file.h"

namespace ember {

int json_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') --depth;
  }
  return deepest;
}

nlohmann::json parse_json(std::string_view text, const std::string& name) {
  if (json_depth(text) > kMaxJsonDepth)
    fail_corrupt(name + ": JSON nested more than " + std::to_string(kMaxJsonDepth) + " levels deep");
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    fail_corrupt(name + ": " + e.what());
  }
}

nlohmann::json read_json_file(const std::string& path) {
  auto bytes = read_file(path);
  return parse_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path);
}

namespace {
template <typename Json>
void write_json(const std::string& path, const Json& j) {
  std::string text = j.dump(2) + "\n";
  AtomicFile f(path);
  f.write(text.data(), text.size());
  f.commit();
}
}  // namespace

void write_json_file(const std::string& path, const nlohmann::json& j) { write_json(path, j); }
void write_json_file(const std::string& path, const nlohmann::ordered_json& j) { write_json(path, j); }

}  // namespace ember
