// llama2.c conversion: stories260K.bin + tok512.bin must give tensors bit-identical to
// stories260K.gguf (compared by name) and the same vocabulary; a synthetic checkpoint with a
// separate classifier pins run.c's weight order; malformed headers/sizes give clear Errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/test_env.h"
#include "tinfer/error.h"
#include "formats/gguf.h"
#include "formats/llama2c.h"

namespace tinfer {
namespace {

std::string temp_path(const std::string& stem) {
  return (std::filesystem::temp_directory_path() / ("tinfer_" + stem + "_" + std::to_string(getpid()))).string();
}

void write_file(const std::string& path, const void* data, size_t n) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), std::streamsize(n));
}

std::string error_of(const std::string& bin, const std::string& tok = "") {
  try {
    llama2c_to_gguf(bin, tok);
  } catch (const Error& e) {
    return e.what();
  }
  return "<converted>";
}

TEST(Llama2c, Stories260KMatchesItsGgufTwin) {
  std::string bin = test::shared_file("models/stories260K.bin");
  std::string tok = test::shared_file("models/tok512.bin");
  std::string twin_path = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(bin, "models/stories260K.bin");
  TINFER_REQUIRE_FILE(tok, "models/tok512.bin");
  TINFER_REQUIRE_FILE(twin_path, "models/stories260K.gguf");

  Llama2cConfig c = read_llama2c_config(bin);
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.seq_len, 512);
  EXPECT_TRUE(c.shared_classifier);

  std::vector<uint8_t> image = llama2c_to_gguf(bin, tok);
  GgufFile g = GgufFile::from_bytes(image.data(), image.size());
  GgufFile twin = GgufFile::open(twin_path);

  ASSERT_EQ(g.tensors().size(), twin.tensors().size());
  for (const GgufTensor& t : twin.tensors()) {
    const GgufTensor* u = g.tensor(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ(u->type, t.type) << t.name;
    EXPECT_EQ(u->shape, t.shape) << t.name;
    ASSERT_EQ(u->bytes, t.bytes) << t.name;
    EXPECT_EQ(0, std::memcmp(u->data, t.data, t.bytes)) << t.name << " differs";
  }
  for (const char* k :
       {"llama.embedding_length", "llama.feed_forward_length", "llama.block_count", "llama.attention.head_count",
        "llama.attention.head_count_kv", "llama.rope.dimension_count", "tokenizer.ggml.bos_token_id",
        "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id"})
    EXPECT_EQ(g.get_int(k), twin.get_int(k)) << k;
  EXPECT_EQ(g.get_string("general.architecture"), "llama");
  EXPECT_EQ(g.get_int("llama.context_length"), 512);  // from the .bin header (the twin says 2048)
  EXPECT_FLOAT_EQ(float(*g.get_float("llama.attention.layer_norm_rms_epsilon")),
                  float(*twin.get_float("llama.attention.layer_norm_rms_epsilon")));
  EXPECT_EQ(g.get_float("llama.rope.freq_base"), 10000.0);
  EXPECT_EQ(g.get_string("tokenizer.ggml.model"), twin.get_string("tokenizer.ggml.model"));
  EXPECT_EQ(g.get_string_array("tokenizer.ggml.tokens"), twin.get_string_array("tokenizer.ggml.tokens"));
  EXPECT_EQ(g.get_float_array("tokenizer.ggml.scores"), twin.get_float_array("tokenizer.ggml.scores"));
  EXPECT_EQ(g.get_int_array("tokenizer.ggml.token_type"), twin.get_int_array("tokenizer.ggml.token_type"));

  // Without a tokenizer the image has weights and llama.* only.
  std::vector<uint8_t> bare = llama2c_to_gguf(bin);
  GgufFile b = GgufFile::from_bytes(bare.data(), bare.size());
  EXPECT_EQ(b.find("tokenizer.ggml.tokens"), nullptr);
  EXPECT_EQ(b.tensors().size(), twin.tensors().size());
}

