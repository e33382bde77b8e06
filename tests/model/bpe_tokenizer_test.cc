// The byte-level BPE tokenizer (model/bpe_tokenizer.h) against Hugging Face's own ids, decodes
// and pre-tokenizer pieces on tests/fixtures/bpe_tiny (tests/python/bpe_tokenizer_fixture.py:
// a tiny Qwen2-configured BPE in tokenizer.json and in the slow layout, and the same merges
// with GPT-2's pipeline); the round trip through tokenizer.json text; model::Tokenizer on it;
// bad files refused naming the file and the field.
#include "ember/model/bpe_tokenizer.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/core/json_file.h"
#include "ember/model/tokenizer.h"
#include "test_util.h"

namespace ember::model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::error_of;
using test::TempDir;

const fs::path kFixture = fs::path(EMBER_TEST_DATA) / "bpe_tiny";

const json& expected() {
  static const json j = read_json_file((kFixture / "expected.json").string());
  return j;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// every string's ids, decodes (both ways) and pre-tokenizer pieces are HF's
void expect_hf(const BpeTokenizer& t, const json& cases) {
  ASSERT_GE(cases.size(), 30u);
  for (const auto& c : cases) {
    const std::string text = c["text"];
    SCOPED_TRACE("text: " + c["text"].dump());
    const std::vector<int> ids = t.encode(text);
    EXPECT_EQ(ids, c["ids"].get<std::vector<int>>());
    EXPECT_EQ(t.decode(ids, /*skip_special=*/false), c["decode"].get<std::string>());
    EXPECT_EQ(t.decode(ids, /*skip_special=*/true), c["decode_skip_special"].get<std::string>());
    EXPECT_EQ(t.pre_tokenize(text), c["pieces"].get<std::vector<std::string>>());
  }
}

void expect_qwen2_specials(const BpeTokenizer& t) {
  const json& s = expected()["specials"];
  EXPECT_EQ(t.bos_id(), s["bos"].get<int>());
  EXPECT_EQ(t.eos_id(), s["eos"].get<int>());
  EXPECT_EQ(t.pad_id(), s["pad"].get<int>());
  EXPECT_EQ(t.unk_id(), s["unk"].get<int>());
  EXPECT_EQ(t.vocab_size(), expected()["vocab_size"].get<int>());
  EXPECT_EQ(t.num_merges(), expected()["num_merges"].get<int>());
}

TEST(BpeTokenizer, TokenizerJsonEncodesAsHuggingFace) {
  BpeTokenizer t = BpeTokenizer::load((kFixture / "tokenizer.json").string());
  expect_hf(t, expected()["qwen2"]);
  expect_qwen2_specials(t);
}

TEST(BpeTokenizer, SlowFilesEncodeAsHuggingFace) {
  BpeTokenizer t = BpeTokenizer::load((kFixture / "slow").string());
  expect_hf(t, expected()["qwen2"]);
  expect_qwen2_specials(t);
}

TEST(BpeTokenizer, Gpt2PipelineEncodesAsHuggingFace) {
  BpeTokenizer t = BpeTokenizer::load((kFixture / "gpt2" / "tokenizer.json").string());
  expect_hf(t, expected()["gpt2"]);
  EXPECT_EQ(t.eos_id(), -1);  // no tokenizer_config.json beside it
}

TEST(BpeTokenizer, DirectoryReadsItsTokenizerJson) {
  BpeTokenizer t = BpeTokenizer::load(kFixture.string());
  EXPECT_EQ(t.name(), (kFixture / "tokenizer.json").string());
  expect_qwen2_specials(t);
}

TEST(BpeTokenizer, ToJsonLoadsBackTheSameTokenizer) {
  for (const auto& [path, cases] : {std::pair{kFixture / "tokenizer.json", "qwen2"}, std::pair{kFixture / "slow", "qwen2"},
                                    std::pair{kFixture / "gpt2" / "tokenizer.json", "gpt2"}}) {
    SCOPED_TRACE(path.string());
    BpeTokenizer original = BpeTokenizer::load(path.string());
    const std::string text = original.to_json();
    BpeTokenizer copy = BpeTokenizer::from_json(text, "copy");
    expect_hf(copy, expected()[cases]);
    EXPECT_EQ(copy.vocab_size(), original.vocab_size());
    EXPECT_EQ(copy.num_merges(), original.num_merges());
    EXPECT_EQ(copy.eos_id(), original.eos_id());
    EXPECT_EQ(copy.pad_id(), original.pad_id());
    EXPECT_EQ(copy.bos_id(), original.bos_id());
    EXPECT_EQ(copy.to_json(), text);
  }
}

TEST(BpeTokenizer, RefusesTextThatIsNotUtf8AndIdsOutsideTheVocabulary) {
  BpeTokenizer t = BpeTokenizer::load((kFixture / "tokenizer.json").string());
  std::string msg = error_of([&] { t.encode("ok\xC3(bad"); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("not valid UTF-8 (at byte 2)"), std::string::npos) << msg;
  const std::vector<int> ids = {1, t.vocab_size()};
  msg = error_of([&] { t.decode(ids); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("at position 1 is outside the vocabulary"), std::string::npos) << msg;
  // ids whose bytes are not UTF-8 decode to U+FFFD, one per maximal invalid part (HF's from_utf8_lossy)
  const std::vector<int> robot = t.encode("🤖");
  ASSERT_EQ(robot.size(), 4u);  // F0 9F A4 96, no merges
  EXPECT_EQ(t.decode(std::vector<int>{robot[0], robot[1]}), "\xEF\xBF\xBD");
  EXPECT_EQ(t.decode(std::vector<int>{robot[1], robot[0], robot[3]}), "\xEF\xBF\xBD\xEF\xBF\xBD");  // 9F; F0 96
}

TEST(Tokenizer, ReadsBpeFilesAndRoundTripsThem) {
  TempDir dir("bpe_tokenizer");
  for (const fs::path& path : {kFixture / "tokenizer.json", kFixture / "slow", kFixture}) {
    SCOPED_TRACE(path.string());
    Tokenizer t = Tokenizer::load(path.string());
    EXPECT_TRUE(t.is_bpe());
    EXPECT_EQ(t.file_name(), "tokenizer.json");
    EXPECT_EQ(t.eos_id(), expected()["specials"]["eos"].get<int>());
    // decode drops special tokens, as SentencePiece drops bos / eos / pad
    for (const auto& c : expected()["qwen2"]) {
      EXPECT_EQ(t.encode(c["text"].get<std::string>()), c["ids"].get<std::vector<int>>());
      EXPECT_EQ(t.decode(c["ids"].get<std::vector<int>>()), c["decode_skip_special"].get<std::string>());
    }
    // serialized() / from_bytes (leading white space allowed) and save() / load
    Tokenizer copy = Tokenizer::from_bytes("\n  " + t.serialized(), "copy");
    const std::string file = dir.path() + "/" + t.file_name();
    t.save(file);
    Tokenizer loaded = Tokenizer::load(file);
    for (const Tokenizer* u : {&copy, &loaded}) {
      EXPECT_TRUE(u->is_bpe());
      EXPECT_EQ(u->vocab_size(), t.vocab_size());
      EXPECT_EQ(u->eos_id(), t.eos_id());
      EXPECT_EQ(u->pad_id(), t.pad_id());
      EXPECT_EQ(u->bos_id(), -1);
      for (const auto& c : expected()["qwen2"]) EXPECT_EQ(u->encode(c["text"].get<std::string>()), c["ids"].get<std::vector<int>>());
    }
  }
  // SentencePiece stays as it was
  Tokenizer sp = train_tokenizer(std::vector<std::string>{"pick up the cube", "open the drawer"}, {.vocab_size = 300});
  EXPECT_FALSE(sp.is_bpe());
  EXPECT_EQ(sp.file_name(), "tokenizer.model");
  EXPECT_FALSE(Tokenizer::from_bytes(sp.serialized()).is_bpe());
}

// tokenizer_config.json's bos_token starts prompts (Tokenizer::bos_id, model/prompt.cc) only with
// add_bos_token true, as HF adds it: the SmolLM-era Eagle config names <|im_start|> with false
TEST(BpeTokenizer, BosTokenOnlyWhereTheConfigAddsIt) {
  TempDir dir("bpe_bos");
  for (const char* f : {"vocab.json", "merges.txt"}) fs::copy_file(kFixture / "slow" / f, fs::path(dir.path()) / f);
  auto config = json::parse(std::ifstream(kFixture / "slow" / "tokenizer_config.json"));
  config["bos_token"] = "<|im_start|>";
  for (json add : {json(), json(false), json(true)}) {
    if (add.is_null()) config.erase("add_bos_token");
    else config["add_bos_token"] = add;
    std::ofstream(dir.path() + "/tokenizer_config.json") << config.dump();
    const auto t = BpeTokenizer::load(dir.path());
    EXPECT_EQ(t.bos_id(), add == json(true) ? t.encode("<|im_start|>").at(0) : -1) << add.dump();
  }
}

TEST(Tokenizer, FindsACheckpointsTokenizerFile) {
  TempDir dir("bpe_tokenizer");
  EXPECT_EQ(find_tokenizer_file(dir.path()), "");
  write_text(fs::path(dir.path()) / "tokenizer.json", "{}");
  EXPECT_EQ(find_tokenizer_file(dir.path()), dir.path() + "/tokenizer.json");
  write_text(fs::path(dir.path()) / "tokenizer.model", "");
  EXPECT_EQ(find_tokenizer_file(dir.path()), dir.path() + "/tokenizer.model");
}

// A copy of the fixture's files in a temp dir with one file changed.
struct Broken {
  std::string file;                                   // "tokenizer.json", "slow/merges.txt", ...
  std::function<void(json&)> edit_json;               // for a JSON file
  std::string text;                                   // else the file's new text ("" with no edit: removed)
  ErrorKind kind;
  std::vector<std::string> says;                      // substrings of the message
  std::string load = "";                              // what to load: "" tokenizer.json, "slow"
};

TEST(BpeTokenizer, BadFilesAreRefusedNamingTheFileAndField) {
  const std::vector<Broken> cases = {
      {"tokenizer.json", nullptr, "{\"model\": ", ErrorKind::kCorruption, {"tokenizer.json", "not valid JSON"}},
      {"tokenizer.json", [](json& j) { j = json::array(); }, "", ErrorKind::kCorruption, {"tokenizer.json", "(top level)"}},
      {"tokenizer.json", [](json& j) { j["model"]["type"] = "WordPiece"; }, "", ErrorKind::kUnsupported, {"model.type", "WordPiece"}},
      {"tokenizer.json", [](json& j) { j["model"]["type"] = 3; }, "", ErrorKind::kCorruption, {"model.type", "expected a string"}},
      {"tokenizer.json", [](json& j) { j["model"]["vocab"] = json::array(); }, "", ErrorKind::kCorruption, {"model.vocab", "expected an object"}},
      {"tokenizer.json", [](json& j) { j["model"]["vocab"]["h"] = "seven"; }, "", ErrorKind::kCorruption, {"model.vocab[\"h\"]", "token id"}},
      {"tokenizer.json", [](json& j) { j["model"].erase("merges"); }, "", ErrorKind::kCorruption, {"model.merges", "missing"}},
      {"tokenizer.json", [](json& j) { j["model"]["merges"][2] = json::array({"Ġt", "zzz"}); }, "", ErrorKind::kCorruption,
       {"model.merges[2]", "'zzz' is not in model.vocab"}},
      {"tokenizer.json", [](json& j) { j["model"]["merges"][0] = json::array({"~", "~"}); }, "", ErrorKind::kCorruption,
       {"model.merges[0]", "'~~' (the merged token) is not in model.vocab"}},
      {"tokenizer.json", [](json& j) { j["model"]["merges"][1] = 5; }, "", ErrorKind::kCorruption, {"model.merges[1]", "expected"}},
      {"tokenizer.json", [](json& j) { j["model"]["merges"][1] = "a b c"; }, "", ErrorKind::kCorruption, {"model.merges[1]", "expected"}},
      {"tokenizer.json", [](json& j) { j["model"]["dropout"] = 0.1; }, "", ErrorKind::kUnsupported, {"model.dropout"}},
      {"tokenizer.json", [](json& j) { j["normalizer"] = {{"type", "Lowercase"}}; }, "", ErrorKind::kUnsupported, {"normalizer.type", "Lowercase"}},
      {"tokenizer.json", [](json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }, "", ErrorKind::kUnsupported, {"pre_tokenizer.type", "Whitespace"}},
      {"tokenizer.json", [](json& j) { j["pre_tokenizer"] = nullptr; }, "", ErrorKind::kUnsupported, {"pre_tokenizer", "null"}},
      {"tokenizer.json", [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed"; }, "", ErrorKind::kUnsupported,
       {"pre_tokenizer.pretokenizers[0].behavior", "Removed"}},
      {"tokenizer.json", [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"Regex", "(a"}}; }, "", ErrorKind::kUnsupported,
       {"pre_tokenizer.pretokenizers[0].pattern.Regex", "PCRE2"}},
      {"tokenizer.json", [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"Regex", 1}}; }, "", ErrorKind::kCorruption,
       {"pre_tokenizer.pretokenizers[0].pattern.Regex", "expected a string"}},
      {"tokenizer.json", [](json& j) { std::swap(j["pre_tokenizer"]["pretokenizers"][0], j["pre_tokenizer"]["pretokenizers"][1]); }, "",
       ErrorKind::kUnsupported, {"pre_tokenizer.pretokenizers[0].type", "ByteLevel"}},
      {"tokenizer.json", [](json& j) { j["decoder"] = nullptr; }, "", ErrorKind::kUnsupported, {"decoder", "ByteLevel"}},
      {"tokenizer.json", [](json& j) { j["added_tokens"][0]["content"] = 7; }, "", ErrorKind::kCorruption, {"added_tokens[0].content", "expected a string"}},
      {"tokenizer.json", [](json& j) { j["added_tokens"][1]["id"] = -4; }, "", ErrorKind::kCorruption, {"added_tokens[1].id", "token id"}},
      {"tokenizer.json", [](json& j) { j["added_tokens"][1]["lstrip"] = true; }, "", ErrorKind::kUnsupported, {"added_tokens[1].lstrip"}},
      {"tokenizer_config.json", [](json& j) { j["eos_token"] = "<|nowhere|>"; }, "", ErrorKind::kCorruption,
       {"tokenizer_config.json", "eos_token", "<|nowhere|>"}},
      {"tokenizer_config.json", [](json& j) { j["pad_token"] = 3; }, "", ErrorKind::kCorruption, {"tokenizer_config.json", "pad_token", "expected a string"}},
      {"slow/merges.txt", nullptr, "#version: 0.2\nĠ t\nhe\n", ErrorKind::kCorruption, {"merges.txt", "line 3", "two tokens"}, "slow"},
      {"slow/merges.txt", nullptr, "Ġ t\nh zzz\n", ErrorKind::kCorruption, {"merges.txt", "line 2", "'zzz' is not in vocab.json"}, "slow"},
      {"slow/merges.txt", nullptr, "", ErrorKind::kNotFound, {"merges.txt"}, "slow"},
      {"slow/vocab.json", [](json& j) { j["h"] = "x"; }, "", ErrorKind::kCorruption, {"vocab.json", "\"h\"", "token id"}, "slow"},
      {"slow/vocab.json", nullptr, "[1, 2", ErrorKind::kCorruption, {"vocab.json", "not valid JSON"}, "slow"},
      {"slow/tokenizer_config.json", [](json& j) { j["tokenizer_class"] = "BertTokenizer"; }, "", ErrorKind::kUnsupported,
       {"tokenizer_config.json", "tokenizer_class", "BertTokenizer"}, "slow"},
      {"slow/tokenizer_config.json", [](json& j) { j["added_tokens_decoder"]["x7"] = {{"content", "<x>"}}; }, "", ErrorKind::kCorruption,
       {"tokenizer_config.json", "added_tokens_decoder[\"x7\"]", "not a token id"}, "slow"},
      {"slow/added_tokens.json", [](json& j) { j["<new>"] = "nine"; }, "", ErrorKind::kCorruption, {"added_tokens.json", "\"<new>\"", "token id"}, "slow"},
  };
  for (const auto& c : cases) {
    TempDir dir("bpe_tokenizer_bad");
    fs::copy(kFixture, dir.path(), fs::copy_options::recursive);
    const fs::path file = fs::path(dir.path()) / c.file;
    SCOPED_TRACE(c.file + ": " + c.says.front());
    if (c.edit_json) {
      json j = json::parse(read_text(file));
      c.edit_json(j);
      write_text(file, j.dump());
    } else if (c.text.empty()) {
      fs::remove(file);
    } else {
      write_text(file, c.text);
    }
    const std::string target = dir.path() + (c.load.empty() ? "/tokenizer.json" : "/" + c.load);
    const std::string msg = error_of([&] { BpeTokenizer::load(target); }, c.kind);
    EXPECT_NE(msg.find(fs::path(c.file).filename().string()), std::string::npos) << msg;
    for (const auto& s : c.says) EXPECT_NE(msg.find(s), std::string::npos) << "'" << s << "' not in: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    // Tokenizer::load refuses it the same way
    EXPECT_EQ(error_of([&] { Tokenizer::load(target); }, c.kind), msg);
  }
  // missing files and directories
  TempDir empty("bpe_tokenizer_bad");
  std::string msg = error_of([&] { BpeTokenizer::load(empty.path() + "/tokenizer.json"); }, ErrorKind::kNotFound);
  EXPECT_NE(msg.find(empty.path() + "/tokenizer.json"), std::string::npos) << msg;
  msg = error_of([&] { BpeTokenizer::load(empty.path()); }, ErrorKind::kNotFound);
  EXPECT_NE(msg.find("no tokenizer.json, nor vocab.json and merges.txt"), std::string::npos) << msg;
  msg = error_of([&] { BpeTokenizer::from_json("{\"model\": 1}", "mem"); });
  EXPECT_EQ(msg, "mem: model: expected an object");
}

