#include "ember/core/json_file.h"

#include "ember/core/error.h"
#include "ember/core/file.h"

namespace ember {

void check_json_depth(std::string_view text, const std::string& what) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped character cannot end the string
      else if (c == '"') in_string = false;
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[':
      case '{':
        if (++depth > kMaxJsonDepth)
          fail_corrupt(what + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (at byte " +
                       std::to_string(i) + ")");
        break;
      case ']':
      case '}': --depth; break;
      default: break;
    }
  }
}

namespace {

template <class Json>
Json parse_checked(std::string_view text, const std::string& what) {
  check_json_depth(text, what);
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    std::string why = e.what();
    if (auto p = why.find("] "); why.rfind("[json.exception", 0) == 0 && p != std::string::npos) why = why.substr(p + 2);
    // the parser quotes what it last read, which can be a whole long string: keep its end
    if (auto p = why.find("last read: '"); p != std::string::npos && why.size() - p > 96)
      why = why.substr(0, p + 12) + "..." + why.substr(why.size() - 48);
    fail_corrupt(what + ": not valid JSON (" + why + ")");
  }
}

template <typename Json>
void write_json(const std::string& path, const Json& j) {
  std::string text = j.dump(2) + "\n";
  AtomicFile f(path);
  f.write(text.data(), text.size());
  f.commit();
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& what) { return parse_checked<nlohmann::json>(text, what); }

nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& what) {
  return parse_checked<nlohmann::ordered_json>(text, what);
}

nlohmann::json read_json_file(const std::string& path) {
  auto bytes = read_file(path);
  return parse_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path);
}

void write_json_file(const std::string& path, const nlohmann::json& j) { write_json(path, j); }
void write_json_file(const std::string& path, const nlohmann::ordered_json& j) { write_json(path, j); }

std::map<std::string, std::string> parse_rename_map(std::string_view text, const std::string& flag) {
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    throw Error(ErrorKind::kInvalidArgument, flag + ": expected a JSON object like '{\"observation.images.top\": "
                                                    "\"observation.images.base_0_rgb\"}', got '" + std::string(text) + "'");
  std::map<std::string, std::string> out;
  for (const auto& [from, to] : j.items()) {
    if (!to.is_string() || from.empty() || to.get<std::string>().empty())
      throw Error(ErrorKind::kInvalidArgument,
                  flag + ": entry '" + from + "' must map a source key to a non-empty policy key, got " + to.dump());
    for (const auto& [other, target] : out)
      if (target == to.get<std::string>())  // which of the two would the policy see?
        throw Error(ErrorKind::kInvalidArgument, flag + ": entries '" + other + "' and '" + from + "' both map to '" + target +
                                                     "' (one source per policy camera)");
    out[from] = to.get<std::string>();
  }
  return out;
}

}  // namespace ember
