#include "ember/model/bpe_tokenizer.h"

#include <pcre2.h>  // PCRE2_CODE_UNIT_WIDTH=8 comes with the PCRE2::pcre2-8 target

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <utility>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/core/json_file.h"

namespace ember::model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// transformers' qwen2/tokenization_qwen2.py PRETOKENIZE_REGEX: the slow layout's pre-tokenizer
constexpr const char* kQwen2Pattern =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
// GPT-2's, which HF's ByteLevel pre-tokenizer applies with use_regex (tokenizers' byte_level.rs)
constexpr const char* kGpt2Pattern = R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re";

// --- UTF-8 ---------------------------------------------------------------------------------

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The length of the valid UTF-8 sequence at s[i] (> 0), or minus the length of the maximal
// invalid subpart there (Unicode's "maximal subpart" rule, as Rust's from_utf8_lossy).
int utf8_step(std::string_view s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return 1;
  int need = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) need = 1;
  else if (b == 0xE0) need = 2, lo = 0xA0;
  else if (b == 0xED) need = 2, hi = 0x9F;
  else if (b >= 0xE1 && b <= 0xEF) need = 2;
  else if (b == 0xF0) need = 3, lo = 0x90;
  else if (b == 0xF4) need = 3, hi = 0x8F;
  else if (b >= 0xF1 && b <= 0xF3) need = 3;
  else return -1;
  size_t j = i + 1;
  for (int k = 0; k < need; ++k, ++j) {
    if (j >= s.size()) return -static_cast<int>(j - i);
    const auto c = static_cast<unsigned char>(s[j]);
    if (c < (k == 0 ? lo : 0x80) || c > (k == 0 ? hi : 0xBF)) return -static_cast<int>(j - i);
  }
  return need + 1;
}

// The offset of the first byte that is not valid UTF-8, or npos.
size_t utf8_invalid_at(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    int n = utf8_step(s, i);
    if (n < 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    int n = utf8_step(s, i);
    if (n > 0) out.append(s.substr(i, n));
    else out += "\xEF\xBF\xBD";  // U+FFFD
    i += n > 0 ? n : -n;
  }
  return out;
}

// --- GPT-2's byte <-> printable character table (bytes_to_unicode) ------------------------

struct ByteTables {
  std::array<std::string, 256> to_char;  // byte -> the UTF-8 of its character
  std::array<int, 324> to_byte;          // character (code point < 324) -> byte, or -1
};

const ByteTables& byte_tables() {
  static const ByteTables tables = [] {
    ByteTables t;
    t.to_byte.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const int cp = printable ? b : next++;
      append_utf8(t.to_char[b], static_cast<uint32_t>(cp));
      t.to_byte[cp] = b;
    }
    return t;
  }();
  return tables;
}

std::string byte_mapped(std::string_view bytes) {
  std::string out;
  for (unsigned char b : bytes) out += byte_tables().to_char[b];
  return out;
}

// HF's ByteLevel decoder on one token: its characters' bytes when every one is in the table,
// else the token's own bytes.
void append_byte_decoded(std::string& out, std::string_view token) {
  const size_t start = out.size();
  for (size_t i = 0; i < token.size();) {
    const int n = utf8_step(token, i);
    uint32_t cp = 0;
    if (n == 1) cp = static_cast<unsigned char>(token[i]);
    else if (n == 2) cp = ((token[i] & 0x1F) << 6) | (token[i + 1] & 0x3F);
    const int b = (n == 1 || n == 2) && cp < 324 ? byte_tables().to_byte[cp] : -1;
    if (b < 0) {
      out.resize(start);
      out.append(token);
      return;
    }
    out += static_cast<char>(b);
    i += n;
  }
}

// --- regexes ---------------------------------------------------------------------------------

struct CodeFree {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};
struct MatchDataFree {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};

// HF tokenizers' engine, Oniguruma, takes \s as Unicode's White_Space property; PCRE2's Unicode
// \s differs (it has U+180E, lacks U+0085). So \s is spelled out as White_Space: [...] (its
// members alone inside a class), and \S as [^...] (left as is inside a class).
constexpr const char* kWhiteSpace = "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

