// Issue 27 §2: a loaded model holds one copy of its weights. After CpuForward packs a model loaded from a
// file, the file mapping's resident pages (this process's Rss of the mapping, /proc/self/smaps) fall to the
// few pages the packer keeps (norms and partial pages at tensor edges), the forward pass is unchanged, and
// MappedFile::drop_resident leaves memory that is not a mapped file's alone.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "backend/cpu/cpu_forward.h"
#include "backend/forward_batch.h"
#include "formats/mapped_file.h"
#include "model/model.h"
#include "model/synth/synth.h"
#include "quant/type_table.h"

namespace tinfer {
namespace {

// Rss (bytes) of the mappings of this process that overlap [p, p + n).
long long mapped_rss(const void* p, size_t n) {
  std::ifstream f("/proc/self/smaps");
  const auto lo = reinterpret_cast<uintptr_t>(p), hi = lo + n;
  std::string line;
  bool in = false;
  long long total = 0;
  while (std::getline(f, line)) {
    unsigned long a = 0, b = 0;
    char dash = 0;
    if (std::sscanf(line.c_str(), "%lx%c%lx", &a, &dash, &b) == 3 && dash == '-') {
      in = a < hi && b > lo;
      continue;
    }
    long long kb = 0;
    if (in && std::sscanf(line.c_str(), "Rss: %lld kB", &kb) == 1) total += kb * 1024;
  }
  return total;
}

SynthSpec spec_of(DType type, bool tied) {
  SynthSpec s;
  s.dim = 256, s.n_layers = 4, s.n_heads = 4, s.n_kv_heads = 2, s.ffn_dim = 768, s.n_vocab = 4096, s.ctx_len = 64;
  s.weight_type = type, s.tied_embeddings = tied, s.seed = 11, s.weight_std = 0.08f;
  return s;
}

std::string write_model(const SynthSpec& s, const std::string& tag) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tinfer_residency_" + tag + "_" + std::to_string(::getpid()) + ".gguf")).string();
  const std::vector<uint8_t> bytes = synthesize_model_bytes(s);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  return path;
}

// The file's mapping: the range from the lowest to the highest tensor byte.
struct Span {
  const uint8_t* lo = nullptr;
  size_t n = 0;
};
Span tensor_span(const Model& m) {
  const uint8_t *lo = nullptr, *hi = nullptr;
  auto add = [&](const GgufTensor* t) {
    if (!t) return;
    if (!lo || t->data < lo) lo = t->data;
    if (!hi || t->data + t->bytes > hi) hi = t->data + t->bytes;
  };
  const DecoderTensors& d = m.tensors();
  add(d.tok_embd), add(d.output);
  for (const LayerTensors& l : d.layers)
    for (const GgufTensor* t : {l.wq, l.wk, l.wv, l.wo, l.w_gate, l.w_up, l.w_down, l.attn_norm, l.ffn_norm}) add(t);
  return {lo, size_t(hi - lo)};
}

std::vector<float> logits_of(CpuForward& fwd, const Model& m) {
  const ModelConfig& c = m.config();
  KvStorage kv(c, 64, 16);
  ForwardBatch b;
  b.tokens = {1, 17, 300, 4000, 5};
  b.positions = {0, 1, 2, 3, 4}, b.seq = {0, 0, 0, 0, 0}, b.block_tables = {{2}}, b.logit_rows = {0, 1, 2, 3, 4};
  std::vector<float> logits(size_t(5 * c.n_vocab));
  fwd.forward(b, kv, logits.data());
  return logits;
}

TEST(WeightResidency, PackingGivesTheFilePagesBack) {
  for (bool tied : {false, true}) {
    for (DType type : {DType::Q8_0, DType::Q4_K, DType::F16}) {
      SCOPED_TRACE(std::string(type_traits(type).name) + (tied ? " tied" : ""));
      const std::string path = write_model(spec_of(type, tied), "pack");
      auto model = Model::load(path);
      const Span sp = tensor_span(*model);
      ASSERT_GT(sp.n, size_t(2) << 20) << "the model must be large enough to measure";
      volatile uint8_t sink = 0;  // page the whole file in, as a cold load's reads do
      for (size_t i = 0; i < sp.n; i += 4096) sink = sink + sp.lo[i];
      const long long before = mapped_rss(sp.lo, sp.n);
      ASSERT_GE(before, (long long)(sp.n * 9 / 10)) << "the file's pages should be resident before packing";
      ThreadPool pool(3);
      CpuForward fwd(*model, pool, 64);
      const long long after = mapped_rss(sp.lo, sp.n);
      // Kept: the f32 norms (n_layers * 2 * dim * 4 bytes), one partial page at each end of every tensor.
      const long long keep = 64 * 1024;
      EXPECT_LE(after, keep) << "before " << before << " bytes, after " << after << " of a " << sp.n << "-byte span";
      // The forward pass reads the embedding rows back through the mapping; results equal a model whose
      // pages were never given back (an in-memory image of the same file).
      std::ifstream in(path, std::ios::binary);
      std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      auto image = Model::from_gguf_bytes(bytes);
      CpuForward fwd_image(*image, pool, 64);
      EXPECT_EQ(logits_of(fwd, *model), logits_of(fwd_image, *image));
      std::filesystem::remove(path);
    }
  }
}

TEST(WeightResidency, DropResidentLeavesOtherMemoryAlone) {
  std::vector<uint8_t> heap(size_t(1) << 22, 0xab);
  EXPECT_EQ(MappedFile::drop_resident(heap.data(), heap.size()), 0u);
  for (size_t i = 0; i < heap.size(); i += 4093) ASSERT_EQ(heap[i], 0xab);
  const std::string path = write_model(spec_of(DType::Q8_0, false), "drop");
  {
    MappedFile f = MappedFile::open(path);
    std::vector<uint8_t> copy(f.data(), f.data() + f.size());
    EXPECT_EQ(MappedFile::drop_resident(f.data() + 1, f.size() + 10), 0u) << "a range past the mapping's end";
    const size_t page = size_t(::sysconf(_SC_PAGESIZE));
    const size_t got = MappedFile::drop_resident(f.data() + 100, f.size() - 200);
    EXPECT_EQ(got, (f.size() - 100) / page * page - page) << "whole pages inside the range only";
    EXPECT_EQ(std::memcmp(copy.data(), f.data(), f.size()), 0) << "the bytes read back unchanged";
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tinfer
