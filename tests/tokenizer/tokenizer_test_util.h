// Helpers shared by the tokenizer tests: reading fixtures, small vocabularies built in code.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "text/tokenizer/vocab.h"

namespace tinfer::test {

std::string read_file(const std::string& path);
// A valid-UTF-8 slice of a shared corpus file (the end is moved back to a character boundary).
std::string corpus_slice(const std::string& path, size_t offset, size_t length);
// Tiny SentencePiece vocab: <unk> <s> </s>, all 256 byte pieces, then `pieces` with descending scores.
VocabData tiny_spm_vocab(const std::vector<std::string>& pieces);
// Tiny byte-level vocab: the 256 mapped bytes, <|endoftext|> (control), then `merges` applied in order.
VocabData tiny_bpe_vocab(const std::vector<std::string>& merges);

}  // namespace tinfer::test
