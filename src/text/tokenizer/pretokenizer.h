// Pre-tokenizers for byte-level BPE: split text into words before merging, as the regexes of the
// original tokenizers do (hand-written matchers over ICU character classes, no std::regex).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace tinfer {

enum class PreTokenizer { gpt2, smollm, llama3, qwen2 };

// tokenizer.ggml.pre -> PreTokenizer; Error naming an unknown one.
PreTokenizer pre_tokenizer_from_name(const std::string& name);
// Appends the words of `text` (views into it, covering it exactly, in order) to `out`.
void pre_tokenize(PreTokenizer kind, std::string_view text, std::vector<std::string_view>& out);

}  // namespace tinfer
