// safetensors checkpoints: a file built here byte by byte (F32, F16, BF16, an empty tensor, metadata) reads back
// as GgufTensor views with GGUF-order shapes and the right values; a sharded directory with its index; every
// malformed file is an Error naming the problem (truncated data, a header longer than the file, a byte count
// that disagrees with dtype x shape, overlapping data, an unreadable dtype, bad JSON, a shard outside the
// directory, an index naming a tensor its shard lacks).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tinfer/error.h"
#include "core/fp16.h"
#include "formats/safetensors.h"

namespace tinfer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// 8-byte length + header JSON (space-padded to a multiple of 8, as the reference writer does) + data.
std::vector<uint8_t> st_bytes(const json& header, const std::vector<uint8_t>& data) {
  std::string h = header.dump();
  h.resize((h.size() + 7) / 8 * 8, ' ');
  std::vector<uint8_t> out(8);
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) out[size_t(i)] = uint8_t(n >> (8 * i));
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

template <typename T>
void append(std::vector<uint8_t>& d, const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  d.insert(d.end(), p, p + v.size() * sizeof(T));
}

// Tensors: w [2, 3] F32 (HF order: 2 rows of 3), h [4] F16, b [2, 2] BF16, e [0] F32.
std::vector<uint8_t> sample(json* header_out = nullptr) {
  std::vector<uint8_t> d;
  append(d, std::vector<float>{1, 2, 3, 4, 5, 6});
  std::vector<uint16_t> h;
  for (float x : {0.5f, -1.0f, 2.0f, 1024.0f}) h.push_back(f32_to_fp16(x));
  append(d, h);
  std::vector<uint16_t> b;
  for (float x : {1.0f, -2.0f, 0.25f, 3.0f}) b.push_back(f32_to_bf16(x));
  append(d, b);
  json hd = {{"__metadata__", {{"format", "pt"}}},
             {"w", {{"dtype", "F32"}, {"shape", {2, 3}}, {"data_offsets", {0, 24}}}},
             {"h", {{"dtype", "F16"}, {"shape", {4}}, {"data_offsets", {24, 32}}}},
             {"b", {{"dtype", "BF16"}, {"shape", {2, 2}}, {"data_offsets", {32, 40}}}},
             {"e", {{"dtype", "F32"}, {"shape", {0}}, {"data_offsets", {40, 40}}}}};
  if (header_out) *header_out = hd;
  return st_bytes(hd, d);
}

void expect_refused(const std::vector<uint8_t>& bytes, const std::string& needle) {
  try {
    SafetensorsFile::from_bytes(bytes.data(), bytes.size(), "X");
    ADD_FAILURE() << "accepted; expected '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'X'"), std::string::npos) << e.what();
  }
}

TEST(Safetensors, ReadsTensorsInGgufOrder) {
  const std::vector<uint8_t> bytes = sample();
  const SafetensorsFile f = SafetensorsFile::from_bytes(bytes.data(), bytes.size(), "sample");
  ASSERT_EQ(f.tensors().size(), 4u);
  const GgufTensor* w = f.tensor("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->type, DType::F32);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{3, 2}));  // row length first
  EXPECT_EQ(w->elements(), 6);
  float got[6];
  std::memcpy(got, w->data, 24);
  EXPECT_EQ(got[5], 6.0f);
  const GgufTensor* h = f.tensor("h");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->type, DType::F16);
  EXPECT_EQ(fp16_to_f32(reinterpret_cast<const uint16_t*>(h->data)[3]), 1024.0f);
  const GgufTensor* b = f.tensor("b");
  EXPECT_EQ(b->type, DType::BF16);
  EXPECT_EQ(bf16_to_f32(reinterpret_cast<const uint16_t*>(b->data)[1]), -2.0f);
  EXPECT_EQ(f.tensor("e")->bytes, 0u);
  EXPECT_EQ(f.tensor("__metadata__"), nullptr);
  EXPECT_EQ(f.tensor("nope"), nullptr);
}

