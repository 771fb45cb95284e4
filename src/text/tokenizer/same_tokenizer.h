// Two models that exchange token ids (a speculative draft and its target; the small and large model of a routed
// server) must share the tokenizer exactly.
#pragma once
#include <string>

#include "text/tokenizer/tokenizer.h"

namespace tinfer {

// Same vocabulary, pieces, control tokens, BOS/EOS and end-of-generation set; else Error "<what>: its tokenizer
// differs from <other>'s (the first difference)".
void check_same_tokenizer(const Tokenizer& reference, const Tokenizer& other, const std::string& what,
                          const std::string& reference_name);

}  // namespace tinfer
