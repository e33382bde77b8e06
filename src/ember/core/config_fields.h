// One way to declare a run's configuration. A schema lists every field once: its dotted name
// (the flag, --optimizer.lr, and the JSON path, {"optimizer": {"lr": ...}}), the member, for
// strings the allowed values, and a one-line description. Flags, JSON in and out, --help and the
// choice checks are generic over it. `ember train` (train/train_config.h) and `ember rl`
// (rl/rl_config.h) declare theirs so.
//
// A schema is a type with a member template
//   template <class C, class V> void operator()(C& config, V&& visit) const;
// calling visit(name, field, Choices{...}, help) for every field, in --help's order. Field types:
// std::string, int64_t, double, bool, std::vector<int64_t>, std::vector<std::string>,
// std::array<double, 2>, and std::optional of the first three and of std::vector<int64_t>.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace ember::config {

using json = nlohmann::json;
using Choices = std::initializer_list<const char*>;
using Help = const char*;  // a flag's one-line description for --help

// Throws Error(kInvalidArgument, message).
[[noreturn]] void bad(const std::string& message);
std::string join(Choices choices);  // "a|b|c"
// "policy.type" -> {"policy", "type"}
std::vector<std::string> split_path(const std::string& name);
// "unknown flag --NAME", with the nearest known name or the section's flags.
[[noreturn]] void unknown_flag(const std::string& name, const std::vector<std::string>& known);
// The dotted names of every leaf of j (objects are sections).
void leaf_names(const json& j, const std::string& prefix, std::vector<std::string>& out);

// A flag's text as JSON of the field's type where it reads as one; else the text as a JSON string
// (so that assign reports the mismatch with the text). Lists: "[a,b]" or "a,b".
json scalar_from_text(const std::string& s, const std::string*);
json scalar_from_text(const std::string& s, const int64_t*);
json scalar_from_text(const std::string& s, const double*);
json scalar_from_text(const std::string& s, const bool*);
json list_from_text(const std::string& s, const int64_t*);
json list_from_text(const std::string& s, const double*);
json list_from_text(const std::string& s, const std::string*);

namespace detail {

template <class T> struct Type;
template <> struct Type<std::string> {
  static const char* what() { return "a string"; }
  static const char* help() { return "STRING"; }
  static bool ok(const json& j) { return j.is_string(); }
};
template <> struct Type<int64_t> {
  static const char* what() { return "an integer"; }
  static const char* help() { return "INT"; }
  static bool ok(const json& j) { return j.is_number_integer(); }
};
template <> struct Type<double> {
  static const char* what() { return "a number"; }
  static const char* help() { return "FLOAT"; }
  static bool ok(const json& j) { return j.is_number() && std::isfinite(j.get<double>()); }
};
template <> struct Type<bool> {
  static const char* what() { return "true or false"; }
  static const char* help() { return "BOOL"; }
  static bool ok(const json& j) { return j.is_boolean(); }
};
template <> struct Type<std::vector<int64_t>> {
  static const char* what() { return "a list of integers like [0,1,2]"; }
  static const char* help() { return "LIST[INT]"; }
  static bool ok(const json& j) {
    return j.is_array() && std::all_of(j.begin(), j.end(), [](const json& e) { return e.is_number_integer(); });
  }
};
template <> struct Type<std::vector<std::string>> {
  static const char* what() { return "a list of names like [a,b]"; }
  static const char* help() { return "LIST[STRING]"; }
  static bool ok(const json& j) {
    return j.is_array() && std::all_of(j.begin(), j.end(), [](const json& e) { return e.is_string(); });
  }
};
template <> struct Type<std::array<double, 2>> {
  static const char* what() { return "two numbers like [0.9,0.95]"; }
  static const char* help() { return "LIST[FLOAT]"; }
  static bool ok(const json& j) {
    return j.is_array() && j.size() == 2 && std::all_of(j.begin(), j.end(), [](const json& e) { return e.is_number(); });
  }
};
template <class T> struct Type<std::optional<T>> {
  static const char* help() { return Type<T>::help(); }
};

template <class T> struct IsOptional : std::false_type {};
template <class T> struct IsOptional<std::optional<T>> : std::true_type {};
template <class T> struct IsList : std::false_type {};
template <class E> struct IsList<std::vector<E>> : std::true_type {};
template <class E, size_t N> struct IsList<std::array<E, N>> : std::true_type {};

// `where`: "--steps" or "FILE: steps"; `raw`: the flag's text when the value came from a flag.
template <class T>
void assign(const json& j, T& field, Choices choices, const std::string& where, const std::string* raw) {
  if constexpr (IsOptional<T>::value) {
    if (j.is_null()) {
      field.reset();
      return;
    }
    typename T::value_type value{};
    assign(j, value, choices, where, raw);
    field = std::move(value);
  } else {
    const std::string got = raw ? "'" + *raw + "'" : j.dump();
    if (!Type<T>::ok(j)) bad(where + ": expected " + Type<T>::what() + ", got " + got);
    field = j.get<T>();
    if constexpr (std::is_same_v<T, std::string>) {
      if (choices.size() && std::find(choices.begin(), choices.end(), field) == choices.end())
        bad(where + ": expected one of " + join(choices) + ", got " + got);
    }
  }
}

template <class T>
json from_text(const std::string& s, const T*) {
  if constexpr (IsOptional<T>::value) {
    if (s == "null" || s == "none" || s == "None") return nullptr;
    return from_text(s, static_cast<const typename T::value_type*>(nullptr));
  } else if constexpr (IsList<T>::value) {
    return list_from_text(s, static_cast<const typename T::value_type*>(nullptr));
  } else {
    return scalar_from_text(s, static_cast<const T*>(nullptr));
  }
}

// a JSON value of the field (null for an unset optional)
template <class T>
nlohmann::ordered_json value_json(const T& field) {
  if constexpr (IsOptional<T>::value) {
    return field ? nlohmann::ordered_json(*field) : nlohmann::ordered_json(nullptr);
  } else {
    return nlohmann::ordered_json(field);
  }
}

}  // namespace detail

