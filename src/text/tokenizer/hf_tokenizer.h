// Hugging Face tokenizer files -> VocabData (the tokenizer.ggml.* metadata llama.cpp's converter writes):
//   - byte-level BPE (ByteLevel pre-tokenizer): model "gpt2", merges, `pre` named from the pre-tokenizer's regex
//     (Llama 3 -> llama-bpe, Qwen 2 -> qwen2, GPT-2 -> gpt-2, Digits + ByteLevel -> smollm); an unknown regex is an
//     Error quoting it;
//   - SentencePiece-style BPE (byte_fallback, Metaspace or Replace(' ', U+2581) normalizer): model "llama", <0xNN>
//     pieces typed byte, score = -(rank of the merge that forms the piece), merges kept too (exact HF order);
//   - added tokens: special -> control, others -> user_defined; bos/eos/unk/pad from tokenizer_config.json
//     (strings or {"content": ...}) then config.json ids; generation_config.json's eos_token_id (one id or a list)
//     all end generation; add_bos_token from tokenizer_config.json, else the post-processor's template.
//   - Unigram: model "t5", scores = the pieces' log probabilities, unk_id typed unknown, <0xNN> pieces typed byte
//     with byte_fallback; Metaspace (prepend_scheme always/first/never) or Prepend + Replace(' ', U+2581); Unicode
//     (NFC/NFKC/NFD/NFKD) and Precompiled (SentencePiece's character map, base64) normalizers applied.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "text/tokenizer/vocab.h"

namespace tinfer {

struct HfTokenizerFiles {
  std::string tokenizer_json;     // text of tokenizer.json (required)
  std::string tokenizer_config;   // text of tokenizer_config.json, "" if absent
  std::string generation_config;  // text of generation_config.json, "" if absent
  std::string config;             // text of config.json, "" if absent (bos/eos ids, vocab_size)
};

struct HfVocab {
  VocabData vocab;
  // tokenizer.chat_template ("" = none) and named ones (tokenizer.chat_template.<name>), as llama.cpp writes them.
  std::string chat_template;
  std::vector<std::pair<std::string, std::string>> named_templates;
};

// n_vocab > 0 pads the token list with "[PAD<i>]" unused tokens up to it (config.json's vocab_size, the embedding
// rows), as llama.cpp's converter does. Error naming the file and the problem.
HfVocab vocab_from_hf(const HfTokenizerFiles& files, int64_t n_vocab = 0);

}  // namespace tinfer
