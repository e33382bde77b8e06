// A SentencePiece tokenizer: loads a `.model` file (a real Gemma / PaliGemma tokenizer works
// unchanged) or trains a small one from a dataset's task strings, for the VLA policies'
// language prefix. Wraps Debian's libsentencepiece.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace ember::model {

// How train_tokenizer builds a vocabulary. The special ids follow Gemma's layout
// (pad 0, eos 1, bos 2, unk 3), so a trained tokenizer and the PaliGemma one agree on them.
struct TokenizerTrainOptions {
  enum class Algorithm { kBpe, kUnigram };
  Algorithm algorithm = Algorithm::kBpe;
  // Requested vocabulary size, special and byte-fallback pieces included. With byte fallback
  // the floor is 4 special + 256 byte pieces + the distinct characters of the text.
  int vocab_size = 512;
  // When the text is too small for vocab_size, retry once with the largest size the trainer
  // allows instead of failing (a dataset with a handful of task strings).
  bool shrink_vocab_to_fit = true;
  // Unknown characters encode as their UTF-8 bytes, so every string encodes losslessly.
  bool byte_fallback = true;
  int num_threads = 1;
};

// A loaded SentencePiece model. Immutable after construction: const methods are safe to call
// from several threads at once. Movable, not copyable.
class Tokenizer {
 public:
  // Reads a serialized SentencePiece ModelProto (a `.model` file). Throws Error kNotFound
  // naming the path if it is missing, kCorruption naming it if its bytes are not a model.
  static Tokenizer load(const std::string& path);
  // Parses a serialized ModelProto already in memory; `name` is used in messages.
  static Tokenizer from_bytes(std::string_view model_proto, std::string name = "<memory>");

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Writes the model atomically ("<path>.tmp-<pid>" renamed over path); throws Error kIO
  // naming the path if the system refuses.
  void save(const std::string& path) const;
  // The serialized ModelProto (the bytes save() writes).
  std::string serialized() const;

  // Token ids for text, without bos/eos. Never fails for valid UTF-8 on a byte-fallback model;
  // throws Error kInvalidArgument if SentencePiece rejects the input.
  std::vector<int> encode(std::string_view text) const;
  // Text for ids; special ids (bos/eos/pad) decode to nothing. Throws Error kInvalidArgument
  // for an id outside [0, vocab_size()).
  std::string decode(std::span<const int> ids) const;

  int vocab_size() const;
  int bos_id() const;  // -1 when the model has none
  int eos_id() const;  // -1 when the model has none
  int pad_id() const;  // -1 when the model has none
  int unk_id() const;
  // The file it was loaded from, or the name given to from_bytes / train_tokenizer.
  const std::string& name() const { return name_; }

 private:
  Tokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> sp, std::string name);
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::string name_;
};

// Trains a tokenizer on texts (e.g. a dataset's task strings). Deterministic for the same
// texts and options. Throws Error kInvalidArgument when texts is empty, or when the trainer
// refuses (its message included, e.g. a vocabulary too large for the text with
// shrink_vocab_to_fit off).
Tokenizer train_tokenizer(std::span<const std::string> texts,
                          const TokenizerTrainOptions& options = {});

}  // namespace ember::model
