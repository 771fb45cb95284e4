// CpuForward: packing at load, then per step: embed -> per layer (exit point, attention block: norm, QKV GEMM,
// RoPE, KV write, paged attention, output GEMM; residual; MLP block: norm, gate/up GEMM, SwiGLU, down GEMM +
// residual) -> head. The blocks are in cpu_forward_blocks.cpp, the slots and early exit in cpu_forward_exit.cpp.
#include "backend/cpu/cpu_forward.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "kernels/attention.h"
#include "backend/cpu/reference_forward.h"
#include "backend/cpu/packed_cache.h"
#include "backend/cpu/weight_packer.h"
#include "quant/type_table.h"

namespace tinfer {

CpuForward::Stacked CpuForward::pack_stacked(WeightPacker& packer, std::initializer_list<const GgufTensor*> parts) {
  const GgufTensor* first = *parts.begin();
  Stacked s;
  bool same = true;
  for (auto* t : parts) {
    same = same && t->type == first->type;
    s.rows += t->shape[1];
  }
  if (!same) {
    for (auto* t : parts) s.parts.push_back(packer.pack(*t));
    return s;
  }
  s.parts.push_back(packer.pack(std::span<const GgufTensor* const>(parts.begin(), parts.size())));  // rows stacked
  return s;
}

void CpuForward::Stacked::run(const float* x, int64_t n, float* y, std::vector<float>& tmp, ThreadPool& pool,
                              OpProfile* prof, Op role, ActQuant act) const {
  if (parts.size() == 1) return matmul(parts[0], x, n, y, pool, prof, role, act);
  int64_t col = 0;
  for (const PackedMatrix& p : parts) {
    tmp.resize(n * p.rows);
    matmul(p, x, n, tmp.data(), pool, prof, role, act);
    for (int64_t i = 0; i < n; ++i) std::memcpy(y + i * rows + col, &tmp[i * p.rows], p.rows * sizeof(float));
    col += p.rows;
  }
}

void CpuForward::Stacked::run(const ActPanel& acts, float* y, std::vector<float>& tmp, ThreadPool& pool,
                              OpProfile* prof, Op role) const {
  const KernelTable& kt = active_kernels();
  if (parts.size() == 1) return matmul(parts[0], acts, y, pool, kt, prof, role);
  const int64_t n = acts.rows();
  int64_t col = 0;
  for (const PackedMatrix& p : parts) {
    tmp.resize(n * p.rows);
    matmul(p, acts, tmp.data(), pool, kt, prof, role);
    for (int64_t i = 0; i < n; ++i) std::memcpy(y + i * rows + col, &tmp[i * p.rows], p.rows * sizeof(float));
    col += p.rows;
  }
}

std::optional<int32_t> CpuForward::Stacked::panel_corr() const {
  std::optional<int32_t> corr = act_panel_corr(parts.front());
  for (const PackedMatrix& p : parts)
    if (act_panel_corr(p) != corr) return std::nullopt;
  return corr;
}

namespace {

// The bytes CpuForward packs: every projection and the head (the progress line's whole).
size_t source_bytes(const DecoderTensors& t) {
  size_t total = t.output->bytes;
  for (const LayerTensors& lt : t.layers)
    for (const GgufTensor* w : {lt.wqkv, lt.wq, lt.wk, lt.wv, lt.wo, lt.w_gateup, lt.w_gate, lt.w_up, lt.w_down})
      if (w) total += w->bytes;
  return total;
}

int64_t checked_positions(const ModelConfig& c, int64_t max_positions) {
  if (max_positions <= 0) return c.ctx_len;
  check(max_positions <= c.ctx_len, "a context of " + std::to_string(max_positions) +
                                        " positions exceeds the model's context length of " +
                                        std::to_string(c.ctx_len) + " (RoPE positions past it are untrained)");
  return max_positions;
}

}  // namespace

CpuForward::CpuForward(const Model& model, const BackendOptions& opts)
    : CpuForward(model, opts.pool ? nullptr : std::make_unique<ThreadPool>(opts.threads), opts) {}

CpuForward::CpuForward(const Model& model, ThreadPool& pool, int64_t max_positions)
    : CpuForward(model, nullptr, BackendOptions{.pool = &pool, .max_positions = max_positions}) {}

CpuForward::CpuForward(const Model& model, std::unique_ptr<ThreadPool> owned, const BackendOptions& opts)
    : model_(model),
      owned_pool_(std::move(owned)),
      pool_(opts.pool ? *opts.pool : *owned_pool_),
      rope_(model.config(), checked_positions(model.config(), opts.max_positions)),
      rope_local_(model.config().rope_base_swa > 0.f ? RopeTable(model.config(), rope_.n_positions(), true) : RopeTable()),
      act_quant_(opts.act_quant) {
  set_layer_skip(opts.skip);
  set_early_exit(opts.early_exit);
  const ModelConfig& c = model.config();
  check(c.n_heads / c.n_kv_heads <= 64, "grouped-query attention with more than 64 heads per KV head is unsupported");
  const DecoderTensors& t = model.tensors();
  std::unique_ptr<PackedCache> cache =
      opts.packed_cache.empty() ? nullptr
                                : std::make_unique<PackedCache>(opts.packed_cache, model, pool_, !opts.packed_cache_copy);
  WeightPacker packer(pool_, source_bytes(t), cache.get());  // packs on every thread, gives the file's pages back
  for (const LayerTensors& lt : t.layers) {
    Layer L;
    L.attn_norm = dequantize_tensor(*lt.attn_norm);
    L.ffn_norm = dequantize_tensor(*lt.ffn_norm);
    L.wqkv = lt.wqkv ? pack_stacked(packer, {lt.wqkv}) : pack_stacked(packer, {lt.wq, lt.wk, lt.wv});  // q | k | v
    L.wo = packer.pack(*lt.wo);
    L.w_gateup = lt.w_gateup ? pack_stacked(packer, {lt.w_gateup}) : pack_stacked(packer, {lt.w_gate, lt.w_up});
    L.w_down = packer.pack(*lt.w_down);
    if (lt.bq) {  // the biases of q | k | v, side by side as the stacked projection writes its rows
      for (const GgufTensor* b : {lt.bq, lt.bk, lt.bv}) {
        const std::vector<float> v = dequantize_tensor(*b);
        L.bqkv.insert(L.bqkv.end(), v.begin(), v.end());
      }
    }
    if (lt.q_norm) L.q_norm = dequantize_tensor(*lt.q_norm), L.k_norm = dequantize_tensor(*lt.k_norm);
    if (lt.post_attn_norm) L.post_attn_norm = dequantize_tensor(*lt.post_attn_norm);
    if (lt.post_ffn_norm) L.post_ffn_norm = dequantize_tensor(*lt.post_ffn_norm);
    L.qkv_corr = L.wqkv.panel_corr(), L.gateup_corr = L.w_gateup.panel_corr(), L.down_corr = act_panel_corr(L.w_down);
    layers_.push_back(std::move(L));
  }
  output_norm_ = dequantize_tensor(*t.output_norm);
  output_ = packer.pack(*t.output);
  packer.release(*t.tok_embd);  // read a row per token from now on (a tied head was packed just above)
  if (cache) {
    const std::string done = cache->finish();  // writes the file when some matrix did not come from it
    if (!done.empty()) std::fprintf(stderr, "loading: %s\n", done.c_str());
  }
}

size_t CpuForward::packed_bytes(bool skipped_too) const {
  size_t total = output_.data.size();
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (!skipped_too) {
      total += layer_bytes(int64_t(l));
      continue;
    }
    const Layer& L = layers_[l];
    for (auto* s : {&L.wqkv, &L.w_gateup})
      for (const PackedMatrix& p : s->parts) total += p.data.size();
    total += L.wo.data.size() + L.w_down.data.size();
  }
  return total;
}