std::string widen_space(std::string_view p) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char n = p[++i];
      if (n == 's') out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      else if (n == 'S' && !in_class) out += "[^" + std::string(kWhiteSpace) + "]";
      else out += std::string{c, n};
      continue;
    }
    out += c;
    if (!in_class && c == '[') {
      in_class = true;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];  // a literal ']' first
    } else if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {
      const size_t end = p.find(":]", i + 2);  // a POSIX class [:name:]
      if (end != std::string_view::npos) {
        out.append(p.substr(i + 1, end + 1 - i));
        i = end + 1;
      }
    } else if (in_class && c == ']') {
      in_class = false;
    }
  }
  return out;
}

// A compiled pre-tokenizer pattern: a regex, or a literal string (Split's {"String": ...}).
struct Regex {
  std::string pattern;
  bool literal = false;
  std::unique_ptr<pcre2_code, CodeFree> code;
};

Regex compile(const std::string& pattern, bool literal, const std::string& where) {
  Regex r{pattern, literal, nullptr};
  const std::string text = literal ? pattern : widen_space(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  r.code.reset(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(),
                             PCRE2_UTF | PCRE2_UCP | (literal ? PCRE2_LITERAL : 0), &error, &offset, nullptr));
  if (!r.code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    fail_unsupported(where + ": the pattern does not compile in PCRE2 (" + reinterpret_cast<const char*>(message) +
                     " at offset " + std::to_string(offset) + ")");
  }
  pcre2_jit_compile(r.code.get(), PCRE2_JIT_COMPLETE);  // where JIT is missing, the interpreter runs
  return r;
}

// Calls emit(piece) for the matches of re in s and the gaps between them, in order, empty ones
// left out (HF's Split with behavior Isolated). s is valid UTF-8.
template <class F>
void split_isolated(const Regex& re, pcre2_match_data* md, std::string_view s, F&& emit) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  size_t offset = 0, last = 0;
  while (offset <= s.size()) {
    const int rc = pcre2_match(re.code.get(), subject, s.size(), offset, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) fail(ErrorKind::kInternal, "pre-tokenizer pattern: PCRE2 match error " + std::to_string(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t begin = ov[0], end = ov[1];
    if (end == begin) {  // an empty match: try again one character on
      if (begin >= s.size()) break;
      offset = begin + utf8_step(s, begin);
      continue;
    }
    if (begin > last) emit(s.substr(last, begin - last));
    emit(s.substr(begin, end - begin));
    last = offset = end;
  }
  if (last < s.size()) emit(s.substr(last));
}

// --- reading the JSON fields -----------------------------------------------------------------

struct AddedToken {
  int id = 0;
  std::string content;
  bool special = false;
  bool normalized = false;
};

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

// kNotFound / kIO / kCorruption naming the path
json read_json(const std::string& path) { return read_json_file(path); }

// A string field of an object, or `otherwise` when it is absent or null.
std::string optional_str(const Fields& f, const json& j, const char* key, const std::string& field, std::string otherwise = "") {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return otherwise;
  return f.str(*it, field);
}

// tokenizer_config.json's bos_token etc.: a string, null, or {"content": ...}; "" for none.
std::string role_token(const Fields& f, const json& config, const char* key, const std::string& prefix = "") {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return "";
  const std::string field = prefix + key;
  if (it->is_object()) return f.str(f.at(*it, "content", field + ".content"), field + ".content");
  return f.str(*it, field);
}

}  // namespace

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
  std::vector<AddedToken> added;
  std::unordered_map<int, size_t> added_of_id;
  std::array<std::vector<std::vector<size_t>>, 2> added_by_first;
  // normalizer and pre-tokenizer
  bool nfc = false;  // NFC named (applied as the identity: bpe_tokenizer.h)
  std::vector<Regex> splits;
  bool prefix_space = false;
  Regex byte_regex;  // GPT-2's pattern when ByteLevel's use_regex
  // the file's own objects, written back by to_json
  json model_options, normalizer, pre_tokenizer, post_processor, decoder;
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

