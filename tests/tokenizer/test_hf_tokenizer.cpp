// tokenizer.json -> VocabData (text/tokenizer/hf_tokenizer.h). Parity: four tokenizers trained by the Python
// `tokenizers` package (byte-level BPE with the Llama 3, Qwen 2 and GPT-2 pre-tokenizers; SentencePiece-style BPE
// with byte fallback) encode corpus lines and adversarial strings (whitespace runs, digits, emoji, special-token
// look-alikes) exactly as HF does (fixtures: scripts/gen_hf_tokenizer_fixtures.py). Then the reader's choices:
// pre names, token types, special ids from tokenizer_config / config / generation_config (eos lists end generation),
// chat templates (string or named list), and the refusals (unknown regex, a Unigram NFKC normalizer; test_unigram.cpp has
// the Unigram ones).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tinfer/error.h"
#include "text/tokenizer/hf_tokenizer.h"
#include "text/tokenizer/vocab.h"

namespace tinfer {
namespace {

using nlohmann::json;

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(bool(f)) << path;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const std::string kDir = std::string(TINFER_TOKENIZER_TEST_DATA) + "/hf/";

TEST(HfTokenizer, EncodesLikeHuggingFaceTokenizers) {
  const json expected = json::parse(read(kDir + "expected.json"));
  const auto texts = expected["texts"].get<std::vector<std::string>>();
  ASSERT_GT(texts.size(), 100u);
  const std::pair<const char*, const char*> kinds[] = {
      {"llama3", "llama-bpe"}, {"qwen2", "qwen2"}, {"gpt2", "gpt-2"}, {"spm_bpe", "default"}};
  for (const auto& [name, pre] : kinds) {
    SCOPED_TRACE(name);
    const HfVocab v = vocab_from_hf({read(kDir + name + ".tokenizer.json"), "", "", ""});
    EXPECT_EQ(v.vocab.pre, pre);
    const auto tok = make_tokenizer(v.vocab);
    const auto& want = expected["encodings"][name];
    int bad = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
      const auto got = tok->encode(texts[i], false, true);
      if (got != want[i].get<std::vector<int32_t>>() && ++bad <= 3) {
        ADD_FAILURE() << "text " << i << " " << json(texts[i]).dump() << "\n got " << json(got).dump() << "\nwant "
                      << want[i].dump();
      }
    }
    EXPECT_EQ(bad, 0) << "of " << texts.size();
  }
}

// A small byte-level tokenizer.json to vary field by field.
json tiny_byte_level() {
  return json::parse(R"({
    "added_tokens": [{"id": 5, "content": "<|eot|>", "special": true}, {"id": 6, "content": "USER", "special": false},
                     {"id": 7, "content": "<|end|>", "special": true}],
    "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "post_processor": null,
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġab": 4}, "merges": ["a b", ["Ġ", "ab"]]}
  })");
}

TEST(HfTokenizer, TypesSpecialIdsAndTemplates) {
  const json cfg = {{"eos_token", {{"content", "<|eot|>"}}}, {"bos_token", nullptr}, {"add_bos_token", false},
                    {"chat_template", json::array({{{"name", "default"}, {"template", "{{ x }}"}},
                                                   {{"name", "tool_use"}, {"template", "{{ y }}"}}})}};
  const json gen = {{"eos_token_id", {5, 7}}};
  const HfVocab v = vocab_from_hf({tiny_byte_level().dump(), cfg.dump(), gen.dump(), R"({"bos_token_id": 0})"}, 10);
  const VocabData& d = v.vocab;
  EXPECT_EQ(d.model, "gpt2");
  EXPECT_EQ(d.pre, "gpt-2");
  ASSERT_EQ(d.tokens.size(), 10u);  // padded to config.json's vocab_size
  EXPECT_EQ(d.tokens[9], "[PAD9]");
  EXPECT_EQ(d.types[9], int32_t(TokenAttr::unused));
  EXPECT_EQ(d.types[5], int32_t(TokenAttr::control));
  EXPECT_EQ(d.types[6], int32_t(TokenAttr::user_defined));
  EXPECT_EQ(d.types[2], int32_t(TokenAttr::normal));
  EXPECT_EQ(d.merges, (std::vector<std::string>{"a b", "Ġ ab"}));
  EXPECT_EQ(d.eos, 5);
  EXPECT_EQ(d.bos, 0);  // from config.json
  EXPECT_EQ(d.eog_ids, (std::vector<int32_t>{7}));
  EXPECT_FALSE(d.add_bos);
  EXPECT_EQ(v.chat_template, "{{ x }}");
  ASSERT_EQ(v.named_templates.size(), 1u);
  EXPECT_EQ(v.named_templates[0].first, "tool_use");
  const auto tok = make_tokenizer(d);
  EXPECT_TRUE(tok->is_eog(7));
  EXPECT_EQ(tok->encode(" ab<|eot|>", false, true), (std::vector<int32_t>{4, 5}));
}

