// BpeTokenizer's files: tokenizer.json read into the tokenizer (every field checked, errors
// naming the file and the field), the roles from tokenizer_config.json, and to_json() writing
// tokenizer.json back.
#include <algorithm>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/core/error.h"
#include "ember/core/json_file.h"
#include "ember/model/bpe_tokenizer.h"
#include "ember/model/bpe_tokenizer_impl.h"

namespace ember::model {
namespace bpe_impl {
namespace {

// GPT-2's, which HF's ByteLevel pre-tokenizer applies with use_regex (tokenizers' byte_level.rs)
constexpr const char* kGpt2Pattern = R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re";

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
    m.merge_of[merge_key(a->second, b->second)] = {static_cast<int>(i), ab->second};
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

}  // namespace

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

}  // namespace bpe_impl

namespace fs = std::filesystem;
using bpe_impl::json;
using bpe_impl::kRoles;

BpeTokenizer BpeTokenizer::load(const std::string& path) {
  const fs::path p(path);
  fs::path dir = p, json_file = p;
  if (fs::is_directory(p)) {
    json_file = p / "tokenizer.json";
    if (!fs::exists(json_file)) {
      if (!fs::exists(p / "vocab.json") && !fs::exists(p / "merges.txt"))
        fail(ErrorKind::kNotFound, path + ": no tokenizer.json, nor vocab.json and merges.txt");
      json config = fs::exists(p / "tokenizer_config.json") ? read_json_file((p / "tokenizer_config.json").string()) : json();
      json j = bpe_impl::convert_slow(p, config);
      return BpeTokenizer(bpe_impl::from_tokenizer_json(j, path, config, (p / "tokenizer_config.json").string()));
    }
  } else {
    dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  }
  json j = read_json_file(json_file.string());
  const fs::path config_file = dir / "tokenizer_config.json";
  json config = fs::exists(config_file) ? read_json_file(config_file.string()) : json();
  return BpeTokenizer(bpe_impl::from_tokenizer_json(j, json_file.string(), config, config_file.string()));
}

BpeTokenizer BpeTokenizer::from_json(std::string_view text, std::string name) {
  json j = parse_json(text, name);
  return BpeTokenizer(bpe_impl::from_tokenizer_json(j, name, json(), name));
}

std::string BpeTokenizer::to_json() const {
  const Impl& m = *impl_;
  json added = json::array();
  for (const auto& t : m.added) added.push_back(bpe_impl::added_token_json(t));
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

}  // namespace ember::model
