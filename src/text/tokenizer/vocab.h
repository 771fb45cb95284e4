// Vocabulary data common to every tokenizer kind: pieces, scores, attributes, merges and special
// ids as read from GGUF (or built in code), its validation, and splitting text at special tokens.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "text/tokenizer/token_lengths.h"
#include "text/tokenizer/tokenizer.h"

namespace tinfer {

// Plain metadata, as in the GGUF keys tokenizer.ggml.*; filled by load_tokenizer or by tests.
struct VocabData {
  std::string model;                // tokenizer.ggml.model: "llama", "gpt2", "t5" (SentencePiece unigram)
  // tokenizer.ggml.pre: gpt2's pre-tokenizer name; t5: where the dummy prefix goes ("default": SentencePiece's,
  // "metaspace" / "metaspace-first": a tokenizer.json Metaspace pre-tokenizer's prepend_scheme always / first).
  std::string pre = "default";
  std::vector<std::string> tokens;  // [n_vocab]
  std::vector<float> scores;        // [n_vocab] or empty (all 0)
  std::vector<int32_t> types;       // [n_vocab] TokenAttr values, or empty (all normal)
  // gpt2: "left right", rank = index. llama (SentencePiece-style BPE from a tokenizer.json): when present, pairs
  // merge by this rank (Hugging Face's BPE) instead of by the merged piece's score.
  std::vector<std::string> merges;
  int32_t bos = -1, eos = -1, unk = -1, eot = -1, eom = -1, pad = -1;
  // More end-of-generation ids (generation_config.json's eos_token_id list; GGUF: tinfer.tokenizer.eog_token_ids).
  std::vector<int32_t> eog_ids;
  bool add_bos = true;
  bool add_space_prefix = true;  // SentencePiece dummy prefix
  // Unicode normalisation of plain text before tokenizing (tokenizer.json's NFC / NFKC / NFD / NFKD normalizers,
  // e.g. Qwen's NFC; GGUF key tinfer.tokenizer.normalizer): "" none, "nfc", "nfkc", "nfd", "nfkd".
  std::string normalizer;
  // t5 (SentencePiece normaliser): strip leading/trailing spaces and collapse runs (tokenizer.ggml.remove_extra_whitespaces).
  bool remove_extra_whitespaces = false;
  // t5: SentencePiece's compiled normalisation table (tokenizer.ggml.precompiled_charsmap, text/tokenizer/charsmap.h),
  // applied by the unigram kind before its whitespace rules.
  std::string precompiled_charsmap;
  // Throws Error listing every problem: array lengths that disagree, ids out of range, bad types.
  void validate() const;
};

// Immutable lookups built once from VocabData.
class Vocab {
 public:
  explicit Vocab(VocabData d);
  Vocab(const Vocab&) = delete;  // index_ holds views into d_.tokens
  Vocab& operator=(const Vocab&) = delete;
  const VocabData& data() const { return d_; }
  int32_t size() const { return static_cast<int32_t>(d_.tokens.size()); }
  TokenAttr attr(int32_t id) const { return attrs_[id]; }
  float score(int32_t id) const { return d_.scores.empty() ? 0.0f : d_.scores[id]; }
  int32_t find(std::string_view piece) const;  // -1 if absent
  bool in_range(int32_t id) const { return id >= 0 && id < size(); }
  bool is_eog(int32_t id) const;

  // A piece of input after special-token matching: either a special token id or raw text.
  struct Fragment {
    int32_t id = -1;  // >= 0: special token
    std::string_view text;
  };
  // Splits `text` at occurrences of special token texts, longest match first: user-defined texts
  // always (they are plain text matched whole, as llama.cpp and Hugging Face added tokens are), control
  // texts only with parse_special and where they overlap no `literal` range.
  std::vector<Fragment> split_special(std::string_view text, bool parse_special,
                                      std::span<const TextRange> literal = {}) const;
  // A plain-text fragment in the vocabulary's Unicode normal form (VocabData::normalizer): the text itself when
  // there is none, it is ASCII or not valid UTF-8 (bytes are tokenized as they are), else a view of buf.
  std::string_view normalized(std::string_view text, std::string& buf) const;

