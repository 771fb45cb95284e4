// Issue 27 §2: --packed-cache. A first load writes DIR/<stem>-<hash>.tpack, a second load reads every matrix
// back from it, and both forward exactly as a load without a cache does. A cache that does not check out
// (truncated, a flipped byte in a matrix or the index, bad magic, another format version, another request
// sequence, the model file touched or rewritten) is named on stderr with its reason and rewritten, never
// used; an unusable directory is a warning and the load still packs.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backend/cpu/cpu_forward.h"
#include "backend/cpu/packed_cache.h"
#include "backend/forward_batch.h"
#include "core/thread_pool.h"
#include "model/model.h"
#include "model/synth/synth.h"
#include "quant/type_table.h"

namespace tinfer {
namespace {

namespace fs = std::filesystem;

SynthSpec spec_of(DType type, bool tied, uint64_t seed = 11) {
  SynthSpec s;
  s.dim = 256, s.n_layers = 2, s.n_heads = 4, s.n_kv_heads = 2, s.ffn_dim = 768, s.n_vocab = 512, s.ctx_len = 64;
  s.weight_type = type, s.tied_embeddings = tied, s.seed = seed, s.weight_std = 0.08f;
  return s;
}

class PackedCacheTest : public ::testing::TestWithParam<bool> {  // true: --packed-cache-mode copy
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& ch : name) ch = ch == '/' ? '_' : ch;
    root_ = fs::temp_directory_path() / ("tinfer_packed_cache_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(root_);
    fs::create_directories(root_);
    dir_ = (root_ / "cache").string();
    model_path_ = (root_ / "model.gguf").string();
  }
  void TearDown() override { fs::remove_all(root_); }

  void write_model(const SynthSpec& s) const {
    const std::vector<uint8_t> bytes = synthesize_model_bytes(s);
    std::ofstream(model_path_, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                       std::streamsize(bytes.size()));
  }

  // Logits of a 5-token prefill, and what the load printed on stderr.
  struct Load {
    std::vector<float> logits;
    std::string err;
  };
  Load load(const std::string& cache_dir) {
    auto model = Model::load(model_path_);
    ::testing::internal::CaptureStderr();
    BackendOptions o;
    o.pool = &pool_, o.max_positions = 64, o.packed_cache = cache_dir, o.packed_cache_copy = GetParam();
    CpuForward fwd(*model, o);
    Load l;
    l.err = ::testing::internal::GetCapturedStderr();
    const ModelConfig& c = model->config();
    KvStorage kv(c, 16, 16);
    ForwardBatch b;
    b.tokens = {1, 17, 300, 40, 5};
    b.positions = {0, 1, 2, 3, 4}, b.seq = {0, 0, 0, 0, 0}, b.block_tables = {{2}}, b.logit_rows = {0, 1, 2, 3, 4};
    l.logits.resize(size_t(5 * c.n_vocab));
    fwd.forward(b, kv, l.logits.data());
    return l;
  }

  std::vector<fs::path> cache_files() const {
    std::vector<fs::path> out;
    if (!fs::exists(dir_)) return out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path());
    return out;
  }
  fs::path the_cache() const {
    const auto files = cache_files();
    EXPECT_EQ(files.size(), 1u);
    return files.empty() ? fs::path() : files[0];
  }
  static void patch(const fs::path& p, uint64_t at, uint8_t x) {
    std::fstream f(p, std::ios::binary | std::ios::in | std::ios::out);
    f.seekg(std::streamoff(at));
    char c = 0;
    f.read(&c, 1);
    c = char(uint8_t(c) ^ x);
    f.seekp(std::streamoff(at));
    f.write(&c, 1);
  }
  static uint64_t u64_at(const fs::path& p, uint64_t at) {
    std::ifstream f(p, std::ios::binary);
    f.seekg(std::streamoff(at));
    uint64_t v = 0;
    f.read(reinterpret_cast<char*>(&v), 8);
    return v;
  }

  // A load that must find the cache unusable for `reason`, rewrite it, and still forward like `want`.
  void expect_rewritten(const std::vector<float>& want, const std::string& reason) {
    const Load l = load(dir_);
    EXPECT_NE(l.err.find(reason), std::string::npos) << l.err;
    EXPECT_NE(l.err.find("packing and rewriting it"), std::string::npos) << l.err;
    EXPECT_NE(l.err.find("wrote"), std::string::npos) << l.err;
    EXPECT_EQ(l.logits, want);
    const Load again = load(dir_);
    EXPECT_NE(again.err.find("read"), std::string::npos) << again.err;
    EXPECT_EQ(again.err.find("rewriting"), std::string::npos) << again.err;
    EXPECT_EQ(again.logits, want);
  }

  ThreadPool pool_{3};
  fs::path root_;
  std::string dir_, model_path_;
};

