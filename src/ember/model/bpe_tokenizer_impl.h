// The pieces of BpeTokenizer that its three files share (bpe_tokenizer.cc: encoding and
// decoding; _json.cc: reading tokenizer.json and writing it; _slow.cc: the slow layout as
// tokenizer.json). Not an API: only those files include it.
#pragma once

#include <pcre2.h>  // PCRE2_CODE_UNIT_WIDTH=8 comes with the PCRE2::pcre2-8 target

#include <array>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ember/core/error.h"
#include "ember/model/bpe_tokenizer.h"

namespace ember::model {
namespace bpe_impl {

using nlohmann::json;

// --- GPT-2's byte <-> printable character table (bytes_to_unicode) ------------------------

struct ByteTables {
  std::array<std::string, 256> to_char;  // byte -> the UTF-8 of its character
  std::array<int, 324> to_byte;          // character (code point < 324) -> byte, or -1
};

const ByteTables& byte_tables();

// --- regexes ---------------------------------------------------------------------------------

struct CodeFree {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};

// A compiled pre-tokenizer pattern: a regex, or a literal string (Split's {"String": ...}).
struct Regex {
  std::string pattern;
  bool literal = false;
  std::unique_ptr<pcre2_code, CodeFree> code;
};

// Throws kUnsupported naming `where` when the pattern does not compile.
Regex compile(const std::string& pattern, bool literal, const std::string& where);

// --- reading the JSON fields -----------------------------------------------------------------

struct AddedToken {
  int id = 0;
  std::string content;
  bool special = false;
  bool normalized = false;
};

// An added token as tokenizer.json's added_tokens holds it.
inline json added_token_json(const AddedToken& t) {
  return {{"id", t.id},        {"content", t.content},       {"single_word", false}, {"lstrip", false},
          {"rstrip", false},   {"normalized", t.normalized}, {"special", t.special}};
}

// Field access that names the file and the field in every error.
struct Fields {
  std::string file;

  [[noreturn]] void bad(const std::string& field, const std::string& what) const {
    fail_corrupt(file + ": " + field + ": " + what);
  }
  [[noreturn]] void unsupported(const std::string& field, const std::string& what) const {
    fail_unsupported(file + ": " + field + ": " + what);
  }
  const json& object(const json& j, const std::string& field) const {
    if (!j.is_object()) bad(field, "expected an object");
    return j;
  }
  const json& at(const json& j, const char* key, const std::string& field) const {
    auto it = j.find(key);
    if (it == j.end()) bad(field, "missing");
    return *it;
  }
  std::string str(const json& j, const std::string& field) const {
    if (!j.is_string()) bad(field, "expected a string");
    return j.get<std::string>();
  }
  bool flag(const json& j, const char* key, const std::string& field, bool otherwise) const {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return otherwise;
    if (!it->is_boolean()) bad(field, "expected true or false");
    return it->get<bool>();
  }
  int id(const json& j, const std::string& field) const {
    if (!j.is_number_integer() || j.get<int64_t>() < 0 || j.get<int64_t>() >= INT_MAX) bad(field, "expected a token id (an integer >= 0)");
    return static_cast<int>(j.get<int64_t>());
  }
  // An added token of added_tokens (tokenizer.json) or added_tokens_decoder (tokenizer_config.json).
  AddedToken added(const json& j, int id, const std::string& field) const {
    object(j, field);
    AddedToken t;
    t.id = id;
    t.content = str(at(j, "content", field + ".content"), field + ".content");
    if (t.content.empty()) bad(field + ".content", "empty");
    t.special = flag(j, "special", field + ".special", false);
    t.normalized = flag(j, "normalized", field + ".normalized", !t.special);
    for (const char* key : {"lstrip", "rstrip", "single_word"})
      if (flag(j, key, field + "." + key, false)) unsupported(field + "." + key, "true is not implemented (only false)");
    return t;
  }
};

// A string field of an object, or `otherwise` when it is absent or null.
inline std::string optional_str(const Fields& f, const json& j, const char* key, const std::string& field,
                                std::string otherwise = "") {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return otherwise;
  return f.str(*it, field);
}

// --- roles -------------------------------------------------------------------------------------

inline constexpr std::array<const char*, 4> kRoles = {"bos_token", "eos_token", "pad_token", "unk_token"};

// tokenizer_config.json's bos_token etc.: a string, null, or {"content": ...}; "" for none.
inline std::string role_token(const Fields& f, const json& config, const char* key, const std::string& prefix = "") {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return "";
  const std::string field = prefix + key;
  if (it->is_object()) return f.str(f.at(*it, "content", field + ".content"), field + ".content");
  return f.str(*it, field);
}

// --- the tokenizer's files ---------------------------------------------------------------------

// tokenizer.json's contents; `config` (tokenizer_config.json, or null) gives the roles, else
// the text's model.ember_special_tokens.
std::unique_ptr<BpeTokenizer::Impl> from_tokenizer_json(const json& j, const std::string& name, const json& config,
                                                        const std::string& config_name);

// The slow layout (vocab.json, merges.txt, tokenizer_config.json, added_tokens.json) as the
// tokenizer.json that transformers' Qwen2Tokenizer / GPT2Tokenizer build from it.
json convert_slow(const std::filesystem::path& dir, const json& config);

// The key of the merge of the pair (left, right) in BpeTokenizer::Impl::merge_of.
inline uint64_t merge_key(int left, int right) { return (uint64_t(uint32_t(left)) << 32) | uint32_t(right); }

}  // namespace bpe_impl

// --- the tokenizer -----------------------------------------------------------------------------

struct BpeTokenizer::Impl {
  std::string name;
  // the model
  std::unordered_map<std::string, int> vocab;
  std::vector<const std::string*> token_of;  // id -> its vocab entry (nullptr: none)
  std::vector<std::pair<const std::string*, const std::string*>> merges;  // in rank order, into vocab
  std::unordered_map<uint64_t, std::pair<int, int>> merge_of;  // (left << 32 | right) -> (rank, merged id)
  bool ignore_merges = false;
  std::array<int, 256> byte_id{};  // the id of each byte's symbol, or -1
  // added tokens, by id; per kind (0 not normalized, 1 normalized) and first byte, longest first
  std::vector<bpe_impl::AddedToken> added;
  std::unordered_map<int, size_t> added_of_id;
  std::array<std::vector<std::vector<size_t>>, 2> added_by_first;
  // normalizer and pre-tokenizer
  bool nfc = false;  // NFC named (applied as the identity: bpe_tokenizer.h)
  std::vector<bpe_impl::Regex> splits;
  bool prefix_space = false;
  bpe_impl::Regex byte_regex;  // GPT-2's pattern when ByteLevel's use_regex
  // the file's own objects, written back by to_json
  nlohmann::json model_options, normalizer, pre_tokenizer, post_processor, decoder;
  // roles ("" none) and their ids
  std::array<std::string, 4> roles;  // bos, eos, pad, unk
  std::array<int, 4> role_ids{-1, -1, -1, -1};
  int size = 0;

  template <class F>
  void split_added(std::string_view s, int kind, F&& f) const;
  template <class F>
  void for_each_word(std::string_view piece, std::span<pcre2_match_data* const> md, F&& f) const;
  void bpe(std::string_view word, std::vector<int>& out) const;
  int find_token(const std::string& content) const;
};

}  // namespace ember::model
