// GGUF round trips: every metadata type and every tensor dtype through writer → reader, hand-made
// v2/v3 headers, file I/O, typed getters, and the stories260K.gguf fixture's facts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "common/test_env.h"
#include "tinfer/error.h"
#include "formats/gguf.h"
#include "model/test_gguf_bytes.h"
#include "quant/type_table.h"

namespace tinfer {
namespace {

GgufValue val(GgufType t, std::variant<int64_t, uint64_t, double, bool, std::string, std::shared_ptr<GgufArray>> v) {
  return GgufValue{t, std::move(v)};
}
GgufValue arr(GgufType et, std::vector<GgufValue> xs) {
  auto a = std::make_shared<GgufArray>();
  a->elem_type = et;
  a->values = std::move(xs);
  return val(GgufType::ARRAY, std::move(a));
}

// Deep equality of two values (arrays compared element by element).
void expect_same(const GgufValue& a, const GgufValue& b, const std::string& key) {
  ASSERT_EQ(a.type, b.type) << key;
  ASSERT_EQ(a.v.index(), b.v.index()) << key;
  if (a.type != GgufType::ARRAY) {
    EXPECT_TRUE(a.v == b.v) << key;
    return;
  }
  const auto& x = *std::get<std::shared_ptr<GgufArray>>(a.v);
  const auto& y = *std::get<std::shared_ptr<GgufArray>>(b.v);
  ASSERT_EQ(x.elem_type, y.elem_type) << key;
  ASSERT_EQ(x.values.size(), y.values.size()) << key;
  for (size_t i = 0; i < x.values.size(); ++i)
    expect_same(x.values[i], y.values[i], key + "[" + std::to_string(i) + "]");
}

const DType kAllTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0, DType::Q4_1,
                           DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                           DType::Q4_K, DType::Q5_K, DType::Q6_K};

TEST(Gguf, RoundTripEveryMetadataTypeAndDtype) {
  GgufWriter w;
  std::vector<std::pair<std::string, GgufValue>> expect = {
      {"t.u8", val(GgufType::UINT8, uint64_t{255})},
      {"t.i8", val(GgufType::INT8, int64_t{-128})},
      {"t.u16", val(GgufType::UINT16, uint64_t{65535})},
      {"t.i16", val(GgufType::INT16, int64_t{-32768})},
      {"t.u32", val(GgufType::UINT32, uint64_t{4294967295u})},
      {"t.i32", val(GgufType::INT32, int64_t{-2147483647 - 1})},
      {"t.u64", val(GgufType::UINT64, uint64_t{18446744073709551615ull})},
      {"t.i64", val(GgufType::INT64, int64_t{-9223372036854775807ll - 1})},
      {"t.f32", val(GgufType::FLOAT32, double{0.1f})},
      {"t.f64", val(GgufType::FLOAT64, 0.1)},
      {"t.bool_t", val(GgufType::BOOL, true)},
      {"t.bool_f", val(GgufType::BOOL, false)},
      {"t.str", val(GgufType::STRING, std::string("h\xC3\xA9llo\0x", 8))},
      {"t.empty_str", val(GgufType::STRING, std::string())},
      {"t.arr_empty", arr(GgufType::INT32, {})},
      {"t.arr_u8", arr(GgufType::UINT8, {val(GgufType::UINT8, uint64_t{1}), val(GgufType::UINT8, uint64_t{2})})},
      {"t.arr_bool", arr(GgufType::BOOL, {val(GgufType::BOOL, true), val(GgufType::BOOL, false)})},
      {"t.arr_f64", arr(GgufType::FLOAT64, {val(GgufType::FLOAT64, -1.5), val(GgufType::FLOAT64, 1e300)})},
      {"t.arr_nested", arr(GgufType::ARRAY, {arr(GgufType::STRING, {val(GgufType::STRING, std::string("a"))}),
                                             arr(GgufType::INT64, {val(GgufType::INT64, int64_t{-7})})})},
  };
  for (const auto& [k, v] : expect) w.set(k, v);
  w.set_u32("s.u32", 7);
  w.set_i32("s.i32", -7);
  w.set_u64("s.u64", 1ull << 40);
  w.set_f32("s.f32", 1e-5f);
  w.set_bool("s.bool", true);
  w.set_string("s.str", "llama");
  w.set_string_array("s.strs", {"<unk>", "\xE2\x96\x81the", ""});
  w.set_f32_array("s.f32s", {0.f, -1.f, 3.5f});
  w.set_i32_array("s.i32s", {1, -2, 3});
  w.set_u32("s.u32", 8);  // replaces in place

  std::mt19937 rng(42);
  std::vector<std::vector<uint8_t>> datas;
  for (DType t : kAllTypes) {
    const TypeTraits& tr = type_traits(t);
    std::vector<int64_t> shape = {tr.block_size * 2, 3};
    std::vector<uint8_t> d(row_bytes(t, shape[0]) * 3);
    for (auto& x : d) x = uint8_t(rng());
    w.add_tensor(std::string("w.") + tr.name, t, shape, d.data(), d.size());
    datas.push_back(d);
  }
  std::vector<float> v1(5, 2.5f);  // a 1-D tensor whose size is not a multiple of the alignment
  w.add_tensor("v1", DType::F32, {5}, v1.data(), 20);
  std::vector<float> v4(2 * 3 * 4 * 5);
  w.add_tensor("v4", DType::F32, {2, 3, 4, 5}, v4.data(), v4.size() * 4);

  std::vector<uint8_t> bytes = w.to_bytes();
  GgufFile f = GgufFile::from_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  ASSERT_EQ(f.metadata().size(), expect.size() + 9);
  for (const auto& [k, v] : expect) {
    ASSERT_NE(f.find(k), nullptr) << k;
    expect_same(*f.find(k), v, k);
  }
  EXPECT_EQ(f.get_int("s.u32"), 8);
  EXPECT_EQ(f.get_int("s.i32"), -7);
  EXPECT_EQ(f.get_int("s.u64"), int64_t(1) << 40);
  EXPECT_EQ(f.get_float("s.f32"), double{1e-5f});
  EXPECT_EQ(f.get_bool("s.bool"), true);
  EXPECT_EQ(f.get_string("s.str"), "llama");
  EXPECT_EQ(f.get_string_array("s.strs"), (std::vector<std::string>{"<unk>", "\xE2\x96\x81the", ""}));
  EXPECT_EQ(f.get_float_array("s.f32s"), (std::vector<double>{0, -1, 3.5}));
  EXPECT_EQ(f.get_int_array("s.i32s"), (std::vector<int64_t>{1, -2, 3}));

  ASSERT_EQ(f.tensors().size(), std::size(kAllTypes) + 2);
  for (size_t i = 0; i < std::size(kAllTypes); ++i) {
    const TypeTraits& tr = type_traits(kAllTypes[i]);
    const GgufTensor* t = f.tensor(std::string("w.") + tr.name);
    ASSERT_NE(t, nullptr) << tr.name;
    EXPECT_EQ(t->type, kAllTypes[i]);
    EXPECT_EQ(t->shape, (std::vector<int64_t>{tr.block_size * 2, 3}));
    EXPECT_EQ(t->elements(), tr.block_size * 6);
    ASSERT_EQ(t->bytes, datas[i].size());
    EXPECT_EQ(0, std::memcmp(t->data, datas[i].data(), t->bytes)) << tr.name;
    EXPECT_EQ(t->offset % 32, 0u);
  }
  EXPECT_EQ(f.tensor("v4")->shape, (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(reinterpret_cast<const float*>(f.tensor("v1")->data)[4], 2.5f);
  EXPECT_EQ(f.tensor("absent"), nullptr);
  EXPECT_EQ(&f.tensors()[0], f.tensor("w.f32"));  // file order is kept
}

TEST(Gguf, GettersRejectWrongTypesAndReportAbsence) {
  GgufWriter w;
  w.set_string("s", "x");
  w.set_f32("f", 1.5f);
  w.set_u64("big", ~0ull);
  w.set_string_array("a", {"x"});
  auto bytes = w.to_bytes();
  GgufFile f = GgufFile::from_bytes(bytes.data(), bytes.size());
  EXPECT_FALSE(f.get_int("nope").has_value());
  EXPECT_TRUE(f.get_string_array("nope").empty());
  EXPECT_EQ(f.find("nope"), nullptr);
  try {
    f.get_int("s");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("metadata 's' is string, expected an integer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(f.get_int("f"), Error);
  EXPECT_THROW(f.get_int("big"), Error);  // does not fit int64
  EXPECT_THROW(f.get_bool("s"), Error);
  EXPECT_THROW(f.get_string("f"), Error);
  EXPECT_THROW(f.get_int_array("a"), Error);
  EXPECT_THROW(f.get_float_array("s"), Error);
  EXPECT_EQ(f.get_float("f"), 1.5);
}

// The same small file written by hand as v2 and v3: both read identically.
TEST(Gguf, HandMadeV2AndV3HeadersRead) {
  for (uint32_t version : {2u, 3u}) {
    test::Bytes b;
    b.header(version, 2, 3).kv_str("general.architecture", "llama").kv_u32("general.alignment", 64);
    b.str("x.i16s").u32(9).u32(3).u64(2).put<int16_t>(-3).put<int16_t>(4);  // array of int16
    b.tensor("a", {4}, 0, 0).tensor("b", {2, 2}, 0, 64).pad(64);
    for (int i = 0; i < 16; ++i) b.put<float>(float(i));  // a at 0..15, then b at 64
    b.pad(64);
    for (int i = 0; i < 4; ++i) b.put<float>(float(100 + i));
    GgufFile f = GgufFile::from_bytes(b.b.data(), b.b.size());
    EXPECT_EQ(f.version(), version);
    EXPECT_EQ(f.alignment(), 64u);
    EXPECT_EQ(f.get_string("general.architecture"), "llama");
    EXPECT_EQ(f.get_int_array("x.i16s"), (std::vector<int64_t>{-3, 4}));
    ASSERT_EQ(f.tensors().size(), 2u);
    EXPECT_EQ(reinterpret_cast<const float*>(f.tensor("a")->data)[3], 3.f);
    EXPECT_EQ(reinterpret_cast<const float*>(f.tensor("b")->data)[3], 103.f);
    EXPECT_EQ(f.tensor("b")->shape, (std::vector<int64_t>{2, 2}));
  }
}

TEST(Gguf, WriteThenOpenFromDisk) {
  GgufWriter w;
  w.set_string("general.architecture", "test");
  std::vector<float> x = {1, 2, 3, 4};
  w.add_tensor("x", DType::F32, {4}, x.data(), 16);
  std::string path =
      (std::filesystem::temp_directory_path() / ("tinfer_gguf_" + std::to_string(getpid()) + ".gguf")).string();
  w.write(path);
  {
    GgufFile f = GgufFile::open(path);
    GgufFile moved = std::move(f);  // the mapping moves with the object
    EXPECT_EQ(reinterpret_cast<const float*>(moved.tensor("x")->data)[2], 3.f);
    auto bytes = w.to_bytes();
    EXPECT_EQ(std::filesystem::file_size(path), bytes.size());
  }
  std::filesystem::remove(path);
  EXPECT_THROW(w.write("/nonexistent-dir/x.gguf"), Error);
}

TEST(Gguf, WriterRejectsInconsistentTensors) {
  GgufWriter w;
  float x[4] = {};
  EXPECT_THROW(w.add_tensor("x", DType::F32, {4}, x, 12), Error);   // wrong byte count
  EXPECT_THROW(w.add_tensor("x", DType::Q8_0, {4}, x, 16), Error);  // not a block multiple
  EXPECT_THROW(w.add_tensor("", DType::F32, {4}, x, 16), Error);
  EXPECT_THROW(w.add_tensor("x", DType::F32, {1, 1, 1, 1, 4}, x, 16), Error);
  w.add_tensor("x", DType::F32, {4}, x, 16);
  EXPECT_THROW(w.add_tensor("x", DType::F32, {4}, x, 16), Error);  // duplicate
}

TEST(Gguf, Stories260KFacts) {
  std::string path = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(path, "models/stories260K.gguf");
  GgufFile f = GgufFile::open(path);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_int("llama.embedding_length"), 64);
  EXPECT_EQ(f.get_int("llama.block_count"), 5);
  EXPECT_EQ(f.get_int("llama.attention.head_count"), 8);
  EXPECT_EQ(f.get_int("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(f.get_int("llama.feed_forward_length"), 172);
  EXPECT_EQ(f.get_int("llama.rope.dimension_count"), 8);
  EXPECT_NEAR(*f.get_float("llama.attention.layer_norm_rms_epsilon"), 1e-5, 1e-9);
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens").size(), 512u);
  EXPECT_EQ(f.get_float_array("tokenizer.ggml.scores").size(), 512u);
  EXPECT_EQ(f.get_int_array("tokenizer.ggml.token_type").size(), 512u);
  EXPECT_EQ(f.get_int("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(f.get_int("tokenizer.ggml.eos_token_id"), 2);

  ASSERT_EQ(f.tensors().size(), 2u + 5 * 9 + 1);
  for (const GgufTensor& t : f.tensors()) EXPECT_EQ(t.type, DType::F32) << t.name;
  using S = std::vector<int64_t>;
  EXPECT_EQ(f.tensor("token_embd.weight")->shape, (S{64, 512}));
  EXPECT_EQ(f.tensor("output.weight")->shape, (S{64, 512}));
  EXPECT_EQ(f.tensor("output_norm.weight")->shape, (S{64}));
  for (int l = 0; l < 5; ++l) {
    auto shape = [&](const char* n) {
      const GgufTensor* t = f.tensor("blk." + std::to_string(l) + "." + n);
      return t ? t->shape : S{};
    };
    EXPECT_EQ(shape("attn_norm.weight"), (S{64}));
    EXPECT_EQ(shape("attn_q.weight"), (S{64, 64}));
    EXPECT_EQ(shape("attn_k.weight"), (S{64, 32}));
    EXPECT_EQ(shape("attn_v.weight"), (S{64, 32}));
    EXPECT_EQ(shape("attn_output.weight"), (S{64, 64}));
    EXPECT_EQ(shape("ffn_norm.weight"), (S{64}));
    EXPECT_EQ(shape("ffn_gate.weight"), (S{64, 172}));
    EXPECT_EQ(shape("ffn_down.weight"), (S{172, 64}));
    EXPECT_EQ(shape("ffn_up.weight"), (S{64, 172}));
  }
  // Values are finite floats (a wrong data offset would show garbage or NaNs).
  const GgufTensor* n = f.tensor("output_norm.weight");
  for (int i = 0; i < 64; ++i) EXPECT_TRUE(std::isfinite(reinterpret_cast<const float*>(n->data)[i]));
}

// Re-writing the fixture's metadata and tensors through GgufWriter reproduces the file byte for byte.
TEST(Gguf, WriterReproducesStories260K) {
  std::string path = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(path, "models/stories260K.gguf");
  GgufFile f = GgufFile::open(path);
  GgufWriter w;
  for (const auto& [k, v] : f.metadata()) w.set(k, v);
  for (const GgufTensor& t : f.tensors()) w.add_tensor(t.name, t.type, t.shape, t.data, t.bytes);
  std::vector<uint8_t> out = w.to_bytes();
  GgufFile g = GgufFile::from_bytes(out.data(), out.size());
  ASSERT_EQ(g.tensors().size(), f.tensors().size());
  for (const GgufTensor& t : f.tensors()) {
    EXPECT_EQ(g.tensor(t.name)->offset, t.offset) << t.name;
    EXPECT_EQ(0, std::memcmp(g.tensor(t.name)->data, t.data, t.bytes)) << t.name;
  }
  EXPECT_EQ(out.size(), std::filesystem::file_size(path));
}

}  // namespace
}  // namespace tinfer
