// TextStream: token ids in, printable text out, for streaming generated tokens. Emits only whole
// UTF-8 characters, and drops SentencePiece's dummy-prefix space from the very first piece when
// the text starts right after BOS (the space is an encoding artefact, not generated text).
#pragma once
#include <string>

#include "model/tokenizer/tokenizer.h"

namespace tinfer {

class TextStream {
 public:
  // at_text_start: nothing but BOS precedes the generated tokens.
  TextStream(const Tokenizer& tok, bool at_text_start)
      : tok_(tok), strip_space_(at_text_start && tok.adds_space_prefix()) {}

  std::string push(int32_t token) {
    std::string bytes = tok_.token_bytes(token);
    if (strip_space_ && !bytes.empty()) {
      if (bytes[0] == ' ') bytes.erase(0, 1);
      strip_space_ = false;
    }
    return utf8_.push(bytes);
  }
  std::string flush() { return utf8_.flush(); }

 private:
  const Tokenizer& tok_;
  bool strip_space_;
  Utf8Stream utf8_;
};

}  // namespace tinfer