namespace {

constexpr std::array<const char*, 4> kRoles = {"bos_token", "eos_token", "pad_token", "unk_token"};

void build_added_index(BpeTokenizer::Impl& m) {
  std::sort(m.added.begin(), m.added.end(), [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  for (auto& table : m.added_by_first) table.clear();
  for (size_t i = 0; i < m.added.size(); ++i) {
    auto& table = m.added_by_first[m.added[i].normalized ? 1 : 0];
    if (table.empty()) table.resize(256);
    table[static_cast<unsigned char>(m.added[i].content[0])].push_back(i);
    m.added_of_id[m.added[i].id] = i;
  }
  for (auto& table : m.added_by_first)
    for (auto& list : table)
      std::stable_sort(list.begin(), list.end(),
                       [&](size_t a, size_t b) { return m.added[a].content.size() > m.added[b].content.size(); });
}

// The pre-tokenizer of tokenizer.json: ByteLevel, or a Sequence of Split steps ending in ByteLevel.
void read_pre_tokenizer(BpeTokenizer::Impl& m, const Fields& f, const json& pt) {
  auto byte_level = [&](const json& j, const std::string& field) {
    m.prefix_space = f.flag(j, "add_prefix_space", field + ".add_prefix_space", true);
    if (f.flag(j, "use_regex", field + ".use_regex", true)) m.byte_regex = compile(kGpt2Pattern, false, f.file + ": " + field);
  };
  auto type_of = [&](const json& j, const std::string& field) {
    f.object(j, field);
    return f.str(f.at(j, "type", field + ".type"), field + ".type");
  };
  if (pt.is_null()) f.unsupported("pre_tokenizer", "null: only byte-level BPE tokenizers (a ByteLevel pre-tokenizer) are read");
  const std::string type = type_of(pt, "pre_tokenizer");
  if (type == "ByteLevel") return byte_level(pt, "pre_tokenizer");
  if (type != "Sequence") f.unsupported("pre_tokenizer.type", "'" + type + "': only ByteLevel or a Sequence of Split and ByteLevel are read");
  const json& steps = f.at(pt, "pretokenizers", "pre_tokenizer.pretokenizers");
  if (!steps.is_array() || steps.empty()) f.bad("pre_tokenizer.pretokenizers", "expected a non-empty array");
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string field = "pre_tokenizer.pretokenizers[" + std::to_string(i) + "]";
    const std::string t = type_of(steps[i], field);
    const bool last = i + 1 == steps.size();
    if (t == "ByteLevel" && last) {
      byte_level(steps[i], field);
    } else if (t == "Split" && !last) {
      const json& pattern = f.object(f.at(steps[i], "pattern", field + ".pattern"), field + ".pattern");
      const bool literal = pattern.contains("String");
      if (!literal && !pattern.contains("Regex")) f.bad(field + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}");
      const std::string key = literal ? "String" : "Regex";
      const std::string text = f.str(pattern.at(key), field + ".pattern." + key);
      const std::string behavior = f.str(f.at(steps[i], "behavior", field + ".behavior"), field + ".behavior");
      if (behavior != "Isolated") f.unsupported(field + ".behavior", "'" + behavior + "': only Isolated is implemented");
      if (f.flag(steps[i], "invert", field + ".invert", false)) f.unsupported(field + ".invert", "true is not implemented");
      m.splits.push_back(compile(text, literal, f.file + ": " + field + ".pattern." + key));
    } else {
      f.unsupported(field + ".type", "'" + t + "': only Split steps followed by one ByteLevel are read");
    }
  }
}

void read_normalizer(BpeTokenizer::Impl& m, const Fields& f, const json& n) {
  if (n.is_null()) return;
  const std::string type = f.str(f.at(f.object(n, "normalizer"), "type", "normalizer.type"), "normalizer.type");
  bool nfc = type == "NFC";
  if (type == "Sequence") {
    const json& list = f.at(n, "normalizers", "normalizer.normalizers");
    nfc = list.is_array();
    for (size_t i = 0; nfc && i < list.size(); ++i)
      nfc = optional_str(f, f.object(list[i], "normalizer.normalizers[" + std::to_string(i) + "]"), "type",
                         "normalizer.normalizers[" + std::to_string(i) + "].type") == "NFC";
  }
  if (!nfc) f.unsupported("normalizer.type", "'" + type + "': only NFC (or none) is read");
  m.nfc = true;
}

// model: BPE with its vocab and merges, checked against each other.
void read_model(BpeTokenizer::Impl& m, const Fields& f, const json& model) {
  f.object(model, "model");
  const std::string type = f.str(f.at(model, "type", "model.type"), "model.type");
  if (type != "BPE") f.unsupported("model.type", "'" + type + "': only BPE is read");
  if (auto d = model.find("dropout"); d != model.end() && !d->is_null() && !(d->is_number() && d->get<double>() == 0))
    f.unsupported("model.dropout", "BPE dropout is not implemented");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (auto it = model.find(key); it != model.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty()))
      f.unsupported(std::string("model.") + key, "only null or \"\" is implemented");
  m.ignore_merges = f.flag(model, "ignore_merges", "model.ignore_merges", false);
  for (auto it = model.begin(); it != model.end(); ++it)
    if (it.key() != "vocab" && it.key() != "merges") m.model_options[it.key()] = it.value();

  const json& vocab = f.at(model, "vocab", "model.vocab");
  if (!vocab.is_object()) f.bad("model.vocab", "expected an object of token -> id");
  m.vocab.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it)
    m.vocab[it.key()] = f.id(it.value(), "model.vocab[\"" + it.key() + "\"]");