TEST(Safetensors, RefusesMalformedFiles) {
  json h;
  const std::vector<uint8_t> good = sample(&h);
  expect_refused(std::vector<uint8_t>(good.begin(), good.begin() + 5), "shorter than the 8-byte header length");
  std::vector<uint8_t> longer = good;
  longer[0] = 0xff, longer[1] = 0xff;  // a header length past the end
  expect_refused(longer, "is longer than the file");
  expect_refused(std::vector<uint8_t>(good.begin(), good.end() - 3), "outside the 37 bytes of data (truncated file?)");
  json bad = h;
  bad["w"]["shape"] = {2, 4};
  expect_refused(st_bytes(bad, std::vector<uint8_t>(40)), "tensor 'w' holds 24 bytes, its dtype and shape need 32");
  bad = h;
  bad["h"]["data_offsets"] = {16, 24};
  expect_refused(st_bytes(bad, std::vector<uint8_t>(40)), "data overlap");
  bad = h;
  bad["h"]["dtype"] = "I8";
  expect_refused(st_bytes(bad, std::vector<uint8_t>(40)), "dtype 'I8'");
  bad = h;
  bad["w"].erase("data_offsets");
  expect_refused(st_bytes(bad, std::vector<uint8_t>(40)), "needs \"dtype\", \"shape\" and two \"data_offsets\"");
  bad = h;
  bad["w"]["shape"] = {-1, 3};
  expect_refused(st_bytes(bad, std::vector<uint8_t>(40)), "shape entries must be non-negative");
  std::vector<uint8_t> not_json = st_bytes(h, std::vector<uint8_t>(40));
  not_json[8] = '[';
  expect_refused(not_json, "not valid JSON");
  std::vector<uint8_t> odd = st_bytes(h, std::vector<uint8_t>(40));  // one more header byte: every tensor misaligned
  odd.insert(odd.begin() + 8, ' ');
  ++odd[0];
  expect_refused(odd, "not a multiple of its element size");
  expect_refused(st_bytes(json::array(), {}), "not a JSON object");
  const std::string overflow = "{\"w\":{\"dtype\":5e99999}}";  // a number out of range (found by the fuzzer)
  std::vector<uint8_t> o(8, 0);
  o[0] = uint8_t(overflow.size());
  o.insert(o.end(), overflow.begin(), overflow.end());
  expect_refused(o, "not valid JSON");
}

class SafetensorsDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::path(::testing::TempDir()) / ("tinfer_st_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void put(const std::string& name, const std::vector<uint8_t>& bytes) {
    std::ofstream(fs::path(dir_) / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
  void put(const std::string& name, const json& j) { std::ofstream(fs::path(dir_) / name) << j.dump(); }
  std::string dir_;
};

TEST_F(SafetensorsDir, OneFileOrShardsWithTheirIndex) {
  put("model.safetensors", sample());
  const SafetensorsCheckpoint one = SafetensorsCheckpoint::open_dir(dir_);
  EXPECT_EQ(one.shard_count(), 1u);
  EXPECT_EQ(one.tensors().size(), 4u);
  fs::remove(fs::path(dir_) / "model.safetensors");
  // Two shards: "a" in the first, "b" in the second.
  std::vector<uint8_t> d1, d2;
  append(d1, std::vector<float>{1, 2});
  append(d2, std::vector<float>{3, 4, 5});
  put("model-00001-of-00002.safetensors", st_bytes({{"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}}}, d1));
  put("model-00002-of-00002.safetensors", st_bytes({{"b", {{"dtype", "F32"}, {"shape", {3}}, {"data_offsets", {0, 12}}}}}, d2));
  put("model.safetensors.index.json", json{{"metadata", {{"total_size", 20}}},
                                           {"weight_map", {{"a", "model-00001-of-00002.safetensors"},
                                                           {"b", "model-00002-of-00002.safetensors"}}}});
  const SafetensorsCheckpoint two = SafetensorsCheckpoint::open_dir(dir_);
  EXPECT_EQ(two.shard_count(), 2u);
  ASSERT_NE(two.tensor("b"), nullptr);
  EXPECT_EQ(two.tensor("b")->shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(reinterpret_cast<const float*>(two.tensor("b")->data)[2], 5.0f);
  EXPECT_EQ(two.tensor("c"), nullptr);
}

TEST_F(SafetensorsDir, RefusesABadIndexOrDirectory) {
  auto refused = [&](const std::string& needle) {
    try {
      SafetensorsCheckpoint::open_dir(dir_);
      ADD_FAILURE() << "accepted; expected '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refused("holds neither model.safetensors nor model.safetensors.index.json");
  std::vector<uint8_t> d;
  append(d, std::vector<float>{1, 2});
  put("s1.safetensors", st_bytes({{"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}}}, d));
  put("model.safetensors.index.json", json{{"weight_map", {{"a", "s1.safetensors"}, {"z", "s1.safetensors"}}}});
  refused("lists 'z' in");
  put("model.safetensors.index.json", json{{"weight_map", {{"a", "../s1.safetensors"}}}});
  refused("is not a file name in the checkpoint's directory");
  put("model.safetensors.index.json", json{{"weight_map", {{"a", "missing.safetensors"}}}});
  refused("missing.safetensors");
  put("model.safetensors.index.json", json{{"no_map", 1}});
  refused("has no \"weight_map\" object");
}

}  // namespace
}  // namespace tinfer
