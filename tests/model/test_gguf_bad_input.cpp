// Malformed GGUF files: each must give a clear tinfer::Error (asserted by message) and never a
// crash or a huge allocation — truncations at every length, crafted fields, and a byte-flip sweep.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tinfer/error.h"
#include "formats/gguf.h"
#include "model/test_gguf_bytes.h"

namespace tinfer {
namespace {

using test::Bytes;

std::string load_error(const std::vector<uint8_t>& b) {
  try {
    GgufFile::from_bytes(b.data(), b.size());
  } catch (const Error& e) {
    return e.what();
  }
  return "<loaded>";
}

#define EXPECT_GGUF_ERROR(bytes, substr)                                               \
  do {                                                                                 \
    std::string msg_ = load_error(bytes);                                              \
    EXPECT_NE(msg_.find(substr), std::string::npos) << "message: " << msg_;            \
    EXPECT_NE(msg_.find("<memory>"), std::string::npos) << "names the file: " << msg_; \
  } while (0)

// Reads every value and every tensor byte, so a loaded-but-inconsistent file shows up under ASan.
uint64_t touch_all(const GgufFile& f) {
  uint64_t sum = 0;
  for (const auto& [k, v] : f.metadata()) sum += k.size() + uint64_t(v.type);
  for (const GgufTensor& t : f.tensors())
    for (size_t i = 0; i < t.bytes; ++i) sum += t.data[i];
  return sum;
}

// A small valid file: metadata of several types and three tensors of different dtypes.
std::vector<uint8_t> small_valid_file() {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.block_count", 1);
  w.set_f32("llama.rope.freq_base", 10000.f);
  w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "a", "bc"});
  w.set_i32_array("tokenizer.ggml.token_type", {2, 1, 1});
  std::vector<uint8_t> d(34 * 2 + 64, 0x11);
  w.add_tensor("q8", DType::Q8_0, {64, 1}, d.data(), 68);
  w.add_tensor("f16", DType::F16, {8, 2}, d.data(), 32);
  w.add_tensor("f32", DType::F32, {3}, d.data(), 12);
  return w.to_bytes();
}

TEST(GgufBadInput, EveryTruncationIsAnError) {
  std::vector<uint8_t> full = small_valid_file();
  ASSERT_EQ(load_error(full), "<loaded>");
  // Cuts inside the trailing zero padding after the last tensor (0x11 bytes) may load.
  size_t end_of_data = full.size();
  while (end_of_data > 0 && full[end_of_data - 1] == 0) --end_of_data;
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + n);
    std::string msg = load_error(cut);
    if (n < end_of_data) {
      EXPECT_NE(msg, "<loaded>") << "prefix of " << n << " bytes loaded";
      bool named = msg.find("truncated") != std::string::npos || msg.find("past end of file") != std::string::npos ||
                   msg.find("impossible") != std::string::npos || msg.find("cannot fit") != std::string::npos ||
                   msg.find("too small") != std::string::npos || msg.find("remain") != std::string::npos;
      EXPECT_TRUE(named) << n << ": " << msg;
    }
  }
}

TEST(GgufBadInput, HeaderProblems) {
  EXPECT_GGUF_ERROR(std::vector<uint8_t>{}, "too small");
  EXPECT_GGUF_ERROR(Bytes().raw("GGML").u32(3).u64(0).u64(0).b, "not a GGUF file");
  EXPECT_GGUF_ERROR(Bytes().header(1, 0, 0).b, "version 1 is obsolete");
  EXPECT_GGUF_ERROR(Bytes().header(4, 0, 0).b, "unsupported GGUF version 4");
  EXPECT_GGUF_ERROR(Bytes().header(0x03000000, 0, 0).b, "big-endian");
  EXPECT_GGUF_ERROR(Bytes().header(3, 1ull << 60, 0).b, "tensor count 1152921504606846976 is impossible");
  EXPECT_GGUF_ERROR(Bytes().header(3, 0, ~0ull).b, "metadata count");
  EXPECT_GGUF_ERROR(Bytes().header(3, 1, 1).zeros(40).b, "cannot fit");
  // An empty but valid file loads.
  GgufFile f = GgufFile::from_bytes(Bytes().header(2, 0, 0).b.data(), 24);
  EXPECT_EQ(f.tensors().size(), 0u);
}

TEST(GgufBadInput, MetadataProblems) {
  auto one_kv = [](auto&& fill) {
    Bytes b;
    b.header(3, 0, 1);
    fill(b);
    return b.zeros(64).b;
  };
  EXPECT_GGUF_ERROR(one_kv([](Bytes& b) { b.u64(1ull << 62); }), "metadata key #0 length");
  EXPECT_GGUF_ERROR(one_kv([](Bytes& b) { b.u64(70000); }), "exceeds the limit");
  EXPECT_GGUF_ERROR(one_kv([](Bytes& b) { b.str("k").u32(13); }), "metadata 'k' has unknown value type 13");
  EXPECT_GGUF_ERROR(one_kv([](Bytes& b) { b.str("k").u32(8).u64(1ull << 40); }), "metadata 'k' (1099511627776 bytes)");
  EXPECT_GGUF_ERROR(one_kv([](Bytes& b) { b.str("k").u32(7).put<uint8_t>(2); }), "invalid byte value 2");
  EXPECT_GGUF_ERROR(one_kv([](Bytes& b) { b.str("k").u32(9).u32(4).u64(1ull << 61); }), "claims");
  EXPECT_GGUF_ERROR(one_kv([](Bytes& b) { b.str("k").u32(9).u32(99).u64(1); }), "array of unknown value type 99");
  EXPECT_GGUF_ERROR(one_kv([](Bytes& b) {
                      b.str("k").u32(9);
                      for (int i = 0; i < 6; ++i) b.u32(9).u64(1);  // arrays of arrays of ...
                    }),
                    "nests arrays deeper");
  EXPECT_GGUF_ERROR(one_kv([](Bytes& b) { b.str("general.alignment").u32(4).u32(24); }), "not a power of two");
  EXPECT_GGUF_ERROR(one_kv([](Bytes& b) { b.str("general.alignment").u32(4).u32(0); }), "not a power of two");
  EXPECT_GGUF_ERROR(one_kv([](Bytes& b) { b.kv_str("general.alignment", "32"); }), "must be an unsigned integer");
  EXPECT_GGUF_ERROR(Bytes().header(3, 0, 2).kv_u32("a", 1).kv_u32("a", 2).b, "duplicate metadata key 'a'");
  // More array values than the reader will hold in memory, all present in the file.
  const uint64_t many = (uint64_t{1} << 23) + 1;
  EXPECT_GGUF_ERROR(Bytes().header(3, 0, 1).str("k").u32(9).u32(0).u64(many).zeros(many).b, "array values in total");
}