size_t CpuForward::layer_bytes(int64_t l) const {
  const Layer& L = layers_[size_t(l)];
  size_t total = 0;
  if (!skip_.skips_attn(l)) {
    for (const PackedMatrix& p : L.wqkv.parts) total += p.data.size();
    total += L.wo.data.size();
  }
  if (!skip_.skips_mlp(l)) {
    for (const PackedMatrix& p : L.w_gateup.parts) total += p.data.size();
    total += L.w_down.data.size();
  }
  return total;
}

size_t CpuForward::qkv_bytes(int64_t l) const {
  if (skip_.skips_attn(l)) return 0;
  size_t total = 0;
  for (const PackedMatrix& p : layers_[size_t(l)].wqkv.parts) total += p.data.size();
  return total;
}

void CpuForward::ensure_scratch(int64_t n, int64_t n_logits) {
  const ModelConfig& c = config();
  if (n > cap_tokens_) {
    cap_tokens_ = n;
    x_.resize(n * c.dim);
    xb_.resize(n * c.dim);
    qkv_.resize(n * (c.q_dim() + 2 * c.kv_dim()));
    att_.resize(n * std::max(c.q_dim(), c.dim));
    gu_.resize(n * 2 * c.ffn_dim);
    ffn_in_.resize(n * c.ffn_dim);
  }
  if (n_logits > cap_logits_) {
    cap_logits_ = n_logits;
    hidden_.resize(n_logits * c.dim);
  }
}

