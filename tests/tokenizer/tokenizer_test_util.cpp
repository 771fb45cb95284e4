// Tokenizer test helpers: fixture reading and in-code vocabularies.
#include "tokenizer/tokenizer_test_util.h"

#include <cstdio>
#include <fstream>
#include <iterator>

#include "text/tokenizer/unicode_util.h"

namespace tinfer::test {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string corpus_slice(const std::string& path, size_t offset, size_t length) {
  std::string all = read_file(path);
  if (offset >= all.size()) return {};
  std::string s = all.substr(offset, length);
  s.resize(s.size() - unicode::incomplete_tail(s));
  return s;
}

VocabData tiny_spm_vocab(const std::vector<std::string>& pieces) {
  VocabData d;
  d.model = "llama";
  d.tokens = {"<unk>", "<s>", "</s>"};
  d.types = {2, 3, 3};
  d.scores = {0, 0, 0};
  char buf[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    d.tokens.push_back(buf);
    d.types.push_back(6);
    d.scores.push_back(0);
  }
  float score = -1;
  for (const auto& p : pieces) {
    d.tokens.push_back(p);
    d.types.push_back(1);
    d.scores.push_back(score--);
  }
  d.unk = 0, d.bos = 1, d.eos = 2;
  return d;
}

VocabData tiny_bpe_vocab(const std::vector<std::string>& merges) {
  VocabData d;
  d.model = "gpt2";
  d.pre = "gpt2";
  for (int b = 0; b < 256; ++b) d.tokens.push_back(unicode::byte_to_utf8(static_cast<uint8_t>(b)));
  d.types.assign(256, 1);
  d.tokens.push_back("<|endoftext|>");
  d.types.push_back(3);
  for (const auto& m : merges) {
    const size_t sp = m.find(' ');
    d.tokens.push_back(m.substr(0, sp) + m.substr(sp + 1));
    d.types.push_back(1);
  }
  d.merges = merges;
  d.bos = d.eos = 256;
  d.add_bos = false;
  d.add_space_prefix = false;
  return d;
}

}  // namespace tinfer::test