  const json& merges = f.at(model, "merges", "model.merges");
  if (!merges.is_array()) f.bad("model.merges", "expected an array");
  m.merges.reserve(merges.size());
  m.merge_of.reserve(merges.size());
  std::string left, right;
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string field = "model.merges[" + std::to_string(i) + "]";
    const json& e = merges[i];
    if (e.is_string()) {  // "a b"
      const std::string& s = e.get_ref<const std::string&>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) f.bad(field, "expected \"left right\"");
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {  // ["a", "b"]
      left = e[0].get<std::string>();
      right = e[1].get<std::string>();
    } else {
      f.bad(field, "expected \"left right\" or [\"left\", \"right\"]");
    }
    auto a = m.vocab.find(left), b = m.vocab.find(right), ab = m.vocab.find(left + right);
    if (a == m.vocab.end()) f.bad(field, "'" + left + "' is not in model.vocab");
    if (b == m.vocab.end()) f.bad(field, "'" + right + "' is not in model.vocab");
    if (ab == m.vocab.end()) f.bad(field, "'" + left + right + "' (the merged token) is not in model.vocab");
    m.merges.emplace_back(&a->first, &b->first);
    // a pair listed twice keeps its last rank, as HF's map of merges does
    m.merge_of[(uint64_t(uint32_t(a->second)) << 32) | uint32_t(b->second)] = {static_cast<int>(i), ab->second};
  }
}

// Sizes, the id -> token table, the byte symbols and the roles' ids ("" roles are none; the
// roles were read from roles_file's fields under prefix).
void finish(BpeTokenizer::Impl& m, const Fields& roles_file, const std::string& prefix) {
  int size = 0;
  for (const auto& [token, id] : m.vocab) size = std::max(size, id + 1);
  for (const auto& t : m.added) size = std::max(size, t.id + 1);
  m.size = size;
  m.token_of.assign(size, nullptr);
  for (const auto& entry : m.vocab) m.token_of[entry.second] = &entry.first;
  for (int b = 0; b < 256; ++b) {
    auto it = m.vocab.find(byte_tables().to_char[b]);
    m.byte_id[b] = it == m.vocab.end() ? -1 : it->second;
  }
  build_added_index(m);
  for (size_t r = 0; r < kRoles.size(); ++r) {
    if (m.roles[r].empty()) continue;
    m.role_ids[r] = m.find_token(m.roles[r]);
    if (m.role_ids[r] < 0)
      roles_file.bad(prefix + kRoles[r], "'" + m.roles[r] + "' is neither an added token nor in the vocabulary");
  }
}

void read_roles(BpeTokenizer::Impl& m, const Fields& f, const json& config, const std::string& prefix) {
  f.object(config, prefix.empty() ? "(top level)" : prefix.substr(0, prefix.size() - 1));
  for (size_t r = 0; r < kRoles.size(); ++r) m.roles[r] = role_token(f, config, kRoles[r], prefix);
  // tokenizer_config.json: the bos token starts prompts only where add_bos_token says so (HF's
  // GPT-2 / Qwen2 tokenizers add none by default; the SmolLM-era Eagle config names
  // <|im_start|> as bos_token with add_bos_token false)
  if (prefix.empty() && !f.flag(config, "add_bos_token", "add_bos_token", false)) m.roles[0].clear();
}