// The dotted names of every field, in the schema's order.
template <class Config, class Schema>
std::vector<std::string> field_names(const Schema& schema) {
  std::vector<std::string> names;
  Config probe;
  schema(probe, [&](const char* name, auto&, Choices, Help) { names.emplace_back(name); });
  return names;
}

// Every field, nested by the dots of its name; unset optionals are null.
template <class Config, class Schema>
nlohmann::ordered_json to_json(const Schema& schema, const Config& config) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  schema(config, [&](const char* name, const auto& field, Choices, Help) {
    nlohmann::ordered_json* at = &out;
    for (const std::string& part : split_path(name)) at = &(*at)[part];
    *at = detail::value_json(field);
  });
  return out;
}

// The defaults overridden by the keys present in j; `source` names it in errors (a file).
// Throws kInvalidArgument naming the source and the key for an unknown key or a badly typed value.
template <class Config, class Schema>
Config from_json(const Schema& schema, const json& j, const std::string& source) {
  if (!j.is_object()) bad(source + ": expected a JSON object");
  Config c;
  std::set<std::string> known;
  schema(c, [&](const char* name, auto& field, Choices choices, Help) {
    known.insert(name);
    const json* at = &j;
    for (const std::string& part : split_path(name)) {
      if (!at->is_object() || !at->contains(part)) return;  // absent: keep the default
      at = &(*at)[part];
    }
    detail::assign(*at, field, choices, source + ": " + name, nullptr);
  });
  std::vector<std::string> leaves;
  leaf_names(j, "", leaves);
  for (const std::string& leaf : leaves)
    if (!known.count(leaf)) bad(source + ": unknown key " + leaf);
  return c;
}

// Sets the field called `name` from a flag's text; false where there is no such field. A list
// field given again (`--task a --task b`) appends where `append`.
template <class Config, class Schema>
bool set_flag(const Schema& schema, Config& c, const std::string& name, const std::string& text, bool append = false) {
  bool found = false;
  schema(c, [&](const char* field_name, auto& field, Choices choices, Help) {
    if (found || name != field_name) return;
    found = true;
    using T = std::remove_reference_t<decltype(field)>;
    if constexpr (detail::IsList<T>::value && !std::is_same_v<T, std::array<double, 2>>) {
      if (append) {
        T more;
        detail::assign(detail::from_text(text, static_cast<const T*>(nullptr)), more, choices, "--" + name, &text);
        field.insert(field.end(), more.begin(), more.end());
        return;
      }
    }
    detail::assign(detail::from_text(text, static_cast<const T*>(nullptr)), field, choices, "--" + name, &text);
  });
  return found;
}

