// SentencePiece-style tokenizer: in-code vocab behaviour, stories260K and Llama-2 oracles,
// round trips over shared corpus text, and encoding speed.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "common/test_env.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer_test_util.h"

namespace tinfer {
namespace {

using test::shared_file;

constexpr const char* kSp = "\xE2\x96\x81";  // U+2581

std::vector<std::string> split_cases(const std::string& all, const std::string& sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (size_t at; (at = all.find(sep, pos)) != std::string::npos; pos = at + sep.size())
    out.push_back(all.substr(pos, at - pos));
  return out;  // the file ends with a separator: nothing after the last one
}

std::vector<int32_t> parse_ids(const std::string& line) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ') {
      ++i;
      continue;
    }
    size_t n = 0;
    ids.push_back(std::stoi(line.substr(i), &n));
    i += n;
  }
  return ids;
}

TEST(SpmTokenizer, MergesByScoreAndFallsBackToBytes) {
  const std::string sp = kSp;
  // Scores descend in list order, so "▁h" merges before "el" etc.
  auto tok = make_spm_tokenizer(test::tiny_spm_vocab({sp + "h", "el", "lo", sp + "hel", sp + "hello", "e", "l", "o", "h",
                                                      sp}));
  const int32_t base = 3 + 256;
  // "hello" -> ▁ h e l l o; merges by score: ▁h, el, lo, then ▁h+el = ▁hel, then ▁hel+lo = ▁hello.
  EXPECT_EQ(tok->encode("hello", false), (std::vector<int32_t>{base + 4}));
  EXPECT_EQ(tok->encode("hello", true), (std::vector<int32_t>{1, base + 4}));
  // "é" is not a piece: bytes C3 A9 via <0xNN>; the leading "▁" is a piece of its own.
  EXPECT_EQ(tok->encode("\xC3\xA9", false), (std::vector<int32_t>{base + 9, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(tok->decode(tok->encode("h\xC3\xA9llo w\xC3\xB6rld", true)), "h\xC3\xA9llo w\xC3\xB6rld");
  EXPECT_EQ(tok->token_bytes(3 + '\n'), "\n");
  EXPECT_EQ(tok->token_bytes(base), " h");
  EXPECT_EQ(tok->token_bytes(1), "");
  EXPECT_EQ(tok->token_bytes(1, true), "<s>");
  EXPECT_TRUE(tok->is_eog(2));
  EXPECT_FALSE(tok->is_eog(1));
}

TEST(SpmTokenizer, ParseSpecialMatchesControlTokens) {
  auto tok = make_spm_tokenizer(test::tiny_spm_vocab({"h", "i", kSp}));
  const int32_t base = 3 + 256;
  EXPECT_EQ(tok->encode("</s>hi", false, true), (std::vector<int32_t>{2, base + 2, base + 0, base + 1}));
  const auto plain = tok->encode("</s>", false, false);
  EXPECT_TRUE(std::find(plain.begin(), plain.end(), 2) == plain.end());
  EXPECT_EQ(tok->decode(plain), "</s>");
}

// Gemma-style user-defined pieces (literal space runs, "\n\n") are matched whole in the raw text, longest
// first, with or without special parsing and inside literal (chat content) ranges; control texts stay text
// unless parse_special.
TEST(SpmTokenizer, UserDefinedPiecesMatchWholeInPlainText) {
  const std::string sp = kSp;
  VocabData d = test::tiny_spm_vocab({sp + "b", "a", "b", sp, "  ", "   ", "\n\n"});
  d.add_space_prefix = false;
  const int32_t base = 3 + 256;
  for (int32_t i : {4, 5, 6}) {
    d.types[size_t(base + i)] = 4;  // user-defined
    d.scores[size_t(base + i)] = -1000;
  }
  auto tok = make_spm_tokenizer(std::move(d));
  const std::string text = "a   b\n\n   b";
  const std::vector<int32_t> want = {base + 1, base + 5, base + 2, base + 6, base + 5, base + 2};
  EXPECT_EQ(tok->encode(text, false, false), want);
  EXPECT_EQ(tok->encode(text, false, true), want);
  const TextRange all{0, text.size()};
  EXPECT_EQ(tok->encode(text, false, true, std::span<const TextRange>(&all, 1)), want);
  EXPECT_EQ(tok->encode("a    b", false, false), (std::vector<int32_t>{base + 1, base + 5, base + 0}));  // longest first
  // A single space is no user-defined piece: it stays U+2581 and merges ("▁b").
  EXPECT_EQ(tok->encode("a b", false, false), (std::vector<int32_t>{base + 1, base + 0}));
  // Control pieces are still text without parse_special.
  EXPECT_EQ(tok->encode("</s>", false, true), (std::vector<int32_t>{2}));
  EXPECT_NE(tok->encode("</s>", false, false), (std::vector<int32_t>{2}));
}

TEST(SpmTokenizer, Stories260KOracle) {
  const std::string path = shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(path, "models/stories260K.gguf");
  auto tok = load_tokenizer(GgufFile::open(path));
  EXPECT_EQ(tok->n_vocab(), 512);
  EXPECT_EQ(tok->encode("Once upon a time", false), (std::vector<int32_t>{403, 407, 261, 378}));
  EXPECT_EQ(tok->encode("Zoo", false), (std::vector<int32_t>{410, 469, 347}));
  EXPECT_EQ(tok->encode("Zoo", true).front(), tok->bos());
  EXPECT_TRUE(tok->is_eog(tok->eos()));
  const std::string text_path = shared_file("corpus/tinystories-valid-head.txt");
  TINFER_REQUIRE_FILE(text_path, "corpus/tinystories-valid-head.txt");
  const std::string text = test::corpus_slice(text_path, 0, 20000);
  EXPECT_EQ(tok->decode(tok->encode(text, true)), text);
}

TEST(SpmTokenizer, Llama2VocabTests) {
  const std::string model = shared_file("models/llama2-tokenizer.model");
  const std::string inp = shared_file("vocab-tests/llama-spm.inp");
  const std::string out = shared_file("vocab-tests/llama-spm.out");
  TINFER_REQUIRE_FILE(model, "models/llama2-tokenizer.model");
  TINFER_REQUIRE_FILE(inp, "vocab-tests/llama-spm.inp");
  TINFER_REQUIRE_FILE(out, "vocab-tests/llama-spm.out");
  auto tok = load_sentencepiece_model(model);
  ASSERT_EQ(tok->n_vocab(), 32000);
  const auto cases = split_cases(test::read_file(inp), "\n__ggml_vocab_test__\n");
  const auto lines = split_cases(test::read_file(out), "\n");
  ASSERT_EQ(cases.size(), 46u);
  ASSERT_EQ(lines.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(tok->encode(cases[i], false), parse_ids(lines[i])) << "case " << i << ": '" << cases[i] << "'";
    EXPECT_EQ(tok->decode(tok->encode(cases[i], false)), cases[i]) << "case " << i;
  }
}

TEST(SpmTokenizer, Llama2RoundTripAndSpeed) {
  const std::string model = shared_file("models/llama2-tokenizer.model");
  const std::string wiki = shared_file("corpus/wikitext-2-test.raw");
  TINFER_REQUIRE_FILE(model, "models/llama2-tokenizer.model");
  TINFER_REQUIRE_FILE(wiki, "corpus/wikitext-2-test.raw");
  auto tok = load_sentencepiece_model(model);
  const std::string text = test::corpus_slice(wiki, 0, 100 * 1024);
  const auto t0 = std::chrono::steady_clock::now();
  const auto ids = tok->encode(text, true);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 1.0) << "encoding 100 KB took " << s << " s";
  EXPECT_GT(ids.size(), 10000u);
  EXPECT_EQ(tok->decode(ids), text);
  const std::string jargon = shared_file("corpus/jargon.txt");
  if (!jargon.empty()) {
    const std::string j = test::corpus_slice(jargon, 50000, 30000);
    EXPECT_EQ(tok->decode(tok->encode(j, false)), j);
  }
}

}  // namespace
}  // namespace tinfer
