// Qwen2.5-Coder-0.5B-Instruct vocabulary (151,936 byte-level BPE tokens, the qwen2 pre-tokenizer, added tokens
// for the chat and tool-call markers) from the real GGUF, against llama.cpp's encoding of the same file:
// tests/data/qwen2.5-coder/tokenizer_vectors.json, written by scripts/gen_qwen_coder_vectors.py with
// `llama-tokenize --ids` (llama.cpp from llama-cpp-python 0.3.36's vendor/llama.cpp) on adversarial strings (code,
// whitespace, digits, unicode, Chinese, special and tool tokens), ../shared/vocab-tests/llama-spm.inp and corpus
// slices. The model comes from scripts/setup.sh (models/).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/test_env.h"
#include "formats/gguf.h"
#include "text/tokenizer/tokenizer.h"

namespace tinfer {
namespace {

std::string qwen_model() {
  if (const char* e = std::getenv("TINFER_QWEN_CODER_MODEL"); e && *e) return e;
  return std::string(TINFER_SOURCE_DIR) + "/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
}

std::string ids_str(const std::vector<int32_t>& ids) {
  std::ostringstream s;
  for (size_t i = 0; i < ids.size(); ++i) s << (i ? " " : "") << ids[i];
  return s.str();
}

class QwenCoderVocab : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = qwen_model();
    if (std::filesystem::exists(path)) tok_ = load_tokenizer(GgufFile::open(path)).release();
  }
  static void TearDownTestSuite() {
    delete tok_;
    tok_ = nullptr;
  }
  void SetUp() override {
    if (!tok_) GTEST_SKIP() << "fixture absent: " << qwen_model() << " (run scripts/setup.sh)";
  }
  static const Tokenizer* tok_;
};
const Tokenizer* QwenCoderVocab::tok_ = nullptr;

TEST_F(QwenCoderVocab, MetadataAndSpecials) {
  EXPECT_EQ(tok_->n_vocab(), 151936);
  EXPECT_EQ(tok_->bos(), 151643);  // <|endoftext|>, but the file says add_bos_token = false
  EXPECT_EQ(tok_->eos(), 151645);  // <|im_end|>
  EXPECT_FALSE(tok_->add_bos_by_default());
  EXPECT_FALSE(tok_->adds_space_prefix());
  EXPECT_TRUE(tok_->is_eog(151645));
  EXPECT_TRUE(tok_->is_eog(151643));
  EXPECT_EQ(tok_->token_id("<|im_start|>"), 151644);
  EXPECT_EQ(tok_->token_id("<tool_call>"), 151657);
  EXPECT_EQ(tok_->token_id("</tool_call>"), 151658);
  EXPECT_FALSE(tok_->is_eog(151657));
}

// Every case: plain encoding (control-token texts stay text) and with special parsing, both without BOS.
TEST_F(QwenCoderVocab, MatchesLlamaCpp) {
  const std::string path = std::string(TINFER_SOURCE_DIR) + "/tests/data/qwen2.5-coder/tokenizer_vectors.json";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "missing " << path;
  const auto doc = nlohmann::json::parse(in);
  int n = 0, bad = 0;
  for (const auto& c : doc.at("cases")) {
    const std::string text = c.at("text").get<std::string>();
    const auto want = c.at("ids").get<std::vector<int32_t>>();
    const auto want_special = c.at("ids_special").get<std::vector<int32_t>>();
    const auto got = tok_->encode(text, false, false);
    const auto got_special = tok_->encode(text, false, true);
    const std::string what = c.at("source").get<std::string>() + " " + nlohmann::json(text).dump().substr(0, 160);
    if (got != want) {
      ++bad;
      ADD_FAILURE() << "plain encoding differs for " << what << "\n  tinfer:    " << ids_str(got)
                    << "\n  llama.cpp: " << ids_str(want);
    }
    if (got_special != want_special) {
      ++bad;
      ADD_FAILURE() << "encoding with specials differs for " << what << "\n  tinfer:    " << ids_str(got_special)
                    << "\n  llama.cpp: " << ids_str(want_special);
    }
    EXPECT_EQ(tok_->decode(want_special, true), text) << what;  // byte-level BPE: lossless
    ++n;
  }
  EXPECT_GE(n, 120);
  EXPECT_EQ(bad, 0) << bad << " mismatched encodings of " << n << " cases";
}

// Whole corpus files (wikitext-2 test: 298,938 ids; the Jargon File: 415,000): the same ids as llama-tokenize, by
// count and FNV-1a 64 hash of the ids (tests/data/qwen2.5-coder/corpus_tokens.json).
TEST_F(QwenCoderVocab, WholeCorpusFilesMatchLlamaCpp) {
  std::ifstream in(std::string(TINFER_SOURCE_DIR) + "/tests/data/qwen2.5-coder/corpus_tokens.json");
  ASSERT_TRUE(in.good());
  const auto doc = nlohmann::json::parse(in);
  int checked = 0;
  for (const auto& c : doc.at("cases")) {
    const std::string rel = c.at("source").get<std::string>(), path = test::shared_file(rel);
    if (path.empty()) {
      std::printf("[ skipped %s: absent (set TINFER_SHARED) ]\n", rel.c_str());
      continue;
    }
    std::ifstream f(path, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const auto ids = tok_->encode(text, false, false);
    uint64_t h = 0xcbf29ce484222325ull;
    for (int32_t id : ids)
      for (int b = 0; b < 4; ++b) h = (h ^ ((uint32_t(id) >> (8 * b)) & 0xFF)) * 0x100000001b3ull;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
    EXPECT_EQ(int64_t(ids.size()), c.at("n_ids").get<int64_t>()) << rel;
    EXPECT_EQ(std::string(hex), c.at("fnv1a64").get<std::string>()) << rel;
    const auto first = c.at("first_ids").get<std::vector<int32_t>>();
    EXPECT_EQ(std::vector<int32_t>(ids.begin(), ids.begin() + std::min(ids.size(), first.size())), first) << rel;
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "fixture absent: the shared corpus files (set TINFER_SHARED)";
}

}  // namespace
}  // namespace tinfer
