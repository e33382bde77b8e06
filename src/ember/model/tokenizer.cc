#include "ember/model/tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cctype>
#include <charconv>
#include <filesystem>
#include <unordered_map>
#include <utility>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/model/bpe_tokenizer.h"

namespace ember::model {
namespace {

namespace spm = sentencepiece;

// Feeds the training strings to the trainer without a temporary file.
class StringIterator : public spm::SentenceIterator {
 public:
  explicit StringIterator(std::span<const std::string> texts) : texts_(texts) {}
  bool done() const override { return i_ >= texts_.size(); }
  void Next() override { ++i_; }
  const std::string& value() const override { return texts_[i_]; }
  spm::util::Status status() const override { return spm::util::Status(); }

 private:
  std::span<const std::string> texts_;
  size_t i_ = 0;
};

// The largest vocabulary the trainer says it allows, parsed from its message
// ("Vocabulary size is too high (512). Please set it to a value <= 301."), or -1.
int allowed_vocab_size(const std::string& message) {
  static constexpr std::string_view kMarker = "value <= ";
  size_t at = message.find(kMarker);
  if (at == std::string::npos) return -1;
  const char* begin = message.data() + at + kMarker.size();
  int value = -1;
  auto [end, ec] = std::from_chars(begin, message.data() + message.size(), value);
  return ec == std::errc() ? value : -1;
}

spm::util::Status run_trainer(std::span<const std::string> texts,
                              const TokenizerTrainOptions& options, int vocab_size,
                              std::string* model_proto) {
  // identity normalisation and kept whitespace: decode(encode(s)) == s, as in Gemma's model
  std::unordered_map<std::string, std::string> args = {
      {"model_type", options.algorithm == TokenizerTrainOptions::Algorithm::kBpe ? "bpe" : "unigram"},
      {"vocab_size", std::to_string(vocab_size)},
      {"byte_fallback", options.byte_fallback ? "true" : "false"},
      {"character_coverage", "1.0"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"split_digits", "true"},
      {"pad_id", "0"},
      {"eos_id", "1"},
      {"bos_id", "2"},
      {"unk_id", "3"},
      {"num_threads", std::to_string(options.num_threads)},
      {"minloglevel", "2"},
  };
  StringIterator it(texts);
  return spm::SentencePieceTrainer::Train(args, &it, model_proto);
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<spm::SentencePieceProcessor> sp, std::string name)
    : sp_(std::move(sp)), name_(std::move(name)) {}
Tokenizer::Tokenizer(std::unique_ptr<BpeTokenizer> bpe, std::string name)
    : bpe_(std::move(bpe)), name_(std::move(name)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  const bool dir = fs::is_directory(p);
  if (dir && !fs::exists(p / "tokenizer.json") && !fs::exists(p / "vocab.json") && fs::exists(p / "tokenizer.model"))
    return load((p / "tokenizer.model").string());
  if (dir || p.extension() == ".json")
    return Tokenizer(std::make_unique<BpeTokenizer>(BpeTokenizer::load(path)), path);
  std::vector<uint8_t> bytes = read_file(path);  // throws kNotFound / kIO naming the path
  return from_bytes(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                    path);
}

Tokenizer Tokenizer::from_bytes(std::string_view model_proto, std::string name) {
  size_t first = 0;
  while (first < model_proto.size() && std::isspace(static_cast<unsigned char>(model_proto[first]))) ++first;
  if (first < model_proto.size() && model_proto[first] == '{')
    return Tokenizer(std::make_unique<BpeTokenizer>(BpeTokenizer::from_json(model_proto, name)), name);
  auto sp = std::make_unique<spm::SentencePieceProcessor>();
  spm::util::Status status = sp->LoadFromSerializedProto(model_proto);
  if (!status.ok()) {
    fail_corrupt(name + ": not a SentencePiece model (" + status.ToString() + ")");
  }
  return Tokenizer(std::move(sp), std::move(name));
}

std::string Tokenizer::serialized() const { return bpe_ ? bpe_->to_json() : sp_->serialized_model_proto(); }

std::string Tokenizer::file_name() const { return bpe_ ? "tokenizer.json" : "tokenizer.model"; }

void Tokenizer::save(const std::string& path) const {
  std::string bytes = serialized();
  AtomicFile file(path);
  file.write(bytes.data(), bytes.size());
  file.commit();
}

std::vector<int> Tokenizer::encode(std::string_view text) const {
  if (bpe_) return bpe_->encode(text);
  std::vector<int> ids;
  spm::util::Status status = sp_->Encode(text, &ids);
  if (!status.ok()) {
    fail(ErrorKind::kInvalidArgument, name_ + ": cannot encode text (" + status.ToString() + ")");
  }
  return ids;
}

std::string Tokenizer::decode(std::span<const int> ids) const {
  if (bpe_) return bpe_->decode(ids, /*skip_special=*/true);
  // SentencePiece aborts the process on an out-of-range id, so check first
  const int n = vocab_size();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= n) {
      fail(ErrorKind::kInvalidArgument, name_ + ": token id " + std::to_string(ids[i]) +
                                            " at position " + std::to_string(i) +
                                            " is outside the vocabulary [0, " +
                                            std::to_string(n) + ")");
    }
  }
  std::string text;
  spm::util::Status status = sp_->Decode(std::vector<int>(ids.begin(), ids.end()), &text);
  if (!status.ok()) {
    fail(ErrorKind::kInvalidArgument, name_ + ": cannot decode ids (" + status.ToString() + ")");
  }
  return text;
}

int Tokenizer::vocab_size() const { return bpe_ ? bpe_->vocab_size() : sp_->GetPieceSize(); }
int Tokenizer::bos_id() const { return bpe_ ? bpe_->bos_id() : sp_->bos_id(); }
int Tokenizer::eos_id() const { return bpe_ ? bpe_->eos_id() : sp_->eos_id(); }
int Tokenizer::pad_id() const { return bpe_ ? bpe_->pad_id() : sp_->pad_id(); }
int Tokenizer::unk_id() const { return bpe_ ? bpe_->unk_id() : sp_->unk_id(); }

std::string find_tokenizer_file(const std::string& dir) {
  namespace fs = std::filesystem;
  for (const char* name : {"tokenizer.model", "tokenizer.json"})
    if (fs::exists(fs::path(dir) / name)) return (fs::path(dir) / name).string();
  return "";
}

Tokenizer train_tokenizer(std::span<const std::string> texts,
                          const TokenizerTrainOptions& options) {
  const std::string name = "<trained from " + std::to_string(texts.size()) + " strings>";
  if (texts.empty()) {
    fail(ErrorKind::kInvalidArgument, "tokenizer training: no training text given");
  }
  std::string model_proto;
  spm::util::Status status = run_trainer(texts, options, options.vocab_size, &model_proto);
  if (!status.ok() && options.shrink_vocab_to_fit) {
    int allowed = allowed_vocab_size(status.ToString());
    if (allowed > 0 && allowed < options.vocab_size) {
      status = run_trainer(texts, options, allowed, &model_proto);
    }
  }
  if (!status.ok()) {
    fail(ErrorKind::kInvalidArgument, "tokenizer training on " + std::to_string(texts.size()) +
                                          " strings with vocab_size " +
                                          std::to_string(options.vocab_size) +
                                          " failed: " + status.ToString());
  }
  return Tokenizer::from_bytes(model_proto, name);
}

}  // namespace ember::model