void CpuForward::embed(const ForwardBatch& batch) {
  const ModelConfig& c = config();
  const GgufTensor& e = *model_.tensors().tok_embd;
  const TypeTraits& tt = type_traits(e.type);
  const size_t rb = row_bytes(e.type, c.dim);
  for (size_t i = 0; i < batch.tokens.size(); ++i) {
    int32_t tok = batch.tokens[i];
    if (tok < 0 || tok >= c.n_vocab) fail("token id " + std::to_string(tok) + " out of range");
    tt.to_float(e.data + rb * tok, &x_[i * c.dim], c.dim);
    if (c.embed_scale != 1.f) scale_inplace(&x_[i * c.dim], c.embed_scale, c.dim);
  }
}

CpuForward::~CpuForward() = default;

void CpuForward::set_layer_skip(LayerSkip skip) {
  const size_t n = size_t(model_.config().n_layers);
  check((skip.attn.empty() || skip.attn.size() == n) && (skip.mlp.empty() || skip.mlp.size() == n),
        "layer skip names " + std::to_string(std::max(skip.attn.size(), skip.mlp.size())) +
            " layers but the model has " + std::to_string(n));
  skip_ = std::move(skip);
}

std::unique_ptr<KvCache> CpuForward::allocate_kv(int64_t n_blocks, int64_t block_size, const KvPrecision& precision,
                                                 int64_t n_window_blocks) {
  return std::make_unique<KvStorage>(config(), n_blocks, block_size, precision, n_window_blocks);
}

std::unique_ptr<Backend> make_cpu_backend(const Model& model, const BackendOptions& opts) {
  return std::make_unique<CpuForward>(model, opts);
}

void CpuForward::forward(const ForwardBatch& batch, KvCache& kv, float* logits) {
  auto* storage = dynamic_cast<KvStorage*>(&kv);
  check(storage != nullptr, "cpu backend: the KV cache was allocated by another backend");
  forward(batch, *storage, logits);
}

int64_t CpuForward::checked_layers(const ForwardBatch& batch, const KvStorage& kv) const {
  const ModelConfig& c = config();
  // (Messages built only on failure: a step allocates nothing.)
  for (int32_t p : batch.positions)  // once here, so the per-token workers never see a bad position
    if (p < 0 || p >= rope_.n_positions())
      fail("position " + std::to_string(p) + " outside this forward's context [0, " +
           std::to_string(rope_.n_positions()) + ")");
  const int64_t n_layers = batch.n_layers > 0 ? std::min<int64_t>(batch.n_layers, c.n_layers) : c.n_layers;
  if (kv.n_layers() < n_layers)
    fail("cpu backend: the KV cache holds " + std::to_string(kv.n_layers()) + " layers, the forward runs " +
         std::to_string(n_layers));
  check(kv.has_window_group() == !batch.window_tables.empty() &&
            (batch.window_tables.empty() || batch.window_tables.size() == batch.block_tables.size()),
        "cpu backend: the batch's window tables do not match the cache's sliding-window pool");
  return n_layers;
}

