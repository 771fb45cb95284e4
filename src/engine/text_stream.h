// TextStream: token ids in, printable text out, for streaming generated tokens (CLI and server).
// Emits only whole UTF-8 characters, and drops SentencePiece's dummy-prefix space from the very
// first piece when the text starts right after BOS (the space is an encoding artefact, not text).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer/tokenizer.h"

namespace tinfer {

class TextStream {
 public:
  // at_text_start: nothing but BOS precedes the generated tokens.
  TextStream(const Tokenizer& tok, bool at_text_start)
      : tok_(&tok), strip_space_(at_text_start && tok.adds_space_prefix()) {}

  // The token's bytes as they belong in the text (the dummy-prefix rule applied), not yet assembled.
  std::string piece(int32_t token) {
    std::string bytes = tok_->token_bytes(token);
    if (strip_space_ && !bytes.empty()) {
      if (bytes[0] == ' ') bytes.erase(0, 1);
      strip_space_ = false;
    }
    return bytes;
  }
  // Whole characters completed by `bytes` (from piece()).
  std::string assemble(std::string_view bytes) { return utf8_.push(bytes); }
  std::string push(int32_t token) { return assemble(piece(token)); }
  std::string flush() { return utf8_.flush(); }

 private:
  const Tokenizer* tok_;  // a pointer, so samples holding a stream stay movable
  bool strip_space_;
  Utf8Stream utf8_;
};

// True when the prompt is BOS alone: generated text then starts the document.
inline bool prompt_is_bos_only(const Tokenizer& tok, const std::vector<int32_t>& prompt) {
  return prompt.size() == 1 && prompt[0] == tok.bos();
}

}  // namespace tinfer