// tokenizer.json's contents; `config` (tokenizer_config.json, or null) gives the roles, else
// the text's model.ember_special_tokens.
std::unique_ptr<BpeTokenizer::Impl> from_tokenizer_json(const json& j, const std::string& name, const json& config,
                                                        const std::string& config_name) {
  auto m = std::make_unique<BpeTokenizer::Impl>();
  m->name = name;
  Fields f{name};
  f.object(j, "(top level)");
  read_model(*m, f, f.at(j, "model", "model"));
  m->model_options.erase("ember_special_tokens");
  if (auto it = j.find("added_tokens"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) f.bad("added_tokens", "expected an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string field = "added_tokens[" + std::to_string(i) + "]";
      const json& e = f.object((*it)[i], field);
      m->added.push_back(f.added(e, f.id(f.at(e, "id", field + ".id"), field + ".id"), field));
    }
  }
  m->normalizer = j.value("normalizer", json());
  read_normalizer(*m, f, m->normalizer);
  m->pre_tokenizer = f.at(j, "pre_tokenizer", "pre_tokenizer");
  read_pre_tokenizer(*m, f, m->pre_tokenizer);
  m->post_processor = j.value("post_processor", json());
  m->decoder = f.at(j, "decoder", "decoder");
  if (!m->decoder.is_object() || optional_str(f, m->decoder, "type", "decoder.type") != "ByteLevel")
    f.unsupported("decoder", "only the ByteLevel decoder is read");
  const json& model = j.at("model");
  const bool own = config.is_null() && model.contains("ember_special_tokens");
  const Fields roles_file{own ? name : config_name};
  const std::string prefix = own ? "model.ember_special_tokens." : "";
  if (!config.is_null()) read_roles(*m, roles_file, config, prefix);
  else if (own) read_roles(*m, roles_file, model.at("ember_special_tokens"), prefix);
  finish(*m, roles_file, prefix);
  return m;
}