// A Qwen-sized vocabulary (151k pieces and merges, synthetic) loads well under a second and a
// 100-token prompt encodes well under a millisecond (the times are printed).
TEST(BpeTokenizer, QwenSizedVocabularyLoadsAndEncodesQuickly) {
  TempDir dir("bpe_tokenizer_big");
  json j = json::parse(read_text(kFixture / "tokenizer.json"));
  std::vector<std::string> base;
  for (const auto& [token, id] : j["model"]["vocab"].items())
    if (id.get<int>() < 256) base.push_back(token);
  ASSERT_EQ(base.size(), 256u);
  json vocab = json::object(), merges = json::array();
  int next = 0;
  for (const auto& b : base) vocab[b] = next++;
  std::vector<std::string> pairs;
  for (const auto& a : base)
    for (const auto& b : base) {
      pairs.push_back(a + b);
      vocab[a + b] = next++;
      merges.push_back(json::array({a, b}));
    }
  for (size_t k = 0; next < 151643; ++k) {  // three characters: a pair and a byte (distinct for k < 2 * 65536)
    const std::string& pair = pairs[k % pairs.size()];
    const std::string& last = base[(k + k / pairs.size()) % 256];
    vocab[pair + last] = next++;
    merges.push_back(json::array({pair, last}));
  }
  j["model"]["vocab"] = std::move(vocab);
  j["model"]["merges"] = std::move(merges);
  for (auto& t : j["added_tokens"]) t["id"] = t["id"].get<int>() - 656 + 151643;
  write_text(fs::path(dir.path()) / "tokenizer.json", j.dump());

  auto start = std::chrono::steady_clock::now();
  BpeTokenizer t = BpeTokenizer::load(dir.path() + "/tokenizer.json");
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(t.vocab_size(), 151643 + 8);
  EXPECT_GT(t.num_merges(), 150000);

  BpeTokenizer tiny = BpeTokenizer::load((kFixture / "tokenizer.json").string());
  std::string prompt = "<|im_start|>user\n";
  while (tiny.encode(prompt).size() < 100) prompt += "Pick up the black bowl next to the cookie box and place it on the plate. ";
  const int reps = 200;
  start = std::chrono::steady_clock::now();
  size_t n = 0;
  for (int i = 0; i < reps; ++i) n += t.encode(prompt).size() + tiny.encode(prompt).size();
  const double encode_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / (2 * reps);
  std::printf("151k vocabulary loaded in %.3f s; a %zu-token prompt encodes in %.1f us\n", load_s, tiny.encode(prompt).size(), encode_us);
  EXPECT_GT(n, 0u);
  EXPECT_LT(load_s, 3.0);  // generous: shared and sanitizer machines
  EXPECT_LT(encode_us, 1000.0);
}

}  // namespace
}  // namespace ember::model