// A string field with choices holds one of them (a config built in code or read from a file).
template <class Config, class Schema>
void check_choices(const Schema& schema, const Config& c) {
  schema(c, [&](const char* name, const auto& field, Choices choices, Help) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(field)>, std::string>) {
      if (choices.size() && std::find(choices.begin(), choices.end(), field) == choices.end())
        bad(std::string("--") + name + ": expected one of " + join(choices) + ", got '" + field + "'");
    }
  });
}

struct Flag {
  std::string name, value;
};

// args ("--name=value", "--name value", a bare "--flag" for a boolean field, or "--flag true")
// as (name, value) pairs, unchecked against the schema except to tell the boolean fields and to
// name an unknown flag that has no value. `extra`: names outside the schema that take a value
// (--config_path).
template <class Config, class Schema>
std::vector<Flag> split_flags(const Schema& schema, const std::vector<std::string>& args,
                              const std::vector<std::string>& extra = {}) {
  auto is_bool = [&](const std::string& name) {
    bool result = false;
    Config probe;
    schema(probe, [&](const char* field_name, auto& field, Choices, Help) {
      if (name == field_name) result = std::is_same_v<std::remove_reference_t<decltype(field)>, bool>;
    });
    return result;
  };
  std::vector<Flag> flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!arg.starts_with("--") || arg.size() == 2) bad("unexpected argument '" + arg + "' (flags look like --name=value)");
    const size_t eq = arg.find('=');
    std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (eq != std::string::npos) {
      flags.push_back({name, arg.substr(eq + 1)});
      continue;
    }
    const bool has_next = i + 1 < args.size() && !args[i + 1].starts_with("--");
    if (is_bool(name)) {
      const bool next_is_bool = has_next && scalar_from_text(args[i + 1], static_cast<const bool*>(nullptr)).is_boolean();
      flags.push_back({name, next_is_bool ? args[++i] : "true"});
    } else if (has_next) {
      flags.push_back({name, args[++i]});
    } else {
      auto names = field_names<Config>(schema);
      names.insert(names.end(), extra.begin(), extra.end());
      if (std::find(names.begin(), names.end(), name) == names.end()) unknown_flag(name, names);
      bad("--" + name + ": missing value");
    }
  }
  return flags;
}

// Sets each flag (a list field given twice appends); an unknown name fails naming the nearest.
// Flags named in `skip` are left to the caller.
template <class Config, class Schema>
void apply_flags(const Schema& schema, Config& c, const std::vector<Flag>& flags, const std::vector<std::string>& skip = {}) {
  std::set<std::string> seen;
  for (const auto& f : flags) {
    if (std::find(skip.begin(), skip.end(), f.name) != skip.end()) continue;
    if (!set_flag(schema, c, f.name, f.value, seen.count(f.name) > 0)) {
      auto names = field_names<Config>(schema);
      names.insert(names.end(), skip.begin(), skip.end());
      unknown_flag(f.name, names);
    }
    seen.insert(f.name);
  }
}

// --help's list: one line per field, "  --optimizer.lr FLOAT (default 2.5e-05)  peak learning
// rate" (a string with choices shows them as its type: varlen|padded), each ending in a newline.
// `more_defaults(name)`: text appended to a default ("; groot: 16"), or empty.
template <class Config, class Schema, class More>
std::string flags_help(const Schema& schema, More&& more_defaults) {
  const nlohmann::ordered_json defaults = to_json(schema, Config{});
  std::string out;
  Config probe;
  schema(probe, [&](const char* name, const auto& field, Choices choices, Help help) {
    using T = std::remove_cvref_t<decltype(field)>;
    std::string type = detail::Type<T>::help();
    if (std::is_same_v<T, std::string> && choices.size()) type = join(choices);
    const nlohmann::ordered_json* at = &defaults;
    for (const std::string& part : split_path(name)) at = &(*at)[part];
    std::string def = at->is_null() ? "unset" : at->is_string() ? at->get<std::string>() : at->dump();
    if (def.empty() || def == "[]") def = def.empty() ? "\"\"" : "none";
    def += more_defaults(std::string(name));
    out += "  --" + std::string(name) + " " + type + " (default " + def + ")  " + help + "\n";
  });
  return out;
}

}  // namespace ember::config