// The slow layout (vocab.json, merges.txt, tokenizer_config.json, added_tokens.json) as the
// tokenizer.json that transformers' Qwen2Tokenizer / GPT2Tokenizer build from it.
json convert_slow(const fs::path& dir, const json& config) {
  const std::string vocab_file = (dir / "vocab.json").string(), merges_file = (dir / "merges.txt").string();
  json vocab = read_json(vocab_file);
  Fields fv{vocab_file};
  fv.object(vocab, "(top level)");
  for (auto it = vocab.begin(); it != vocab.end(); ++it) fv.id(it.value(), "\"" + it.key() + "\"");

  const std::vector<uint8_t> bytes = read_file(merges_file);
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  Fields fm{merges_file};
  json merges = json::array();
  size_t line_no = 0;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    const std::string field = "line " + std::to_string(line_no);
    const size_t space = line.find(' ');
    if (space == std::string_view::npos || line.find(' ', space + 1) != std::string_view::npos)
      fm.bad(field, "expected two tokens separated by one space");
    const std::string left(line.substr(0, space)), right(line.substr(space + 1));
    for (const std::string& t : {left, right})
      if (!vocab.contains(t)) fm.bad(field, "'" + t + "' is not in vocab.json");
    if (!vocab.contains(left + right)) fm.bad(field, "'" + left + right + "' (the merged token) is not in vocab.json");
    merges.push_back(json::array({left, right}));
  }

  // added tokens: tokenizer_config.json's added_tokens_decoder, then added_tokens.json's others
  const std::string config_file = (dir / "tokenizer_config.json").string();
  Fields fc{config_file};
  json added = json::array();
  std::unordered_map<std::string, int> seen;
  if (!config.is_null()) {
    fc.object(config, "(top level)");
    if (auto it = config.find("added_tokens_decoder"); it != config.end()) {
      fc.object(*it, "added_tokens_decoder");
      for (auto e = it->begin(); e != it->end(); ++e) {
        const std::string field = "added_tokens_decoder[\"" + e.key() + "\"]";
        int id = -1;
        try {
          size_t used = 0;
          id = std::stoi(e.key(), &used);
          if (used != e.key().size() || id < 0) id = -1;
        } catch (const std::exception&) {
        }
        if (id < 0) fc.bad(field, "the key is not a token id");
        AddedToken t = fc.added(e.value(), id, field);
        seen[t.content] = id;
        added.push_back({{"id", id}, {"content", t.content}, {"single_word", false}, {"lstrip", false},
                         {"rstrip", false}, {"normalized", t.normalized}, {"special", t.special}});
      }
    }
  }
  if (fs::exists(dir / "added_tokens.json")) {
    const std::string file = (dir / "added_tokens.json").string();
    json tokens = read_json(file);
    Fields fa{file};
    fa.object(tokens, "(top level)");
    std::vector<std::string> specials;
    if (auto it = config.find("additional_special_tokens"); !config.is_null() && it != config.end() && it->is_array())
      for (const auto& s : *it)
        if (s.is_string()) specials.push_back(s.get<std::string>());
    for (const char* role : kRoles)
      if (!config.is_null()) specials.push_back(role_token(fc, config, role));
    for (auto it = tokens.begin(); it != tokens.end(); ++it) {
      const int id = fa.id(it.value(), "\"" + it.key() + "\"");
      if (it.key().empty()) fa.bad("\"\"", "an empty token");
      if (seen.count(it.key())) continue;
      const bool special = std::find(specials.begin(), specials.end(), it.key()) != specials.end();
      added.push_back({{"id", id}, {"content", it.key()}, {"single_word", false}, {"lstrip", false},
                       {"rstrip", false}, {"normalized", !special}, {"special", special}});
    }
  }

  // the pipeline of the config's tokenizer_class
  const std::string cls =
      config.is_null() ? "Qwen2Tokenizer" : optional_str(fc, config, "tokenizer_class", "tokenizer_class", "Qwen2Tokenizer");
  json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = std::move(added);
  j["post_processor"] = nullptr;
  j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  if (cls == "Qwen2Tokenizer" || cls == "Qwen2TokenizerFast") {
    j["normalizer"] = {{"type", "NFC"}};
    j["pre_tokenizer"] = {{"type", "Sequence"},
                          {"pretokenizers",
                           {{{"type", "Split"}, {"pattern", {{"Regex", kQwen2Pattern}}}, {"behavior", "Isolated"}, {"invert", false}},
                            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}};
  } else if (cls == "GPT2Tokenizer" || cls == "GPT2TokenizerFast") {
    j["normalizer"] = nullptr;
    const bool prefix = !config.is_null() && fc.flag(config, "add_prefix_space", "add_prefix_space", false);
    j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", prefix}, {"trim_offsets", true}, {"use_regex", true}};
  } else {
    fc.unsupported("tokenizer_class", "'" + cls + "': only Qwen2Tokenizer and GPT2Tokenizer's slow files are read");
  }
  j["model"] = {{"type", "BPE"},          {"dropout", nullptr},     {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr}, {"fuse_unk", false},
                {"byte_fallback", false}, {"ignore_merges", false}, {"vocab", std::move(vocab)},
                {"merges", std::move(merges)}};
  return j;
}

}  // namespace

template <class F>
void BpeTokenizer::Impl::split_added(std::string_view s, int kind, F&& f) const {
  const auto& table = added_by_first[kind];
  if (table.empty()) {
    if (!s.empty()) f(s, nullptr);
    return;
  }
  size_t start = 0;
  for (size_t i = 0; i < s.size();) {
    const AddedToken* hit = nullptr;
    for (size_t k : table[static_cast<unsigned char>(s[i])]) {  // longest first: leftmost-longest
      if (s.compare(i, added[k].content.size(), added[k].content) == 0) {
        hit = &added[k];
        break;
      }
    }
    if (!hit) {
      ++i;
      continue;
    }
    if (i > start) f(s.substr(start, i - start), nullptr);
    f(std::string_view(hit->content), hit);
    i += hit->content.size();
    start = i;
  }
  if (start < s.size()) f(s.substr(start), nullptr);
}

