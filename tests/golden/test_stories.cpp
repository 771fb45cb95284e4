// stories260K (../shared/models): the facts measured with an independent implementation, as
// listed in ../shared/README.md — greedy text from BOS, tokenization, perplexity, .bin == .gguf.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "common/greedy_text.h"
#include "common/test_env.h"
#include "core/thread_pool.h"
#include "engine/generate.h"
#include "engine/text_stream.h"
#include "golden/golden_util.h"
#include "backend/cpu/cpu_forward.h"
#include "backend/cpu/reference_forward.h"

namespace tinfer {
namespace {

const char* kGreedy =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw "
    "a big, red ball. She wanted to play with it, but it was too high.";


TEST(Stories260K, GreedyFromBosReproducesReferenceText) {
  std::string path = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  std::string text = test::greedy_text(*model, 80);
  ASSERT_GE(text.size(), std::string(kGreedy).size()) << text;
  EXPECT_EQ(text.substr(0, std::string(kGreedy).size()), kGreedy);
}

TEST(Stories260K, LegacyBinGivesTheSameModel) {
  std::string gguf = test::shared_file("models/stories260K.gguf"), bin = test::shared_file("models/stories260K.bin");
  std::string tok = test::shared_file("models/tok512.bin");
  TINFER_REQUIRE_FILE(bin, "models/stories260K.bin");
  TINFER_REQUIRE_FILE(tok, "models/tok512.bin");
  auto a = Model::load(gguf);
  ModelLoadOptions opts;
  opts.tokenizer_path = tok;
  auto b = Model::load(bin, opts);
  EXPECT_EQ(test::greedy_text(*a, 40), test::greedy_text(*b, 40));
  EXPECT_EQ(a->config().n_layers, b->config().n_layers);
  EXPECT_EQ(a->config().n_kv_heads, b->config().n_kv_heads);
}

TEST(Stories260K, Tokenization) {
  std::string path = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  EXPECT_EQ(model->tokenizer().encode("Zoo", false), (std::vector<int32_t>{410, 469, 347}));
  EXPECT_EQ(model->tokenizer().encode("Once upon a time", false), (std::vector<int32_t>{403, 407, 261, 378}));
}

TEST(Stories260K, FastMatchesReferenceLogits) {
  std::string path = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  auto tokens = model->tokenizer().encode("Once upon a time, there was a cat", true);
  auto want = ReferenceForward(*model).logits(tokens);
  ThreadPool pool(2);
  CpuForward fwd(*model, pool);
  Session s(fwd, 64);
  std::vector<float> got;
  s.feed_all_logits(tokens, got);
  const int64_t v = model->config().n_vocab;
  for (size_t i = 0; i < tokens.size(); ++i)
    for (int64_t j = 0; j < v; ++j) ASSERT_NEAR(got[i * v + j], want[i][j], 2e-4) << "pos " << i << " token " << j;
}

// The CLI's perplexity on the first 4,000 bytes of the TinyStories head, 511 targets: 1.3112 nats.
TEST(Stories260K, PerplexityMatchesIndependentMeasurement) {
  std::string model = test::shared_file("models/stories260K.gguf");
  std::string corpus = test::shared_file("corpus/tinystories-valid-head.txt");
  TINFER_REQUIRE_FILE(model, "models/stories260K.gguf");
  TINFER_REQUIRE_FILE(corpus, "corpus/tinystories-valid-head.txt");
  auto r = test::run_command(test::tinfer_bin() + " ppl -m " + model + " -f " + corpus +
                             " --max-bytes 4000 --max-tokens 511 2>/dev/null");
  ASSERT_EQ(r.status, 0) << r.out;
  auto pos = r.out.rfind("nll=");
  ASSERT_NE(pos, std::string::npos) << r.out;
  double nll = std::stod(r.out.substr(pos + 4));
  EXPECT_NEAR(nll, 1.3112, 0.001) << r.out;
  EXPECT_NE(r.out.find("tokens=511"), std::string::npos) << r.out;
}

TEST(Stories260K, WikitextPerplexity) {
  std::string model = test::shared_file("models/stories260K.gguf");
  std::string corpus = test::shared_file("corpus/wikitext-2-test.raw");
  TINFER_REQUIRE_FILE(model, "models/stories260K.gguf");
  TINFER_REQUIRE_FILE(corpus, "corpus/wikitext-2-test.raw");
  // The independent measurement read the corpus as text (universal newlines: CRLF -> LF), then
  // took its first 3,000 characters; give the CLI exactly that text.
  std::ifstream in(corpus, std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), {}), text;
  for (size_t i = 0; i < raw.size() && text.size() < 3000; ++i)
    if (!(raw[i] == '\r' && i + 1 < raw.size() && raw[i + 1] == '\n')) text += raw[i];
  std::string path = ::testing::TempDir() + "wikitext-3000.txt";
  std::ofstream(path, std::ios::binary) << text;
  auto r = test::run_command(test::tinfer_bin() + " ppl -m " + model + " -f " + path + " --max-tokens 511 2>/dev/null");
  ASSERT_EQ(r.status, 0) << r.out;
  double nll = std::stod(r.out.substr(r.out.rfind("nll=") + 4));
  EXPECT_NEAR(nll, 4.7231, 0.002) << r.out;
}

}  // namespace
}  // namespace tinfer