 private:
  VocabData d_;
  std::vector<TokenAttr> attrs_;
  std::unordered_map<std::string_view, int32_t> index_;  // views into d_.tokens
  std::vector<int32_t> specials_;                        // control/user-defined ids, longest text first
  bool has_user_defined_ = false;
  std::vector<bool> eog_;
};

// A SentencePiece-style piece's bytes (both SentencePiece kinds: BPE and unigram): <0xNN> byte pieces as their
// byte, U+2581 as a space, control/unknown/unused pieces "" unless render_special.
std::string sentencepiece_token_bytes(const Vocab& vocab, int32_t id, bool render_special);

// Constructors for each tokenizer kind (the table load_tokenizer dispatches on).
std::unique_ptr<Tokenizer> make_spm_tokenizer(VocabData d);
std::unique_ptr<Tokenizer> make_bpe_tokenizer(VocabData d);
std::unique_ptr<Tokenizer> make_unigram_tokenizer(VocabData d);  // "t5"
// SentencePiece ModelProto bytes -> VocabData (model "llama" for BPE models, "t5" for unigram ones); Error on
// malformed input.
VocabData parse_sentencepiece_model(const uint8_t* data, size_t size);
// Dispatch by d.model (Error naming an unknown model); the kind validates d before building.
std::unique_ptr<Tokenizer> make_tokenizer(VocabData d);

// The part every tokenizer kind shares: a validated vocabulary and the Tokenizer queries answered from it.
class VocabTokenizer : public Tokenizer {
 public:
  explicit VocabTokenizer(VocabData d) : vocab_(std::move(d)) {}
  int32_t n_vocab() const override { return vocab_.size(); }
  int32_t bos() const override { return vocab_.data().bos; }
  int32_t eos() const override { return vocab_.data().eos; }
  bool is_eog(int32_t id) const override { return vocab_.is_eog(id); }
  int32_t token_id(std::string_view piece) const override { return vocab_.find(piece); }
  const std::string& piece(int32_t id) const override { return vocab_.data().tokens.at(id); }
  bool add_bos_by_default() const override { return vocab_.data().add_bos; }
  // The longest text a token matches (TokenLengths), times how far the vocabulary's Unicode normal form can shrink
  // text; 0 when the kind drops or fuses input.
  size_t max_bytes_per_token() const override;
  size_t max_bytes_per_token_in(std::string_view text) const override;

 protected:
  // Whether the kind may drop input, or fuse any length of it into one token (no byte bound then).
  virtual bool drops_or_fuses() const { return true; }
  // The text token id matches in the kind's input (as bytes: byte-level BPE), and what the kind adds to every input
  // before matching (SentencePiece's U+2581).
  virtual std::string matched_text(int32_t id) const { return token_bytes(id, true); }
  virtual std::string_view added_text() const { return {}; }
  Vocab vocab_;

 private:
  const TokenLengths& lengths() const;  // built on first use
  mutable std::once_flag lengths_once_;
  mutable std::unique_ptr<TokenLengths> lengths_;
};

// The part both SentencePiece kinds (BPE and unigram) share: pieces read back as text (sentencepiece_token_bytes) and
// the dummy-prefix flag.
class SentencePieceTokenizer : public VocabTokenizer {
 public:
  using VocabTokenizer::VocabTokenizer;
  std::string token_bytes(int32_t id, bool render_special) const override {
    return sentencepiece_token_bytes(vocab_, id, render_special);
  }
  bool adds_space_prefix() const override { return vocab_.data().add_space_prefix; }

 protected:
  // Pieces match as stored, U+2581 for a space (3 bytes of a literal U+2581 in the input); a byte piece stands for
  // one byte (kMinBytes covers it).
  std::string matched_text(int32_t id) const override {
    return vocab_.attr(id) == TokenAttr::byte ? std::string() : vocab_.data().tokens[size_t(id)];
  }
  std::string_view added_text() const override { return "\xE2\x96\x81"; }
};

}  // namespace tinfer