std::string refusal(const json& tj) {
  try {
    vocab_from_hf({tj.dump(), "", "", ""});
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

// Unicode normalizers (Qwen's NFC, NFKC) are applied before tokenizing: the fixtures with one set encode text whose
// normal form differs exactly as the `tokenizers` package does (scripts/gen_hf_normalizer_vectors.py), for
// byte-level BPE, SentencePiece-style BPE and Unigram (GGUF files carry it as tinfer.tokenizer.normalizer).
TEST(HfTokenizer, UnicodeNormalizersMatchTheTokenizersPackage) {
  const json cases = json::parse(read(kDir + "normalizer_expected.json"));
  ASSERT_GE(cases.size(), 16u);
  int changed = 0;
  for (const json& c : cases) {
    json tj = json::parse(read(kDir + c["fixture"].get<std::string>() + ".tokenizer.json"));
    const json form = {{"type", c["normalizer"]}};
    if (tj["normalizer"].is_null()) tj["normalizer"] = form;
    else if (tj["normalizer"]["type"] == "Sequence") tj["normalizer"]["normalizers"].insert(tj["normalizer"]["normalizers"].begin(), form);
    else tj["normalizer"] = {{"type", "Sequence"}, {"normalizers", {form, tj["normalizer"]}}};
    const HfVocab v = vocab_from_hf({tj.dump(), "", "", ""});
    EXPECT_EQ(v.vocab.normalizer, c["normalizer"] == "NFC" ? "nfc" : "nfkc");
    const std::string text = c["text"].get<std::string>();
    const auto tok = make_tokenizer(v.vocab);
    EXPECT_EQ(tok->encode(text, false), c["ids"].get<std::vector<int32_t>>()) << c["fixture"] << " " << text;
    VocabData plain = v.vocab;
    plain.normalizer.clear();
    changed += make_tokenizer(plain)->encode(text, false) != tok->encode(text, false);
  }
  EXPECT_GE(changed, 10);  // the normalizer is what makes these encodings right
}

TEST(HfTokenizer, RefusesWhatItCannotRun) {
  json j = tiny_byte_level();
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"}, {"pattern", {{"Regex", "\\p{L}+|\\d{1,4}"}}}, {"behavior", "Isolated"}},
                          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  EXPECT_NE(refusal(j).find("unknown pre-tokenizer regex \"\\\\p{L}+|\\\\d{1,4}\""), std::string::npos) << refusal(j);
  json u = {{"model", {{"type", "Unigram"}, {"vocab", json::array({{"a", -1.0}})}}},
            {"normalizer", {{"type", "Lowercase"}}},
            {"pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"}}}};
  EXPECT_NE(refusal(u).find("normalizer 'Lowercase' is not supported for Unigram"), std::string::npos) << refusal(u);
  json l = tiny_byte_level();
  l["normalizer"] = {{"type", "Lowercase"}};
  EXPECT_NE(refusal(l).find("normalizer 'Lowercase' is not supported for byte-level BPE"), std::string::npos) << refusal(l);
  json w = {{"model", {{"type", "WordPiece"}, {"vocab", json::object()}}}};
  EXPECT_NE(refusal(w).find("'WordPiece' is not supported"), std::string::npos);
}

}  // namespace
}  // namespace tinfer