// One F32 tensor "t" with the given dims/type/offset and `data` bytes after the aligned table.
std::vector<uint8_t> one_tensor(const std::vector<uint64_t>& dims, uint32_t type, uint64_t offset, size_t data,
                                const std::string& name = "blk.0.attn_q.weight") {
  Bytes b;
  b.header(3, 1, 0).tensor(name, dims, type, offset).pad(32).zeros(data);
  return b.b;
}

TEST(GgufBadInput, TensorTableProblems) {
  EXPECT_EQ(load_error(one_tensor({4, 2}, 0, 0, 32)), "<loaded>");
  EXPECT_GGUF_ERROR(one_tensor({}, 0, 0, 32), "has 0 dimensions");
  EXPECT_GGUF_ERROR(one_tensor({1, 1, 1, 1, 1}, 0, 0, 32), "has 5 dimensions");
  EXPECT_GGUF_ERROR(one_tensor({4, 0}, 0, 0, 32), "dimension 1 is 0");
  EXPECT_GGUF_ERROR(one_tensor({1ull << 63, 1}, 0, 0, 32), "dimension 0 is 9223372036854775808");
  EXPECT_GGUF_ERROR(one_tensor({1ull << 40, 1ull << 40}, 0, 0, 32), "element count overflows");
  EXPECT_GGUF_ERROR(one_tensor({1ull << 40, 1}, 0, 0, 32), "more than the file size");
  EXPECT_GGUF_ERROR(one_tensor({4}, 99, 0, 32), "unknown or unsupported type id 99");
  EXPECT_GGUF_ERROR(one_tensor({33}, 8, 0, 64), "row length 33 is not a multiple of the q8_0 block size 32");
  EXPECT_GGUF_ERROR(one_tensor({4}, 0, 4, 64), "offset 4 is not a multiple of the alignment 32");
  EXPECT_GGUF_ERROR(
      one_tensor({16}, 0, 0, 60),
      "tensor 'blk.0.attn_q.weight' data runs past end of file (offset 96 + 0 + 64 bytes > file size 156)");
  EXPECT_GGUF_ERROR(one_tensor({4}, 0, 1ull << 62, 32), "data runs past end of file");
  EXPECT_GGUF_ERROR(one_tensor({4}, 0, 0, 32, std::string(65, 'x')), "tensor #0 name length 65 exceeds the limit");
  EXPECT_GGUF_ERROR(one_tensor({4}, 0, 0, 32, ""), "empty name");

  Bytes dup;
  dup.header(3, 2, 0).tensor("w", {4}, 0, 0).tensor("w", {4}, 0, 32).pad(32).zeros(64);
  EXPECT_GGUF_ERROR(dup.b, "duplicate tensor 'w'");
  Bytes overlap;
  overlap.header(3, 2, 0).tensor("a", {16}, 0, 0).tensor("b", {4}, 0, 32).pad(32).zeros(128);
  EXPECT_GGUF_ERROR(overlap.b, "tensors 'a' and 'b' overlap");
}

TEST(GgufBadInput, OpenNamesThePath) {
  auto dir = std::filesystem::temp_directory_path();
  std::string path = (dir / ("tinfer_bad_" + std::to_string(getpid()) + ".gguf")).string();
  { std::ofstream(path, std::ios::binary) << "GGUF\x09"; }
  try {
    GgufFile::open(path);
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
  EXPECT_THROW(GgufFile::open(path), Error);          // absent
  EXPECT_THROW(GgufFile::open(dir.string()), Error);  // a directory
}

// Flip bytes at every position with several patterns: each result either loads (and every byte
// it points at is readable) or throws tinfer::Error — never another exception or a crash.
TEST(GgufBadInput, CorruptedByteSweep) {
  std::vector<uint8_t> full = small_valid_file();
  int loaded = 0, rejected = 0;
  for (size_t pos = 0; pos < full.size(); ++pos) {
    for (uint8_t pattern : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xFF), uint8_t(0x7F)}) {
      std::vector<uint8_t> b = full;
      b[pos] = pattern == 0x7F ? uint8_t(0x7F) : uint8_t(b[pos] ^ pattern);
      try {
        GgufFile f = GgufFile::from_bytes(b.data(), b.size());
        touch_all(f);
        ++loaded;
      } catch (const Error&) {
        ++rejected;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "byte " << pos << ": non-Error exception " << e.what();
      }
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(loaded, 0);  // flips inside tensor data or padding are harmless
}

}  // namespace
}  // namespace tinfer
