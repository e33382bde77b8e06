// The slow layout of a byte-level BPE tokenizer (vocab.json, merges.txt, tokenizer_config.json,
// added_tokens.json) converted to the tokenizer.json that BpeTokenizer reads.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ember/core/file.h"
#include "ember/core/json_file.h"
#include "ember/model/bpe_tokenizer_impl.h"

namespace ember::model::bpe_impl {
namespace {

namespace fs = std::filesystem;

// transformers' qwen2/tokenization_qwen2.py PRETOKENIZE_REGEX: the slow layout's pre-tokenizer
constexpr const char* kQwen2Pattern =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

}  // namespace

json convert_slow(const fs::path& dir, const json& config) {
  const std::string vocab_file = (dir / "vocab.json").string(), merges_file = (dir / "merges.txt").string();
  json vocab = read_json_file(vocab_file);
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
        added.push_back(added_token_json(t));
      }
    }
  }
  if (fs::exists(dir / "added_tokens.json")) {
    const std::string file = (dir / "added_tokens.json").string();
    json tokens = read_json_file(file);
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
      added.push_back(added_token_json({id, it.key(), special, !special}));
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

}  // namespace ember::model::bpe_impl
