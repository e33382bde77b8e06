#include "ember/core/config_fields.h"

#include <charconv>
#include <cstdlib>

#include "ember/core/error.h"

namespace ember::config {

void bad(const std::string& message) { fail(ErrorKind::kInvalidArgument, message); }

std::string join(Choices choices) {
  std::string s;
  for (const char* c : choices) s += (s.empty() ? "" : "|") + std::string(c);
  return s;
}

std::vector<std::string> split_path(const std::string& name) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot; (dot = name.find('.', start)) != std::string::npos; start = dot + 1) parts.push_back(name.substr(start, dot - start));
  parts.push_back(name.substr(start));
  return parts;
}

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// "[a,b]" or "a,b" -> an array of elements converted as Elem
template <class Elem>
json list_of(std::string s) {
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']') s = s.substr(1, s.size() - 2);
  json out = json::array();
  size_t start = 0;
  while (start <= s.size() && !s.empty()) {
    size_t comma = s.find(',', start);
    std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    part.erase(0, part.find_first_not_of(' '));
    part.erase(part.find_last_not_of(' ') + 1);
    json e = scalar_from_text(part, static_cast<const Elem*>(nullptr));
    if (!std::is_same_v<Elem, std::string> && e.is_string()) return s;  // not a list of Elem: assign reports it
    out.push_back(e);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

void unknown_flag(const std::string& name, const std::vector<std::string>& known) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const std::string& k : known) {
    size_t d = edit_distance(name, k);
    if (d < best_d) best_d = d, best = k;
  }
  std::string message = "unknown flag --" + name;
  if (best_d <= std::max<size_t>(2, name.size() / 2)) {
    message += " (did you mean --" + best + "?)";
  } else {
    // the section's flags, if the section exists
    const std::string section = name.substr(0, name.find('.') + 1);
    std::string listed;
    for (const std::string& k : known)
      if (section.size() > 1 && k.starts_with(section)) listed += (listed.empty() ? "" : ", ") + k;
    if (!listed.empty()) message += " (known: " + listed + ")";
  }
  bad(message);
}

void leaf_names(const json& j, const std::string& prefix, std::vector<std::string>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string name = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object())
      leaf_names(*it, name, out);
    else
      out.push_back(name);
  }
}

json scalar_from_text(const std::string& s, const std::string*) { return s; }
json scalar_from_text(const std::string& s, const int64_t*) {
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec == std::errc() && r.ptr == s.data() + s.size()) return v;
  return s;
}
json scalar_from_text(const std::string& s, const double*) {
  if (s.empty()) return s;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() + s.size() && std::isfinite(v)) return v;
  return s;
}
json scalar_from_text(const std::string& s, const bool*) {
  if (s == "true" || s == "True" || s == "1") return true;
  if (s == "false" || s == "False" || s == "0") return false;
  return s;
}
json list_from_text(const std::string& s, const int64_t*) { return list_of<int64_t>(s); }
json list_from_text(const std::string& s, const double*) { return list_of<double>(s); }
json list_from_text(const std::string& s, const std::string*) { return list_of<std::string>(s); }

}  // namespace ember::config