void CpuForward::begin_step(Step& s) {
  const ModelConfig& c = config();
  ensure_scratch(s.n, int64_t(s.batch.logit_rows.size()));
  {
    OpTimer t(&profile_, Op::kEmbed);
    embed(s.batch);
  }
  // Slots: the step's rows, in batch order until early exit moves the rows that exit behind the ones still
  // running ([0, na) run the whole layer; [na, n) exited: only their K and V are written, from their exit state).
  s.exits = exit_.enabled() && s.batch.n_layers == 0 && s.logits != nullptr;
  begin_slots(s.batch, s.exits);
  {  // the highest block each KV group writes this step: its pages resident before the workers write
    int64_t top[2] = {-1, -1};
    const int64_t bs = s.kv.block_size();
    for (int64_t i = 0; i < s.n; ++i) {
      const int64_t b = slot_pos_[size_t(i)] / bs;
      top[0] = std::max<int64_t>(top[0], att_tables_[size_t(i)][b]);
      if (!att_window_tables_.empty()) top[1] = std::max<int64_t>(top[1], att_window_tables_[size_t(i)][b]);
    }
    for (int g = 0; g < 2; ++g)
      if (top[g] >= 0) s.kv.populate_through(g, top[g], &pool_);
  }
  s.na = s.n;
  AttentionArgs& att = s.att;
  att.n_heads = c.n_heads, att.n_kv_heads = c.n_kv_heads, att.head_dim = c.head_dim;
  att.scale = c.scores_scale();
  att.n_tokens = s.n;
  att.positions = slot_pos_.data();
  att.block_tables = att_tables_.data();
  att.q = qkv_.data(), att.q_stride = c.q_dim() + 2 * c.kv_dim();  // q is the first q_dim of each QKV row
  att.out = att_.data(), att.out_stride = c.q_dim();
  // Attention bytes per layer are the attended positions x the layer's K and V bytes per token (an upper bound:
  // prefill rereads from cache).
  auto attended_in = [&](int64_t window) {
    double a = 0;
    for (int32_t p : s.batch.positions) a += window > 0 ? double(std::min<int64_t>(p + 1, window)) : double(p) + 1;
    return a;
  };
  s.attended_full = attended_in(0), s.attended_window = attended_in(c.sliding_window);
}

void CpuForward::exit_point(int64_t l, Step& s) {
  if (!s.exits || s.next_exit >= exit_.layers.size() || exit_.layers[s.next_exit] != l) return;
  s.na = exit_check(l, s.na, s.logits);
  s.att.n_tokens = s.na;
  ++s.next_exit;
}

// The step as a pipeline of blocks: embed -> per layer (exit point, attention block, residual, MLP block) -> head.
// Each block leaves its output in xb_; the residual adds it to x_. Tensor parallel: the all-reduce of xb_ sits
// at the end of each block (attention_block, mlp_block), so the exit points, the residual and the head see whole
// rows on every device.
void CpuForward::forward(const ForwardBatch& batch, KvStorage& kv, float* logits) {
  Step s{batch, kv, logits};
  s.n = int64_t(batch.tokens.size());
  if (s.n == 0) return;
  s.n_layers = checked_layers(batch, kv);
  begin_step(s);
  for (int64_t l = 0; l < s.n_layers; ++l) {
    exit_point(l, s);
    if (observer_) observer_(l, LinearInput::kResidual, x_.data(), s.na, config().dim);
    const bool attn_on = !skip_.skips_attn(l), mlp_on = !skip_.skips_mlp(l);
    if (attn_on) attention_block(l, s);
    if (s.na == 0) continue;  // every row exited: only the deeper layers' KV of the exited rows is left to write
    attention_residual(l, s, attn_on, mlp_on);
    if (mlp_on) mlp_block(l, s);
  }
  final_logits(batch, s.na, logits);
}

}  // namespace tinfer
