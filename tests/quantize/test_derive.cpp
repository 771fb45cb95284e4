// tinfer derive's library side: the layer-list grammar, and derive_model on stories260K: every kept
// tensor byte-identical to its source layer, the renumbering, block_count and provenance keys, the
// tokenizer untouched, "all" reproducing the source model's greedy text, a subset loading and generating,
// and no file left behind on a bad output path.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "common/greedy_text.h"
#include "common/temp_dir.h"
#include "common/test_env.h"
#include "tinfer/error.h"
#include "formats/gguf.h"
#include "model/model.h"
#include "quantize/derive_model.h"

namespace tinfer {
namespace {

namespace fs = std::filesystem;

std::string stories() { return test::shared_file("models/stories260K.gguf"); }

struct TempDir : test::TempDir {
  TempDir() : test::TempDir("tinfer_derive") {}
};

TEST(DeriveLayers, ParsesRangesListsAndAll) {
  EXPECT_EQ(parse_layer_list("0-3", 22), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(parse_layer_list("0-1,5,20-21", 22), (std::vector<int>{0, 1, 5, 20, 21}));
  EXPECT_EQ(parse_layer_list("7", 22), (std::vector<int>{7}));
  EXPECT_EQ(parse_layer_list("all", 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(format_layer_list({0, 1, 2, 3, 7, 9, 10}), "0-3,7,9-10");
  EXPECT_EQ(format_layer_list(parse_layer_list("0-1,5,20-21", 22)), "0-1,5,20-21");
}

TEST(DeriveLayers, RejectsBadListsWithTheReason) {
  auto msg = [](const std::string& spec) {
    try {
      parse_layer_list(spec, 22);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(msg("").find("empty"), std::string::npos);
  EXPECT_NE(msg("22").find("out of range"), std::string::npos);
  EXPECT_NE(msg("0-99999999999").find("out of range"), std::string::npos);
  EXPECT_NE(msg("5-2").find("descending"), std::string::npos);
  EXPECT_NE(msg("3,3").find("ascending and distinct"), std::string::npos);
  EXPECT_NE(msg("4,1").find("ascending and distinct"), std::string::npos);
  EXPECT_NE(msg("a").find("not a layer index"), std::string::npos);
  EXPECT_NE(msg("1-").find("not a layer index"), std::string::npos);
  EXPECT_NE(msg("1,,2").find("not a layer index"), std::string::npos);
  EXPECT_NE(msg("-1").find("not a layer index"), std::string::npos);
}

TEST(DeriveModel, KeepsLayerBytesRenumbersAndKeepsTheTokenizer) {
  const std::string src_path = stories();
  TINFER_REQUIRE_FILE(src_path, "models/stories260K.gguf");
  const GgufFile src = GgufFile::open(src_path);
  const int n = int(*src.get_int("llama.block_count"));
  ASSERT_GE(n, 3);
  TempDir dir;
  const std::string out = dir.file("d.gguf");
  const DeriveReport r = derive_model(src, {0, 2}, out);
  EXPECT_EQ(r.src_layers, n);
  EXPECT_EQ(r.kept_layers, 2);
  const GgufFile d = GgufFile::open(out);
  EXPECT_EQ(*d.get_int("llama.block_count"), 2);
  EXPECT_EQ(*d.get_string("tinfer.derive.layers"), "0,2");
  EXPECT_EQ(*d.get_int("tinfer.derive.source_block_count"), n);
  EXPECT_EQ(r.bytes_out, fs::file_size(out));
  // Tokenizer and every other key as in the source.
  EXPECT_EQ(d.get_string_array("tokenizer.ggml.tokens"), src.get_string_array("tokenizer.ggml.tokens"));
  EXPECT_EQ(d.get_string("tokenizer.ggml.model"), src.get_string("tokenizer.ggml.model"));
  EXPECT_EQ(d.metadata().size(), src.metadata().size() + 2);
  // Tensors: non-layer ones as they were; blk.0 <- blk.0, blk.1 <- blk.2; blk.1 and blk.3+ gone.
  int64_t layer_tensors_src = 0;
  for (const GgufTensor& t : src.tensors()) {
    std::string want = t.name;
    if (t.name.rfind("blk.", 0) == 0) {
      ++layer_tensors_src;
      if (t.name.rfind("blk.0.", 0) == 0) want = t.name;
      else if (t.name.rfind("blk.2.", 0) == 0) want = "blk.1." + t.name.substr(6);
      else continue;
    }
    const GgufTensor* o = d.tensor(want);
    ASSERT_NE(o, nullptr) << want;
    EXPECT_EQ(o->type, t.type);
    EXPECT_EQ(o->shape, t.shape);
    ASSERT_EQ(o->bytes, t.bytes);
    EXPECT_EQ(std::memcmp(o->data, t.data, t.bytes), 0) << want << " <- " << t.name;
  }
  EXPECT_EQ(d.tensor("blk.2.attn_q.weight"), nullptr);
  EXPECT_EQ(r.dropped_tensors, layer_tensors_src - layer_tensors_src * 2 / n);
  EXPECT_EQ(r.tensors, int64_t(src.tensors().size()) - r.dropped_tensors);
  // It is a model: loads and generates text.
  const auto m = Model::load(out);
  EXPECT_EQ(m->config().n_layers, 2);
  EXPECT_FALSE(test::greedy_text(*m, 16).empty());
}

TEST(DeriveModel, AllLayersReproducesTheSourceModel) {
  const std::string src_path = stories();
  TINFER_REQUIRE_FILE(src_path, "models/stories260K.gguf");
  const GgufFile src = GgufFile::open(src_path);
  TempDir dir;
  const std::string out = dir.file("all.gguf");
  derive_model(src, parse_layer_list("all", int(*src.get_int("llama.block_count"))), out);
  const auto a = Model::load(src_path), b = Model::load(out);
  EXPECT_EQ(test::greedy_text(*a, 48), test::greedy_text(*b, 48));
}

TEST(DeriveModel, BadOutputPathLeavesNothing) {
  const std::string src_path = stories();
  TINFER_REQUIRE_FILE(src_path, "models/stories260K.gguf");
  const GgufFile src = GgufFile::open(src_path);
  TempDir dir;
  EXPECT_THROW(derive_model(src, {0}, dir.file("no/such/dir/x.gguf")), Error);
  EXPECT_THROW(derive_model(src, {}, dir.file("x.gguf")), Error);
  EXPECT_THROW(derive_model(src, {1, 0}, dir.file("x.gguf")), Error);
  EXPECT_TRUE(fs::is_empty(dir.path));
}

}  // namespace
}  // namespace tinfer
