// A byte-level BPE tokenizer with Hugging Face `tokenizers` semantics: the tokenizers of GPT-2,
// Qwen2 and Qwen3 (Eagle 2.5's language model in GR00T-N1.5), read from their files.
//
// Encoding, as `tokenizer.encode(text, add_special_tokens=False)` in HF:
//   1. added tokens split out of the text, leftmost-longest: first those not normalized, then
//      (in the normalized pieces) those normalized
//   2. the normalizer: none, or NFC, applied as the identity (ember links no Unicode
//      normalization library: text already in NFC, which is what keyboards, JSON files and
//      LeRobot task strings hold, encodes exactly; decomposed input such as "e" + U+0301 keeps
//      its code points where HF would compose them)
//   3. the pre-tokenizer: Split(regex, isolated) steps (Qwen2's PRETOKENIZE_REGEX), then
//      ByteLevel (optionally a prefix space, optionally GPT-2's regex), bytes mapped through
//      GPT-2's bytes_to_unicode table; regexes run on PCRE2 (UTF, Unicode properties), \s
//      spelled out as Unicode's White_Space, which is what HF's Oniguruma matches
//   4. the BPE merges by rank on each piece, the result looked up in the vocabulary
// The post-processor is not applied (no bos/eos added), as Tokenizer::encode's contract says.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ember::model {

// A loaded byte-level BPE tokenizer. Immutable after construction: const methods are safe to
// call from several threads at once. Movable, not copyable.
class BpeTokenizer {
 public:
  // Reads `path`: a tokenizer.json file (DIR/tokenizer_config.json beside it, when present,
  // gives bos / eos / pad / unk), or a directory holding tokenizer.json, else the "slow" files
  // vocab.json + merges.txt (+ tokenizer_config.json's added_tokens_decoder and
  // tokenizer_class, added_tokens.json). Throws Error kNotFound naming a missing file,
  // kCorruption naming the file and field that do not follow the format, kUnsupported naming
  // the field of a feature not implemented (a model other than BPE, a normalizer other than
  // NFC, a pre-tokenizer other than Split / ByteLevel, dropout, added tokens that strip spaces).
  static BpeTokenizer load(const std::string& path);
  // Parses tokenizer.json text already in memory (what to_json() gives); `name` names it in
  // messages. The special roles come from the text's model.ember_special_tokens, if any.
  static BpeTokenizer from_json(std::string_view text, std::string name = "<memory>");

  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;
  ~BpeTokenizer();

  // A self-contained tokenizer.json text (HF's tokenizers loads it too) that from_json reads
  // back to the same tokenizer; bos / eos / pad / unk are kept under model.ember_special_tokens
  // (a field HF ignores). The slow layout is converted: model, added_tokens, the Split /
  // ByteLevel pre-tokenizer with its pattern, the ByteLevel decoder.
  std::string to_json() const;

  // Token ids for text. Throws Error kInvalidArgument naming the byte offset when text is not
  // valid UTF-8, and naming the piece when the vocabulary lacks one (never, for a vocabulary
  // holding the 256 byte symbols).
  std::vector<int> encode(std::string_view text) const;
  // The pre-tokenizer's pieces of text (steps 2-3 above, byte-level mapped; added tokens are
  // not split out): what the BPE sees. For tests and inspection.
  std::vector<std::string> pre_tokenize(std::string_view text) const;
  // Text for ids, as HF's decode with the ByteLevel decoder (invalid UTF-8 becomes U+FFFD).
  // Special added tokens decode to nothing when skip_special (Tokenizer::decode's contract,
  // HF's skip_special_tokens=True), else to their content; other added tokens always to their
  // content. Throws Error kInvalidArgument for an id outside [0, vocab_size()) or one that
  // names no token.
  std::string decode(std::span<const int> ids, bool skip_special = true) const;

  // One past the largest id of the vocabulary and the added tokens.
  int vocab_size() const;
  int bos_id() const;  // -1 when the files name none, or tokenizer_config.json's add_bos_token is not true
  int eos_id() const;  // -1 when the files name none
  int pad_id() const;  // -1 when the files name none
  int unk_id() const;  // -1 when the files name none
  int num_merges() const;
  // The file or directory it was loaded from, or the name given to from_json.
  const std::string& name() const;

  struct Impl;

 private:
  explicit BpeTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::model
