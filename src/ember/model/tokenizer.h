// The VLA policies' tokenizer for the language prefix: a SentencePiece model (a `.model` file:
// a real Gemma / PaliGemma tokenizer works unchanged; or a small one trained from a dataset's
// task strings), wrapping Debian's libsentencepiece, or a Hugging Face byte-level BPE tokenizer
// (tokenizer.json, or vocab.json + merges.txt: GPT-2, Qwen2, Qwen3 as in GR00T-N1.5's Eagle 2.5;
// bpe_tokenizer.h).
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

class BpeTokenizer;

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

// A loaded tokenizer, SentencePiece or byte-level BPE. Immutable after construction: const
// methods are safe to call from several threads at once. Movable, not copyable.
class Tokenizer {
 public:
  // Reads a tokenizer: a `.json` file is a Hugging Face tokenizer.json (byte-level BPE); a
  // directory holds tokenizer.json, else vocab.json + merges.txt (BPE, BpeTokenizer::load),
  // else tokenizer.model; any other file is a serialized SentencePiece ModelProto (`.model`).
  // Throws Error kNotFound naming the path if it is missing, kCorruption naming it (and the
  // field, for JSON) if its bytes do not follow the format, kUnsupported for a tokenizer.json
  // of a kind not read (BpeTokenizer::load).
  static Tokenizer load(const std::string& path);
  // Parses what serialized() gives: tokenizer.json text (its first non-space byte is '{'),
  // else a serialized ModelProto; `name` is used in messages.
  static Tokenizer from_bytes(std::string_view model_proto, std::string name = "<memory>");

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Writes the model atomically ("<path>.tmp-<pid>" renamed over path); throws Error kIO
  // naming the path if the system refuses. A checkpoint names the file file_name().
  void save(const std::string& path) const;
  // The bytes save() writes: the serialized ModelProto, or for BPE a self-contained
  // tokenizer.json text (BpeTokenizer::to_json) that loads back to the same tokenizer.
  std::string serialized() const;
  // "tokenizer.json" for BPE, "tokenizer.model" for SentencePiece.
  std::string file_name() const;
  bool is_bpe() const { return bpe_ != nullptr; }

  // Token ids for text, without bos/eos. Never fails for valid UTF-8 on a byte-fallback model
  // or a byte-level BPE; throws Error kInvalidArgument if the input is rejected (not UTF-8).
  std::vector<int> encode(std::string_view text) const;
  // Text for ids; special ids (bos/eos/pad; for BPE, every added token marked special)
  // decode to nothing. Throws Error kInvalidArgument for an id outside [0, vocab_size()).
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
  Tokenizer(std::unique_ptr<BpeTokenizer> bpe, std::string name);
  // exactly one of them is set
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::unique_ptr<BpeTokenizer> bpe_;
  std::string name_;
};

// The tokenizer file of a checkpoint directory: DIR/tokenizer.model, else DIR/tokenizer.json,
// else "" (neither exists).
std::string find_tokenizer_file(const std::string& dir);

// Trains a tokenizer on texts (e.g. a dataset's task strings). Deterministic for the same
// texts and options. Throws Error kInvalidArgument when texts is empty, or when the trainer
// refuses (its message included, e.g. a vocabulary too large for the text with
// shrink_vocab_to_fit off).
Tokenizer train_tokenizer(std::span<const std::string> texts,
                          const TokenizerTrainOptions& options = {});

}  // namespace ember::model
