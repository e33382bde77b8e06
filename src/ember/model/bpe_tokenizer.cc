// BpeTokenizer's encoder and decoder: added tokens split out, the pre-tokenizer's regexes, GPT-2's
// byte map, the BPE merges, and decoding back to text.
#include "ember/model/bpe_tokenizer.h"

#include <climits>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/error.h"
#include "ember/model/bpe_tokenizer_impl.h"

namespace ember::model {

using bpe_impl::AddedToken;
using bpe_impl::byte_tables;
using bpe_impl::Regex;

namespace {

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

}  // namespace

// --- what the tokenizer's other files share (bpe_tokenizer_impl.h) ---------------------------

const bpe_impl::ByteTables& bpe_impl::byte_tables() {
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

Regex bpe_impl::compile(const std::string& pattern, bool literal, const std::string& where) {
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
      auto it = merge_of.find(bpe_impl::merge_key(symbols[i], symbols[i + 1]));
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