// The words of a piece without added tokens: the Split steps, then ByteLevel's prefix space and
// regex. md: one match block per split, then one for the ByteLevel regex.
template <class F>
void BpeTokenizer::Impl::for_each_word(std::string_view piece, std::span<pcre2_match_data* const> md, F&& f) const {
  auto step = [&](auto& self, size_t k, std::string_view s) -> void {
    if (k < splits.size()) {
      split_isolated(splits[k], md[k], s, [&](std::string_view p) { self(self, k + 1, p); });
      return;
    }
    std::string prefixed;
    if (prefix_space && s.front() != ' ') {
      prefixed = " " + std::string(s);
      s = prefixed;
    }
    if (byte_regex.code) split_isolated(byte_regex, md[k], s, f);
    else f(s);
  };
  step(step, 0, piece);
}

void BpeTokenizer::Impl::bpe(std::string_view word, std::vector<int>& out) const {
  if (ignore_merges) {
    if (auto it = vocab.find(byte_mapped(word)); it != vocab.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<int> symbols;
  symbols.reserve(word.size());
  for (unsigned char b : word) {
    if (byte_id[b] < 0)
      fail(ErrorKind::kInvalidArgument, name + ": the piece '" + byte_mapped(word) + "' is not in the vocabulary (no symbol for byte " +
                                            std::to_string(b) + ")");
    symbols.push_back(byte_id[b]);
  }
  // merge the pair of lowest rank everywhere it occurs, left to right, until none merges
  std::vector<int> next;
  while (symbols.size() > 1) {
    int best = INT_MAX, merged = -1, left = -1, right = -1;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      auto it = merge_of.find((uint64_t(uint32_t(symbols[i])) << 32) | uint32_t(symbols[i + 1]));
      if (it != merge_of.end() && it->second.first < best) {
        best = it->second.first;
        merged = it->second.second;
        left = symbols[i];
        right = symbols[i + 1];
      }
    }
    if (merged < 0) break;
    next.clear();
    for (size_t i = 0; i < symbols.size(); ++i) {
      if (i + 1 < symbols.size() && symbols[i] == left && symbols[i + 1] == right) {
        next.push_back(merged);
        ++i;
      } else {
        next.push_back(symbols[i]);
      }
    }
    symbols.swap(next);
  }
  out.insert(out.end(), symbols.begin(), symbols.end());
}

int BpeTokenizer::Impl::find_token(const std::string& content) const {
  for (const auto& t : added)
    if (t.content == content) return t.id;
  auto it = vocab.find(content);
  return it == vocab.end() ? -1 : it->second;
}

BpeTokenizer::BpeTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;
BpeTokenizer::~BpeTokenizer() = default;

BpeTokenizer BpeTokenizer::load(const std::string& path) {
  const fs::path p(path);
  fs::path dir = p, json_file = p;
  if (fs::is_directory(p)) {
    json_file = p / "tokenizer.json";
    if (!fs::exists(json_file)) {
      if (!fs::exists(p / "vocab.json") && !fs::exists(p / "merges.txt"))
        fail(ErrorKind::kNotFound, path + ": no tokenizer.json, nor vocab.json and merges.txt");
      json config = fs::exists(p / "tokenizer_config.json") ? read_json((p / "tokenizer_config.json").string()) : json();
      json j = convert_slow(p, config);
      return BpeTokenizer(from_tokenizer_json(j, path, config, (p / "tokenizer_config.json").string()));
    }
  } else {
    dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  }
  json j = read_json(json_file.string());
  const fs::path config_file = dir / "tokenizer_config.json";
  json config = fs::exists(config_file) ? read_json(config_file.string()) : json();
  return BpeTokenizer(from_tokenizer_json(j, json_file.string(), config, config_file.string()));
}

BpeTokenizer BpeTokenizer::from_json(std::string_view text, std::string name) {
  json j = parse_json(text, name);
  return BpeTokenizer(from_tokenizer_json(j, name, json(), name));
}

std::string BpeTokenizer::to_json() const {
  const Impl& m = *impl_;
  json added = json::array();
  for (const auto& t : m.added)
    added.push_back({{"id", t.id}, {"content", t.content}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", t.normalized}, {"special", t.special}});
  json model = m.model_options;
  json& vocab = model["vocab"] = json::object();
  for (const auto& [token, id] : m.vocab) vocab[token] = id;
  json& merges = model["merges"] = json::array();
  for (const auto& [a, b] : m.merges) merges.push_back(json::array({*a, *b}));
  json roles = json::object();
  for (size_t r = 0; r < kRoles.size(); ++r) roles[kRoles[r]] = m.roles[r].empty() ? json() : json(m.roles[r]);
  model["ember_special_tokens"] = std::move(roles);
  json j = {{"version", "1.0"},          {"truncation", nullptr},       {"padding", nullptr},
            {"added_tokens", added},     {"normalizer", m.normalizer},  {"pre_tokenizer", m.pre_tokenizer},
            {"post_processor", m.post_processor}, {"decoder", m.decoder}, {"model", std::move(model)}};
  return j.dump() + "\n";
}

namespace {

void check_utf8(const BpeTokenizer::Impl& m, std::string_view text) {
  if (size_t bad = utf8_invalid_at(text); bad != std::string_view::npos)
    fail(ErrorKind::kInvalidArgument, m.name + ": the text is not valid UTF-8 (at byte " + std::to_string(bad) + ")");
}

// One PCRE2 match block per pattern of the pre-tokenizer (the splits', then ByteLevel's), made
// for one call: blocks are never shared between threads.
struct MatchBlocks {
  explicit MatchBlocks(const BpeTokenizer::Impl& m) {
    for (const auto& r : m.splits) add(r);
    if (m.byte_regex.code) add(m.byte_regex);
  }
  void add(const Regex& r) {
    owned.emplace_back(pcre2_match_data_create_from_pattern(r.code.get(), nullptr));
    if (!owned.back()) fail(ErrorKind::kInternal, "PCRE2: out of memory for a match block");
    md.push_back(owned.back().get());
  }
  std::vector<std::unique_ptr<pcre2_match_data, MatchDataFree>> owned;
  std::vector<pcre2_match_data*> md;
};

}  // namespace

std::vector<int> BpeTokenizer::encode(std::string_view text) const {
  const Impl& m = *impl_;
  check_utf8(m, text);
  const MatchBlocks blocks(m);
  const auto& md = blocks.md;
  std::vector<int> ids;
  m.split_added(text, 0, [&](std::string_view piece, const AddedToken* token) {
    if (token) return ids.push_back(token->id);
    // the normalizer would run here: NFC as the identity (bpe_tokenizer.h)
    m.split_added(piece, 1, [&](std::string_view inner, const AddedToken* t) {
      if (t) return ids.push_back(t->id);
      m.for_each_word(inner, md, [&](std::string_view word) { m.bpe(word, ids); });
    });
  });
  return ids;
}

std::vector<std::string> BpeTokenizer::pre_tokenize(std::string_view text) const {
  const Impl& m = *impl_;
  check_utf8(m, text);
  const MatchBlocks blocks(m);
  std::vector<std::string> pieces;
  if (!text.empty()) m.for_each_word(text, blocks.md, [&](std::string_view word) { pieces.push_back(byte_mapped(word)); });
  return pieces;
}

std::string BpeTokenizer::decode(std::span<const int> ids, bool skip_special) const {
  const Impl& m = *impl_;
  std::string bytes;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int id = ids[i];
    auto added = id >= 0 && id < m.size ? m.added_of_id.find(id) : m.added_of_id.end();
    if (added != m.added_of_id.end()) {
      const AddedToken& t = m.added[added->second];
      if (!(skip_special && t.special)) append_byte_decoded(bytes, t.content);
    } else if (id >= 0 && id < m.size && m.token_of[id]) {
      append_byte_decoded(bytes, *m.token_of[id]);
    } else {
      fail(ErrorKind::kInvalidArgument, m.name + ": token id " + std::to_string(id) + " at position " + std::to_string(i) +
                                            (id >= 0 && id < m.size ? " names no token"
                                                                    : " is outside the vocabulary [0, " + std::to_string(m.size) + ")"));
    }
  }
  return utf8_lossy(bytes);
}

int BpeTokenizer::vocab_size() const { return impl_->size; }
int BpeTokenizer::bos_id() const { return impl_->role_ids[0]; }
int BpeTokenizer::eos_id() const { return impl_->role_ids[1]; }
int BpeTokenizer::pad_id() const { return impl_->role_ids[2]; }
int BpeTokenizer::unk_id() const { return impl_->role_ids[3]; }
int BpeTokenizer::num_merges() const { return static_cast<int>(impl_->merges.size()); }
const std::string& BpeTokenizer::name() const { return impl_->name; }

}  // namespace ember::model