TEST_P(PackedCacheTest, SecondLoadReadsWhatTheFirstWrote) {
  for (bool tied : {false, true}) {
    for (DType type : {DType::Q8_0, DType::Q4_K, DType::Q6_K, DType::F16}) {
      SCOPED_TRACE(std::string(type_traits(type).name) + (tied ? " tied" : ""));
      fs::remove_all(dir_);
      write_model(spec_of(type, tied));
      const Load plain = load("");
      EXPECT_TRUE(cache_files().empty());
      const Load first = load(dir_);
      EXPECT_NE(first.err.find("wrote"), std::string::npos) << first.err;
      const fs::path file = the_cache();
      EXPECT_EQ(file.extension(), ".tpack");
      EXPECT_EQ(file.filename().string().rfind("model-", 0), 0u) << file;
      const Load second = load(dir_);
      EXPECT_NE(second.err.find("read"), std::string::npos) << second.err;
      EXPECT_EQ(second.err.find("wrote"), std::string::npos) << second.err;
      EXPECT_EQ(first.logits, plain.logits);
      EXPECT_EQ(second.logits, plain.logits);
      EXPECT_EQ(cache_files().size(), 1u) << "no temporary left behind";
    }
  }
}

TEST_P(PackedCacheTest, CorruptFilesAreRefusedAndRewritten) {
  write_model(spec_of(DType::Q8_0, false));
  const std::vector<float> want = load("").logits;
  load(dir_);
  const fs::path file = the_cache();
  const uint64_t size = fs::file_size(file);
  const uint64_t index_at = u64_at(file, 16);

  fs::resize_file(file, size - 100);
  expect_rewritten(want, "truncated or extended");
  patch(file, 4096 + 10, 0x5a);  // the first matrix's first bytes
  expect_rewritten(want, "does not match its checksum");
  patch(file, index_at + (size - index_at) / 2, 0x01);  // the middle of the index
  expect_rewritten(want, "its index does not match its checksum");
  patch(file, 0, 0xff);
  expect_rewritten(want, "bad magic");
  patch(file, 8, 98);  // version 1 -> 99
  expect_rewritten(want, "cache format version 99");
  std::ofstream(file, std::ios::binary | std::ios::trunc).write("TINF", 4);
  expect_rewritten(want, "shorter than its header");
  EXPECT_EQ(u64_at(the_cache(), 16), index_at) << "the rewritten file is laid out as the first";
}

TEST_P(PackedCacheTest, AnotherRequestSequenceIsRewritten) {
  write_model(spec_of(DType::Q4_K, false));
  const std::vector<float> want = load("").logits;
  {  // a cache of this model's key whose first matrix is something else (as after a change to the stacking)
    auto model = Model::load(model_path_);
    PackedCache cache(dir_, *model, pool_, !GetParam());
    ASSERT_FALSE(cache.take("other.weight", DType::Q4_K, 16, 256).has_value()) << "nothing to read yet";
    const std::vector<uint8_t> rows(16 * row_bytes(DType::Q4_K, 256), 0);
    const PackedMatrix m = pack_matrix(DType::Q4_K, rows.data(), 16, 256);
    cache.record("other.weight", m);
    EXPECT_NE(cache.finish().find("wrote"), std::string::npos);
  }
  expect_rewritten(want, "matrix 0 is 'other.weight', the load asks for 'blk.0.attn_q.weight | blk.0.attn_k.weight");
}

TEST_P(PackedCacheTest, TouchedOrRewrittenModelFilesInvalidate) {
  write_model(spec_of(DType::Q8_0, false));
  load(dir_);
  const fs::path first = the_cache();
  // Touched: same path and fingerprint, another modification time: the same file name, rewritten.
  fs::last_write_time(model_path_, fs::last_write_time(model_path_) + std::chrono::seconds(5));
  expect_rewritten(load("").logits, "made for another copy or modification time of the model file");
  EXPECT_EQ(the_cache(), first);
  // Rewritten with other weights: another fingerprint, another file; the stale one of this path is removed.
  write_model(spec_of(DType::Q8_0, false, 99));
  const std::vector<float> want = load("").logits;
  const Load l = load(dir_);
  EXPECT_NE(l.err.find("wrote"), std::string::npos) << l.err;
  EXPECT_EQ(l.logits, want);
  EXPECT_NE(the_cache(), first);
  EXPECT_EQ(load(dir_).logits, want);
}

TEST_P(PackedCacheTest, AnUnusableDirectoryOnlyWarns) {
  write_model(spec_of(DType::Q8_0, false));
  const std::vector<float> want = load("").logits;
  std::ofstream(dir_) << "a file, not a directory";
  const Load l = load(dir_);
  EXPECT_NE(l.err.find("cannot use directory"), std::string::npos) << l.err;
  EXPECT_EQ(l.logits, want);
}

TEST_P(PackedCacheTest, LayoutProbeIsStable) {
  const std::string p = PackedCache::layout_probe();
  EXPECT_EQ(p.size(), 16u);
  EXPECT_EQ(p, PackedCache::layout_probe());
}

INSTANTIATE_TEST_SUITE_P(Modes, PackedCacheTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "copy" : "map"; });

}  // namespace
}  // namespace tinfer
