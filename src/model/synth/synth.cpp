// Synthetic model generation: presets (facts in a table), spec validation, counter-based seeded weights
// quantized row by row (never more than one tensor's rows in fp32 at a time, and only per thread chunk),
// llama.* metadata and the synthetic SentencePiece vocabulary, written with GgufWriter.
#include "model/synth/synth.h"

#include <cmath>
#include <memory>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "model/arch/arch.h"
#include "formats/gguf.h"
#include "model/rope.h"
#include "quant/type_table.h"

namespace tinfer {
namespace {

struct Preset {
  const char* name;
  int64_t dim, n_layers, n_heads, n_kv_heads, ffn_dim, n_vocab, ctx_len;
  float rope_base, rms_eps;
  bool tied;
  const char* arch = "llama";
  int64_t head_dim = 0;  // 0: dim / heads
  double llama3_factor = 0;  // Llama 3 RoPE scaling factor (low 1, high 4, original context 8192); 0: none
  int64_t sliding_window = 0;
};

// Shapes of the real checkpoints. stories15m (llama2.c) and smollm2-135m share the embedding with the head.
constexpr Preset kPresets[] = {
    // name            dim  layers heads kv  ffn    vocab  ctx   rope base  rms eps  tied
    {"tinyllama-1.1b", 2048, 22, 32, 4, 5632, 32000, 2048, 10000.0f, 1e-5f, false},
    {"llama-7b", 4096, 32, 32, 32, 11008, 32000, 4096, 10000.0f, 1e-5f, false},
    {"smollm2-135m", 576, 30, 9, 3, 1536, 49152, 8192, 100000.0f, 1e-5f, true},
    {"stories15m", 288, 6, 6, 6, 768, 32000, 256, 10000.0f, 1e-5f, true},
    // Llama 3.2 1B (config.json): GQA 4:1, RoPE base 500000 with llama3 scaling factor 32.
    {"llama3.2-1b", 2048, 16, 32, 8, 8192, 128256, 131072, 500000.0f, 1e-5f, true, "llama", 0, 32.0},
    // Qwen 2.5 0.5B and Qwen 3 0.6B (config.json of each checkpoint): neox RoPE, Q/K/V biases; q/k norms, head_dim 128.
    {"qwen2.5-0.5b", 896, 24, 14, 2, 4864, 151936, 32768, 1000000.0f, 1e-6f, true, "qwen2"},
    {"qwen3-0.6b", 1024, 28, 16, 8, 3072, 151936, 40960, 1000000.0f, 1e-6f, true, "qwen3", 128},
    // Phi-3 mini 4k (config.json): fused QKV and gate/up, MHA, separate head.
    {"phi3-mini", 3072, 32, 32, 32, 8192, 32064, 4096, 10000.0f, 1e-5f, false, "phi3"},
    // Mistral 7B v0.1 (config.json): GQA 4:1, a 4096-position sliding window on every layer.
    {"mistral-7b", 4096, 32, 32, 8, 14336, 32000, 32768, 10000.0f, 1e-5f, false, "llama", 0, 0, 4096},
    // Gemma 3 270M and 1B (config.json): head_dim 256, 512-position local windows, global RoPE base 1e6, tied head.
    {"gemma3-270m", 640, 18, 4, 1, 2048, 262144, 32768, 1000000.0f, 1e-6f, true, "gemma3", 256, 0, 512},
    {"gemma3-1b", 1152, 26, 4, 1, 6912, 262144, 32768, 1000000.0f, 1e-6f, true, "gemma3", 256, 0, 512},
};

// llama.cpp's general.file_type (llama_ftype) for a model whose matrices are all of one type. The
// K-quants take the _M ids, the names llama.cpp's tools use for "this K-quant" (its quantize aliases
// Q3_K/Q4_K/Q5_K to them); the field is informational, no loader branches on it.
struct FileType {
  DType type;
  uint32_t ftype;
};
constexpr FileType kFileTypes[] = {
    {DType::F32, 0},   {DType::F16, 1},   {DType::Q4_0, 2},  {DType::Q4_1, 3},
    {DType::Q8_0, 7},  {DType::Q5_0, 8},  {DType::Q5_1, 9},  {DType::Q2_K, 10},
    {DType::Q3_K, 12 /* Q3_K_M */},       {DType::Q4_K, 15 /* Q4_K_M */},
    {DType::Q5_K, 17 /* Q5_K_M */},       {DType::Q6_K, 18}, {DType::BF16, 32},
};

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Approximately standard normal: Irwin-Hall sum of four 16-bit uniforms from one counter-based draw,
// rescaled to unit variance (bounded at +-3.46, so no outliers). Element i of a tensor depends only on
// (seed, tensor name, i): the bytes do not depend on thread count or generation order.
inline float normal_at(uint64_t key, uint64_t i) {
  const uint64_t h = splitmix64(key + i);
  const float s = float(h & 0xffff) + float((h >> 16) & 0xffff) + float((h >> 32) & 0xffff) + float(h >> 48);
  return (s * (1.0f / 65536.0f) - 2.0f) * 1.7320508f;
}

struct TensorPlan {
  std::string name;
  std::vector<int64_t> shape;  // shape[0] = row length
  bool norm;                   // 1-D, f32, values ~1
  bool bias = false;           // 1-D, f32, values ~N(0, 0.1^2)
};

// The family's tensor set (its ArchFacts), in the order llama.cpp's converter writes a block's tensors.
std::vector<TensorPlan> plan_tensors(const SynthSpec& s) {
  const ArchFacts& f = find_arch(s.arch)->facts;  // known: build() validated the spec
  const int64_t q_dim = s.n_heads * s.resolved_head_dim(), kv_dim = s.n_kv_heads * s.resolved_head_dim();
  std::vector<TensorPlan> t;
  t.push_back({"token_embd.weight", {s.dim, s.n_vocab}, false});
  for (int64_t l = 0; l < s.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    t.push_back({b + "attn_norm.weight", {s.dim}, true});
    if (f.fused) {  // rows q | k | v
      t.push_back({b + "attn_qkv.weight", {s.dim, q_dim + 2 * kv_dim}, false});
    } else {
      t.push_back({b + "attn_q.weight", {s.dim, q_dim}, false});
      t.push_back({b + "attn_k.weight", {s.dim, kv_dim}, false});
      t.push_back({b + "attn_v.weight", {s.dim, kv_dim}, false});
    }
    if (f.qkv_bias)
      for (const auto& [w, n] : {std::pair{"attn_q", q_dim}, {"attn_k", kv_dim}, {"attn_v", kv_dim}})
        t.push_back({b + w + ".bias", {n}, false, true});
    if (f.qk_norm)
      for (const char* w : {"attn_q_norm.weight", "attn_k_norm.weight"}) t.push_back({b + w, {s.resolved_head_dim()}, true});
    t.push_back({b + "attn_output.weight", {q_dim, s.dim}, false});
    if (f.post_norms) t.push_back({b + "post_attention_norm.weight", {s.dim}, true});
    t.push_back({b + "ffn_norm.weight", {s.dim}, true});
    if (f.fused) {  // rows gate | up
      t.push_back({b + "ffn_up.weight", {s.dim, 2 * s.ffn_dim}, false});
    } else {
      t.push_back({b + "ffn_gate.weight", {s.dim, s.ffn_dim}, false});
      t.push_back({b + "ffn_up.weight", {s.dim, s.ffn_dim}, false});
    }
    t.push_back({b + "ffn_down.weight", {s.ffn_dim, s.dim}, false});
    if (f.post_norms) t.push_back({b + "post_ffw_norm.weight", {s.dim}, true});
  }
  if (!s.rope_factors_long.empty()) {  // phi3 LongRoPE: short and long divisors
    t.push_back({"rope_factors_short.weight", {s.resolved_head_dim() / 2}, true});
    t.push_back({"rope_factors_long.weight", {s.resolved_head_dim() / 2}, true});
  } else if (!s.rope_freq_factors.empty()) {
    t.push_back({"rope_freqs.weight", {s.resolved_head_dim() / 2}, true});
  }
  t.push_back({"output_norm.weight", {s.dim}, true});
  if (!s.tied_embeddings) t.push_back({"output.weight", {s.dim, s.n_vocab}, false});
  return t;
}

void add_metadata(GgufWriter& w, const SynthSpec& s) {
  const std::string p = s.arch + ".";
  w.set_string("general.architecture", s.arch);
  w.set_string("general.name", s.name);
  for (const FileType& f : kFileTypes)
    if (f.type == s.weight_type) w.set_u32("general.file_type", f.ftype);
  w.set_u32("general.quantization_version", 2);
  w.set_u32(p + "vocab_size", uint32_t(s.n_vocab));
  w.set_u32(p + "context_length", uint32_t(s.ctx_len));
  w.set_u32(p + "embedding_length", uint32_t(s.dim));
  w.set_u32(p + "block_count", uint32_t(s.n_layers));
  w.set_u32(p + "feed_forward_length", uint32_t(s.ffn_dim));
  w.set_u32(p + "attention.head_count", uint32_t(s.n_heads));
  w.set_u32(p + "attention.head_count_kv", uint32_t(s.n_kv_heads));
  w.set_u32(p + "attention.key_length", uint32_t(s.resolved_head_dim()));
  w.set_u32(p + "attention.value_length", uint32_t(s.resolved_head_dim()));
  w.set_u32(p + "rope.dimension_count", uint32_t(s.resolved_head_dim()));
  w.set_f32(p + "rope.freq_base", s.rope_base);
  w.set_f32(p + "attention.layer_norm_rms_epsilon", s.rms_eps);
  if (find_arch(s.arch)->facts.interleaved_rope && s.rope_layout == RopeLayout::neox)
    w.set_string("tinfer.rope.layout", "neox");
  if (s.sliding_window > 0) w.set_u32(p + "attention.sliding_window", uint32_t(s.sliding_window));
  if (!s.rope_factors_long.empty()) {
    w.set_u32(p + "rope.scaling.original_context_length", uint32_t(s.rope_orig_ctx));
    w.set_f32(p + "rope.scaling.attn_factor", s.rope_attn_factor);
  }
  w.set_u64("tinfer.synth.seed", s.seed);

  const SynthVocab v = synth_vocab(s.n_vocab);
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", v.pieces);
  w.set_f32_array("tokenizer.ggml.scores", v.scores);
  w.set_i32_array("tokenizer.ggml.token_type", v.types);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  w.set_bool("tokenizer.ggml.add_eos_token", false);
}

// Generates and quantizes one tensor, rows split over the pool (each chunk holds one fp32 row).
std::vector<uint8_t> make_tensor(const SynthSpec& s, const TensorPlan& t, DType type, ThreadPool& pool) {
  const int64_t row_len = t.shape[0];
  int64_t n_rows = 1;
  for (size_t d = 1; d < t.shape.size(); ++d) n_rows *= t.shape[d];
  const size_t rb = row_bytes(type, row_len);
  const TypeTraits& tt = type_traits(type);
  std::vector<uint8_t> out(rb * size_t(n_rows));
  const uint64_t key = splitmix64(s.seed ^ fnv1a(t.name));
  const float scale = t.norm ? 0.05f : t.bias ? 0.1f : s.weight_std, offset = t.norm ? 1.0f : 0.0f;
  pool.parallel_for(n_rows, 8, [&](int64_t r0, int64_t r1) {
    std::vector<float> row(static_cast<size_t>(row_len));
    for (int64_t r = r0; r < r1; ++r) {
      const uint64_t base = uint64_t(r) * uint64_t(row_len);
      for (int64_t i = 0; i < row_len; ++i) row[i] = offset + scale * normal_at(key, base + uint64_t(i));
      tt.from_float(row.data(), out.data() + rb * size_t(r), row_len);
    }
  });
  return out;
}

GgufWriter build(const SynthSpec& s, int n_threads) {
  const auto errs = s.validate();
  if (!errs.empty()) {
    std::string msg = "invalid synthetic model spec '" + s.name + "':";
    for (const auto& e : errs) msg += "\n  " + e;
    fail(msg);
  }
  ThreadPool pool(n_threads);
  GgufWriter w;
  add_metadata(w, s);
  for (const TensorPlan& t : plan_tensors(s)) {
    const DType type = t.norm || t.bias ? DType::F32 : synth_tensor_type(s.weight_type, t.shape[0]);
    std::vector<uint8_t> data = make_tensor(s, t, type, pool);
    // Not random: the spec's factors.
    const std::vector<float>* factors = t.name == "rope_factors_long.weight" ? &s.rope_factors_long
                                        : t.name == "rope_freqs.weight" || t.name == "rope_factors_short.weight"
                                            ? &s.rope_freq_factors
                                            : nullptr;
    if (factors)
      data.assign(reinterpret_cast<const uint8_t*>(factors->data()),
                  reinterpret_cast<const uint8_t*>(factors->data() + factors->size()));
    w.add_tensor(t.name, type, t.shape, data.data(), data.size());
  }
  return w;
}

}  // namespace

std::vector<std::string> SynthSpec::validate() const {
  std::vector<std::string> e;
  auto positive = [&](const char* what, int64_t v) {
    if (v <= 0) e.push_back(std::string(what) + " must be > 0, got " + std::to_string(v));
  };
  positive("dim", dim);
  positive("n_layers", n_layers);
  positive("n_heads", n_heads);
  positive("n_kv_heads", n_kv_heads);
  positive("ffn_dim", ffn_dim);
  positive("ctx_len", ctx_len);
  if (n_heads > 0 && n_kv_heads > 0 && n_heads % n_kv_heads != 0)
    e.push_back("n_heads " + std::to_string(n_heads) + " is not a multiple of n_kv_heads " + std::to_string(n_kv_heads));
  if (head_dim < 0) e.push_back("head_dim must be >= 0 (0 = dim / n_heads), got " + std::to_string(head_dim));
  const bool head_dim_undefined = head_dim == 0 && n_heads > 0 && dim % n_heads != 0;
  if (head_dim_undefined)
    e.push_back("dim " + std::to_string(dim) + " is not divisible by n_heads " + std::to_string(n_heads) +
                " (set head_dim explicitly)");
  else if (resolved_head_dim() % 2 != 0)
    e.push_back("head_dim " + std::to_string(resolved_head_dim()) + " must be even (RoPE rotates pairs)");
  // The family's facts (model/arch); an unknown arch has none, so each rule below reports it too.
  const ArchSpec* spec = find_arch(arch);
  const ArchFacts f = spec ? spec->facts : ArchFacts{};
  auto any = [](const ArchFacts&) { return true; };
  auto windowed = [](const ArchFacts& a) { return a.sliding_window; };
  auto longrope = [](const ArchFacts& a) { return a.rope_factors == RopeFactorTensors::longrope; };
  if (!spec) e.push_back("arch must be " + arch_names_where(any) + ", got '" + arch + "'");
  if (sliding_window < 0) e.push_back("sliding_window must be >= 0");
  if (sliding_window > 0 && !f.sliding_window)
    e.push_back("a sliding window is written for " + arch_names_where(windowed) + " only");
  if (f.tied_head && !tied_embeddings) e.push_back(arch + " ties its head to the embedding: set tied_embeddings");
  if (!f.interleaved_rope && rope_layout != RopeLayout::neox)
    e.push_back(arch + " rotates half-split (neox) pairs: set rope_layout = neox");
  if (!rope_freq_factors.empty() && int64_t(rope_freq_factors.size()) != resolved_head_dim() / 2)
    e.push_back("rope_freq_factors must hold head_dim / 2 = " + std::to_string(resolved_head_dim() / 2) + " values");
  if (!rope_factors_long.empty() &&
      (!longrope(f) || rope_factors_long.size() != rope_freq_factors.size() || rope_orig_ctx <= 0))
    e.push_back("LongRoPE (" + arch_names_where(longrope) +
                "): long factors need as many short ones (rope_freq_factors) and rope_orig_ctx");
  if (n_vocab < 259) e.push_back("n_vocab must be >= 259 (3 specials + 256 byte tokens), got " + std::to_string(n_vocab));
  if (!(rope_base > 1.0f)) e.push_back("rope_base must be > 1");
  if (!(rms_eps > 0.0f)) e.push_back("rms_eps must be > 0");
  if (!(std::isfinite(weight_std) && weight_std > 0.0f)) e.push_back("weight_std must be a finite number > 0");
  if (!find_type(weight_type))
    e.push_back("unsupported weight type id " + std::to_string(static_cast<uint32_t>(weight_type)));
  return e;
}

const SynthSpec* find_synth_preset(const std::string& name) {
  static const std::vector<SynthSpec> specs = [] {
    std::vector<SynthSpec> v;
    for (const Preset& p : kPresets) {
      SynthSpec s;
      s.name = p.name;
      s.dim = p.dim, s.n_layers = p.n_layers, s.n_heads = p.n_heads, s.n_kv_heads = p.n_kv_heads;
      s.ffn_dim = p.ffn_dim, s.n_vocab = p.n_vocab, s.ctx_len = p.ctx_len;
      s.rope_base = p.rope_base, s.rms_eps = p.rms_eps, s.tied_embeddings = p.tied;
      s.arch = p.arch, s.head_dim = p.head_dim, s.sliding_window = p.sliding_window;
      if (p.llama3_factor > 0)
        s.rope_freq_factors = llama3_rope_factors(p.llama3_factor, 1.0, 4.0, 8192.0, p.rope_base, s.resolved_head_dim());
      if (!find_arch(s.arch)->facts.interleaved_rope) s.rope_layout = RopeLayout::neox;
      v.push_back(s);
    }
    return v;
  }();
  for (const SynthSpec& s : specs)
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<std::string> synth_preset_names() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.push_back(p.name);
  return names;
}

DType synth_tensor_type(DType wanted, int64_t row_len) {
  const TypeTraits& t = type_traits(wanted);
  if (row_len % t.block_size == 0) return wanted;
  // As llama.cpp does for rows a type cannot tile: a smaller-block quant, else 16-bit.
  if (t.block_size > 32 && row_len % 32 == 0) return DType::Q8_0;
  return DType::F16;
}

void synthesize_model(const SynthSpec& spec, const std::string& out_path, int n_threads) {
  build(spec, n_threads).write(out_path);
}

std::vector<uint8_t> synthesize_model_bytes(const SynthSpec& spec, int n_threads) {
  return build(spec, n_threads).to_bytes();
}

}  // namespace tinfer