// A tiny checkpoint whose i-th float is i: each tensor's first value pins where run.c's order puts it.
TEST(Llama2c, SyntheticSeparateClassifierFollowsRunCOrder) {
  const int32_t dim = 8, hidden = 12, L = 2, H = 2, KV = 1, V = 10, S = 4, hs = dim / H, kv_dim = KV * hs;
  std::vector<int32_t> header = {dim, hidden, L, H, KV, -V, S};  // negative vocab: separate wcls
  const int64_t n = int64_t(V) * dim + L * (2 * dim + 2 * dim * dim + 2 * dim * kv_dim + 3 * dim * hidden) + dim +
                    int64_t(S) * hs + int64_t(V) * dim;
  std::vector<uint8_t> file(28 + n * 4);
  std::memcpy(file.data(), header.data(), 28);
  for (int64_t i = 0; i < n; ++i) {
    float x = float(i);
    std::memcpy(file.data() + 28 + i * 4, &x, 4);
  }
  std::string path = temp_path("synthetic.bin");
  write_file(path, file.data(), file.size());
  std::vector<uint8_t> image = llama2c_to_gguf(path);
  GgufFile g = GgufFile::from_bytes(image.data(), image.size());
  auto first = [&](const std::string& name) {
    const GgufTensor* t = g.tensor(name);
    return t ? int64_t(reinterpret_cast<const float*>(t->data)[0]) : -1;
  };
  int64_t at = 0;
  auto expect_at = [&](const std::string& name, int64_t per_layer_floats, bool layered) {
    for (int l = 0; l < (layered ? L : 1); ++l) {
      std::string full = layered ? "blk." + std::to_string(l) + "." + name : name;
      EXPECT_EQ(first(full), at + l * per_layer_floats) << full;
    }
    at += (layered ? L : 1) * per_layer_floats;
  };
  expect_at("token_embd.weight", int64_t(V) * dim, false);
  expect_at("attn_norm.weight", dim, true);
  expect_at("attn_q.weight", dim * dim, true);
  expect_at("attn_k.weight", dim * kv_dim, true);
  expect_at("attn_v.weight", dim * kv_dim, true);
  expect_at("attn_output.weight", dim * dim, true);
  expect_at("ffn_norm.weight", dim, true);
  expect_at("ffn_gate.weight", dim * hidden, true);
  expect_at("ffn_down.weight", dim * hidden, true);
  expect_at("ffn_up.weight", dim * hidden, true);
  expect_at("output_norm.weight", dim, false);
  at += int64_t(S) * hs;  // freq_cis tables are skipped
  expect_at("output.weight", int64_t(V) * dim, false);
  EXPECT_EQ(at, n);
  EXPECT_EQ(g.tensor("blk.1.ffn_down.weight")->shape, (std::vector<int64_t>{hidden, dim}));
  EXPECT_EQ(g.tensor("blk.0.attn_k.weight")->shape, (std::vector<int64_t>{dim, kv_dim}));

  // Truncated by one float, or one float too long: the size check names both numbers.
  write_file(path, file.data(), file.size() - 4);
  EXPECT_NE(error_of(path).find("does not match the " + std::to_string(file.size()) + " bytes"), std::string::npos)
      << error_of(path);
  // Header problems.
  auto with_header = [&](std::vector<int32_t> h) {
    std::vector<uint8_t> f = file;
    std::memcpy(f.data(), h.data(), 28);
    write_file(path, f.data(), f.size());
    return error_of(path);
  };
  EXPECT_NE(with_header({0, hidden, L, H, KV, V, S}).find("must be positive"), std::string::npos);
  EXPECT_NE(with_header({dim, hidden, L, 3, KV, V, S}).find("not a multiple of the head count"), std::string::npos);
  EXPECT_NE(with_header({dim, hidden, L, H, 3, V, S}).find("KV head count"), std::string::npos);
  EXPECT_NE(with_header({dim, hidden, L, H, KV, INT32_MIN, S}).find("positive"), std::string::npos);
  EXPECT_NE(with_header({1 << 30, 1 << 30, 1 << 30, 1, 1, V, S}).find("implausibly large"), std::string::npos);
  write_file(path, file.data(), 10);
  EXPECT_NE(error_of(path).find("shorter than the 28-byte header"), std::string::npos);
  std::filesystem::remove(path);
  EXPECT_NE(error_of(path).find("cannot open"), std::string::npos);
}

TEST(Llama2c, BadTokenizerIsAnError) {
  std::string bin = test::shared_file("models/stories260K.bin");
  std::string tok = test::shared_file("models/tok512.bin");
  TINFER_REQUIRE_FILE(bin, "models/stories260K.bin");
  TINFER_REQUIRE_FILE(tok, "models/tok512.bin");
  std::ifstream in(tok, std::ios::binary);
  std::vector<char> t((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string path = temp_path("tok.bin");
  for (size_t cut : {size_t(0), size_t(3), size_t(100), t.size() - 1}) {
    write_file(path, t.data(), cut);
    EXPECT_NE(error_of(bin, path).find("truncated"), std::string::npos) << cut << ": " << error_of(bin, path);
  }
  std::vector<char> longer = t;
  longer.push_back('x');
  write_file(path, longer.data(), longer.size());
  EXPECT_NE(error_of(bin, path).find("trailing bytes"), std::string::npos);
  std::vector<char> bad_len = t;
  int32_t huge = 1 << 30;
  std::memcpy(bad_len.data() + 8, &huge, 4);  // first token's length
  write_file(path, bad_len.data(), bad_len.size());
  EXPECT_NE(error_of(bin, path).find("out of range"), std::string::npos);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tinfer
