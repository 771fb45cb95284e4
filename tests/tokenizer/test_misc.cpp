// Utf8Stream on split multi-byte characters, chat templates (exact strings), and errors from bad
// tokenizer metadata (in code, through GGUF bytes, and malformed SentencePiece protobufs).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "common/test_env.h"
#include "tinfer/error.h"
#include "formats/gguf.h"
#include "text/chat/chat_template.h"
#include "tokenizer/tokenizer_test_util.h"

namespace tinfer {
namespace {

TEST(Utf8Stream, EmitsOnlyCompleteCharacters) {
  Utf8Stream s;
  EXPECT_EQ(s.push("a\xE2"), "a");     // first byte of U+20AC held back
  EXPECT_EQ(s.push("\x82"), "");
  EXPECT_EQ(s.push("\xAC" "b"), "\xE2\x82\xAC" "b");
  EXPECT_EQ(s.push("\xF0\x9F"), "");  // U+1F600 in two halves
  EXPECT_EQ(s.push("\x98\x80"), "\xF0\x9F\x98\x80");
  EXPECT_EQ(s.flush(), "");
}

TEST(Utf8Stream, InvalidBytesBecomeReplacementCharacters) {
  Utf8Stream s;
  EXPECT_EQ(s.push("\x80x"), "\xEF\xBF\xBDx");  // stray continuation byte
  EXPECT_EQ(s.push("\xC3"), "");
  EXPECT_EQ(s.push("y"), "\xEF\xBF\xBDy");      // lead byte not continued
  EXPECT_EQ(s.push("\xE2\x82"), "");
  EXPECT_EQ(s.flush(), "\xEF\xBF\xBD");         // unfinished tail at the end
  EXPECT_EQ(s.flush(), "");
}

TEST(Utf8Stream, ByteAtATimeReassemblesText) {
  const std::string text = "h\xC3\xA9llo \xE4\xB8\x96\xE7\x95\x8C \xF0\x9F\x91\x8D!";
  Utf8Stream s;
  std::string out;
  for (char c : text) out += s.push(std::string_view(&c, 1));
  out += s.flush();
  EXPECT_EQ(out, text);
}

const char* kSmolTemplate =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' "
    "+ message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt "
    "%}{{ '<|im_start|>assistant\n' }}{% endif %}";

TEST(ChatTemplate, SmolLM2InjectsDefaultSystemPrompt) {
  EXPECT_EQ(apply_chat_template(kSmolTemplate, {{"user", "Hi"}}, true),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(apply_chat_template(kSmolTemplate, {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}}, false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n");
  EXPECT_EQ(apply_chat_template(kSmolTemplate, {}, true), "<|im_start|>assistant\n");
}

// The template is rendered as written: no default system turn, and no generation prompt unless the
// template prints one (the old family-recognising renderer appended it regardless).
TEST(ChatTemplate, PlainChatMLHasNoDefaultSystem) {
  const std::string t = "{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n'}}"
                        "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
  EXPECT_EQ(apply_chat_template(t, {{"user", "Hi"}}, true), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(apply_chat_template(t, {{"user", "Hi"}}, false), "<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplate, SmolLM2TemplateFromGguf) {
  const std::string path = test::default_model();
  TINFER_REQUIRE_FILE(path, "default model SmolLM2-135M-Instruct.Q4_1.gguf");
  const auto tmpl = GgufFile::open(path).get_string("tokenizer.chat_template");
  ASSERT_TRUE(tmpl.has_value());
  EXPECT_EQ(apply_chat_template(*tmpl, {{"user", "Hi"}}, true),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

// Llama-2's own template (a real Jinja template now, not a recognised family) and the plain
// "role: content" fallback for a model without one.
TEST(ChatTemplate, Llama2AndFallback) {
  const std::string llama2 = test::read_file(std::string(TINFER_SOURCE_DIR) + "/tests/data/chat_templates/templates/llama-2.jinja");
  ChatOptions o;
  o.bos_token = "<s>", o.eos_token = "</s>";
  EXPECT_EQ(ChatTemplate(llama2).render({{"system", "S"}, {"user", "U1"}, {"assistant", "A1"}, {"user", "U2"}}, o).text,
            "<s>[INST] <<SYS>>\nS\n<</SYS>>\n\nU1 [/INST] A1 </s><s>[INST] U2 [/INST]");
  EXPECT_EQ(apply_chat_template("", {{"user", "Hi"}}, true), "user: Hi\nassistant:");
}

// A special-token text overlapping a literal range is plain text; elsewhere it is still special.
TEST(Tokenizer, LiteralRangesAreNeverSpecial) {
  auto tok = make_bpe_tokenizer(test::tiny_bpe_vocab({"a b"}));
  const int32_t eot = tok->token_id("<|endoftext|>");
  ASSERT_GE(eot, 0);
  const std::string text = "a<|endoftext|>b<|endoftext|>";  // specials at [1, 14) and [15, 28)
  auto has_eot = [&](std::vector<TextRange> lit) {
    auto ids = tok->encode(text, false, true, lit);
    return std::count(ids.begin(), ids.end(), eot);
  };
  EXPECT_EQ(has_eot({}), 2);
  EXPECT_EQ(has_eot({{1, 14}}), 1);   // the first is literal
  EXPECT_EQ(has_eot({{0, 2}}), 1);    // a literal range holding only its first byte
  EXPECT_EQ(has_eot({{13, 16}}), 0);  // one range touching both
  EXPECT_EQ(has_eot({{14, 15}}), 2);  // the "b" between them
  EXPECT_EQ(tok->encode(text, false, true, std::vector<TextRange>{{1, 14}}),
            [&] {
              auto ids = tok->encode("a<|endoftext|>b", false, false);
              ids.push_back(eot);
              return ids;
            }());
}

// The byte bound is a floor of the token count: B bytes are never fewer than B / bound tokens, for any text or for
// the text it was asked about; a text of one repeated byte is bounded by that byte's own longest token.
TEST(Tokenizer, MaxBytesPerTokenBoundsTheTokenCount) {
  std::vector<std::unique_ptr<Tokenizer>> toks;
  toks.push_back(make_bpe_tokenizer(test::tiny_bpe_vocab({"a a", "aa aa", "aaaa aaaa", "h e", "l l", "he ll", "hell o"})));
  toks.push_back(make_spm_tokenizer(test::tiny_spm_vocab({"aaaaaaaa", "aaaa", "aa", "hello", "\xE2\x96\x81hello"})));
  const std::string texts[] = {"aaaaaaaaaaaaaaaaaaaaaaaaa", "hello hello hellohello", "a", "<|endoftext|>x",
                               "\xE2\x96\x81\xE2\x96\x81 z \xC3\xA9"};
  for (const auto& tok : toks) {
    ASSERT_GT(tok->max_bytes_per_token(), 0u);
    for (const std::string& t : texts) {
      const size_t n = tok->encode(t, false, false).size(), b = tok->max_bytes_per_token_in(t);
      EXPECT_GT(b, 0u) << t;
      EXPECT_LE(b, tok->max_bytes_per_token()) << t;
      EXPECT_GE(n * b, t.size()) << t << ": " << n << " tokens, bound " << b;
    }
  }
  EXPECT_EQ(toks[0]->max_bytes_per_token(), 13u);  // "<|endoftext|>"
  EXPECT_EQ(toks[0]->max_bytes_per_token_in(std::string(1000, 'a')), 8u);  // "aaaaaaaa"
  EXPECT_EQ(toks[0]->max_bytes_per_token_in("hello"), 5u);
  EXPECT_EQ(toks[0]->max_bytes_per_token_in("zzzz"), TokenLengths::kMinBytes);
}

void expect_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected an Error mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(TokenizerErrors, BadVocabData) {
  auto d = test::tiny_spm_vocab({"a"});
  d.scores.pop_back();
  expect_error([&] { make_tokenizer(d); }, "scores");
  d = test::tiny_spm_vocab({"a"});
  d.eos = 100000;
  expect_error([&] { make_tokenizer(d); }, "eos_token_id");
  d = test::tiny_spm_vocab({"a"});
  d.types[5] = 42;
  expect_error([&] { make_tokenizer(d); }, "token_type");
  d.model = "wordpiece";
  expect_error([&] { make_tokenizer(d); }, "wordpiece");
  auto b = test::tiny_bpe_vocab({"a b"});
  b.merges.push_back("nospace");
  expect_error([&] { make_tokenizer(b); }, "merges");
  b = test::tiny_bpe_vocab({"a b"});
  b.pre = "mystery";
  expect_error([&] { make_tokenizer(b); }, "mystery");
}

TEST(TokenizerErrors, BadGgufMetadata) {
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "rwkv");
  w.set_string_array("tokenizer.ggml.tokens", {"a", "b"});
  auto bytes = w.to_bytes();
  expect_error([&] { load_tokenizer(GgufFile::from_bytes(bytes.data(), bytes.size())); }, "rwkv");

  GgufWriter v;
  v.set_string("tokenizer.ggml.model", "llama");
  v.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
  v.set_f32_array("tokenizer.ggml.scores", {0, 0, 0});
  v.set_u32("tokenizer.ggml.bos_token_id", 9);
  bytes = v.to_bytes();
  expect_error([&] { load_tokenizer(GgufFile::from_bytes(bytes.data(), bytes.size())); }, "scores has 3");
  expect_error([&] { load_tokenizer(GgufFile::from_bytes(bytes.data(), bytes.size())); }, "bos_token_id = 9");

  GgufWriter none;
  none.set_u32("general.alignment", 32);
  bytes = none.to_bytes();
  expect_error([&] { load_tokenizer(GgufFile::from_bytes(bytes.data(), bytes.size())); }, "tokenizer.ggml.model");
}

TEST(TokenizerErrors, MalformedSentencePieceProtobuf) {
  const uint8_t truncated[] = {0x0A, 0x10, 0x0A, 0x01};  // piece message claims 16 bytes, has 2
  expect_error([&] { parse_sentencepiece_model(truncated, sizeof truncated); }, "past the end");
  const uint8_t group[] = {0x0B};  // wire type 3 (groups) is not supported
  expect_error([&] { parse_sentencepiece_model(group, sizeof group); }, "wire type");
  expect_error([&] { make_spm_tokenizer(parse_sentencepiece_model(nullptr, 0)); }, "empty");
  expect_error([] { load_sentencepiece_model("/nonexistent/tok.model"); }, "cannot open");
}

TEST(SentencePieceModel, Tok512MatchesStoriesGguf) {
  const std::string model = test::shared_file("models/tok512.model");
  const std::string gguf = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(model, "models/tok512.model");
  TINFER_REQUIRE_FILE(gguf, "models/stories260K.gguf");
  auto a = load_sentencepiece_model(model);
  auto b = load_tokenizer(GgufFile::open(gguf));
  ASSERT_EQ(a->n_vocab(), b->n_vocab());
  for (const char* t : {"Once upon a time", "Zoo", "The cat sat on the mat. \xC3\xA9!", "  two  spaces\n"})
    EXPECT_EQ(a->encode(t, true), b->encode(t, true)) << t;
}

}  // namespace
}  // namespace tinfer
