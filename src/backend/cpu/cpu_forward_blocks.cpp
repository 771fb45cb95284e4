// CpuForward's decoder-layer blocks (cpu_forward.cpp runs them in its layer loop): the attention block, the
// attention residual (fused with the MLP's norm), the MLP block. Shapes: x_ [n][dim] the residual stream, xb_
// [n][dim] a block's input and then its output, qkv_ [n][q_dim | kv_dim | kv_dim], att_ [n][q_dim], gu_
// [n][ffn | ffn], ffn_in_ [n][ffn]. Rows [0, na) are the slots still running; RoPE and the KV write also run on
// [na, n), the rows that exited (their deeper K and V come from their exit state).
//
// Tensor parallelism (the next step) splits the QKV / gate-up GEMMs by output rows (heads, ffn columns) and the
// output / down GEMMs by input columns: each block's output then is a partial sum on every device, and the
// all-reduce of xb_ ([na][dim]) goes at the "block boundary" marked in attention_block and mlp_block, before
// any norm or residual reads whole rows.
#include <cstring>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "kernels/attention.h"
#include "kernels/kernels.h"
#include "backend/cpu/cpu_forward.h"

namespace tinfer {

void CpuForward::per_token(int64_t count, FunctionRef<void(int64_t)> fn) {
  if (count == 1) return fn(0);
  pool_.parallel_for(count, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) fn(i);
  });
}

void CpuForward::attention_block(int64_t l, Step& s) {
  const ModelConfig& c = config();
  const Layer& L = layers_[size_t(l)];
  const int64_t dim = c.dim, n = s.n, na = s.na;
  OpProfile* prof = &profile_;
  // Every slot, exited ones too: their K and V of this layer come from their exit state.
  if (const std::optional<int32_t> corr = fusable(fused_.norm, L.qkv_corr)) {  // the norm fused with the quantization
    RowPrologue p;
    p.kind = RowPrologue::kRmsNorm, p.x = x_.data(), p.ldx = dim, p.norm_w = L.attn_norm.data(), p.eps = c.rms_eps;
    prologue_quantize(active_kernels(), p, n, dim, *corr, act_quant_, pool_, panel_, prof);
    L.wqkv.run(panel_, qkv_.data(), tmp_, pool_, prof, Op::kMatmulQkv);  // [n][q | k | v]
  } else {
    {
      OpTimer t(prof, Op::kNorm);
      per_token(n, [&](int64_t i) { rmsnorm(&x_[i * dim], L.attn_norm.data(), &xb_[i * dim], dim, c.rms_eps); });
    }
    if (observer_) observer_(l, LinearInput::kAttnIn, xb_.data(), na, dim);
    L.wqkv.run(xb_.data(), n, qkv_.data(), tmp_, pool_, prof, Op::kMatmulQkv, act_quant_);  // [n][q | k | v]
  }
  rope_and_store(l, s);
  if (na == 0) return;
  s.att.window = c.window(l);
  // The layer's blocks: the window pool's tables for a sliding-window layer kept apart, else the main ones.
  s.att.block_tables = (s.kv.in_window_group(l) ? att_window_tables_ : att_tables_).data();
  s.att.kv = s.kv.layer_view(l);
  {
    const double attended = s.att.window > 0 ? s.attended_window : s.attended_full;
    const double att_bytes = attended * double(s.kv.precision().layer_bytes_per_token(l, c.n_kv_heads, c.head_dim));
    OpTimer t(prof, Op::kAttention, att_bytes, attended * double(c.n_heads * c.head_dim) * 4);
    paged_attention(s.att, pool_);
  }
  // att_ rows have stride q_dim(); wo reads [na][q_dim] and writes [na][dim] into xb_.
  if (observer_) observer_(l, LinearInput::kAttnOut, att_.data(), na, c.q_dim());
  matmul(L.wo, att_.data(), na, xb_.data(), pool_, prof, Op::kMatmulOut, act_quant_);
  // ---- Block boundary (tensor parallel: all-reduce xb_ [na][dim] here; the post-norm needs whole rows). ----
  if (!L.post_attn_norm.empty()) {
    OpTimer t(prof, Op::kNorm);
    per_token(na, [&](int64_t i) { rmsnorm(&xb_[i * dim], L.post_attn_norm.data(), &xb_[i * dim], dim, c.rms_eps); });
  }
  if (observer_) observer_(l, LinearInput::kAttnDelta, xb_.data(), na, dim);
}

void CpuForward::rope_and_store(int64_t l, Step& s) {
  // Per token: RoPE on q and k, then K smoothing (if the cache has it) and the KV write. An observer sees
  // q | k | v between the two (one pass over the tokens without one).
  const ModelConfig& c = config();
  const Layer& L = layers_[size_t(l)];
  KvStorage& kv = s.kv;
  OpTimer t(&profile_, Op::kRopeKv);
  if (!kv.precision().has_kv(l))
    fail("cpu backend: layer " + std::to_string(l) + "'s attention runs but the KV cache holds no KV for it (a "
         "skip plan applied after the cache was allocated?)");
  const std::vector<const int32_t*>& tables = kv.in_window_group(l) ? att_window_tables_ : att_tables_;
  const RopeTable& rope_table = c.local_rope(l) ? rope_local_ : rope_;
  const float* ks = kv.precision().k_smoothing(l);  // [kv_dim] or nullptr
  const int64_t qkv_w = c.q_dim() + 2 * c.kv_dim(), hd = c.head_dim, group = c.n_heads / c.n_kv_heads;
  const int64_t bs = kv.block_size();
  auto rope = [&](int64_t i) {
    float* q = &qkv_[i * qkv_w];
    if (!L.bqkv.empty()) add_inplace(q, L.bqkv.data(), qkv_w);
    if (!L.q_norm.empty()) {  // each q and k head normalised on its own (in place), then rotated
      for (int64_t h = 0; h < c.n_heads; ++h) rmsnorm(q + h * hd, L.q_norm.data(), q + h * hd, hd, c.rms_eps);
      float* k = q + c.q_dim();
      for (int64_t h = 0; h < c.n_kv_heads; ++h) rmsnorm(k + h * hd, L.k_norm.data(), k + h * hd, hd, c.rms_eps);
    }
    rope_table.apply(q, c.n_heads, slot_pos_[i]);
    rope_table.apply(q + c.q_dim(), c.n_kv_heads, slot_pos_[i]);
  };
  auto store = [&](int64_t i) {
    float* q = &qkv_[i * qkv_w];
    float* k = q + c.q_dim();
    const float* v = k + c.kv_dim();
    if (ks) {  // q.k unchanged: K / s is what gets quantized, q * s what reads it
      for (int64_t d = 0; d < c.kv_dim(); ++d) k[d] /= ks[d];
      for (int64_t h = 0; h < c.n_heads; ++h)
        for (int64_t d = 0; d < hd; ++d) q[h * hd + d] *= ks[(h / group) * hd + d];
    }
    const int64_t pos = slot_pos_[i];
    kv.write(l, tables[size_t(i)][pos / bs], pos % bs, k, v);
  };
  if (!observer_) {
    per_token(s.n, [&](int64_t i) { rope(i), store(i); });
  } else {
    per_token(s.n, rope);
    observer_(l, LinearInput::kAttnQkv, qkv_.data(), s.na, qkv_w);
    per_token(s.n, store);
  }
}

void CpuForward::attention_residual(int64_t l, Step& s, bool attn_on, bool mlp_on) {
  // The attention residual add, fused with the MLP's norm when both blocks run.
  if (!attn_on && !mlp_on) return;
  const ModelConfig& c = config();
  const Layer& L = layers_[size_t(l)];
  const int64_t dim = c.dim;
  s.ffn_in_quantized = false;
  if (mlp_on) {
    if (const std::optional<int32_t> corr = fusable(fused_.norm, L.gateup_corr)) {  // x_ += xb_, norm, quantize: one pass
      RowPrologue p;
      p.kind = attn_on ? RowPrologue::kAddRmsNorm : RowPrologue::kRmsNorm;
      p.x = attn_on ? xb_.data() : x_.data(), p.ldx = dim, p.resid = x_.data(), p.ld_resid = dim;
      p.norm_w = L.ffn_norm.data(), p.eps = c.rms_eps;
      prologue_quantize(active_kernels(), p, s.na, dim, *corr, act_quant_, pool_, panel_, &profile_);
      s.ffn_in_quantized = true;
      return;
    }
  }
  OpTimer t(&profile_, Op::kNorm);
  if (attn_on && mlp_on)
    per_token(s.na, [&](int64_t i) {
      add_inplace(&x_[i * dim], &xb_[i * dim], dim);
      rmsnorm(&x_[i * dim], L.ffn_norm.data(), &xb_[i * dim], dim, c.rms_eps);
    });
  else if (attn_on)
    per_token(s.na, [&](int64_t i) { add_inplace(&x_[i * dim], &xb_[i * dim], dim); });
  else
    per_token(s.na, [&](int64_t i) { rmsnorm(&x_[i * dim], L.ffn_norm.data(), &xb_[i * dim], dim, c.rms_eps); });
}

void CpuForward::mlp_block(int64_t l, Step& s) {
  const ModelConfig& c = config();
  const Layer& L = layers_[size_t(l)];
  const int64_t dim = c.dim, ffn = c.ffn_dim, na = s.na;
  OpProfile* prof = &profile_;
  if (s.ffn_in_quantized) {
    L.w_gateup.run(panel_, gu_.data(), tmp_, pool_, prof, Op::kMatmulGateUp);  // [na][gate | up]
  } else {
    if (observer_) observer_(l, LinearInput::kFfnIn, xb_.data(), na, dim);
    L.w_gateup.run(xb_.data(), na, gu_.data(), tmp_, pool_, prof, Op::kMatmulGateUp, act_quant_);
  }
  const bool gelu = c.ffn_act == FfnAct::gelu_tanh;
  if (const std::optional<int32_t> corr = fusable(fused_.glu, L.down_corr)) {  // the GLU product fused with the quantization
    RowPrologue p;
    p.kind = gelu ? RowPrologue::kGeluMul : RowPrologue::kSiluMul, p.gate_up = gu_.data(), p.ldx = 2 * ffn;
    prologue_quantize(active_kernels(), p, na, ffn, *corr, act_quant_, pool_, panel_, prof);
    matmul(L.w_down, panel_, xb_.data(), pool_, active_kernels(), prof, Op::kMatmulDown);
  } else {
    mlp_down_unfused(l, s);
  }
  mlp_residual(l, s);
}

void CpuForward::mlp_down_unfused(int64_t l, Step& s) {
  const ModelConfig& c = config();
  const Layer& L = layers_[size_t(l)];
  const int64_t ffn = c.ffn_dim, na = s.na;
  OpProfile* prof = &profile_;
  const bool gelu = c.ffn_act == FfnAct::gelu_tanh;
  {
    // SwiGLU or GeGLU, compacted to [na][ffn] for the down GEMM.
    OpTimer t(prof, Op::kActivation);
    per_token(na, [&](int64_t i) {
      float* g = &gu_[i * 2 * ffn];
      if (gelu) gelu_mul(g, g + ffn, ffn);
      else silu_mul(g, g + ffn, ffn);
      std::memcpy(&ffn_in_[i * ffn], g, ffn * sizeof(float));
    });
  }
  if (observer_) observer_(l, LinearInput::kFfnMid, ffn_in_.data(), na, ffn);
  matmul(L.w_down, ffn_in_.data(), na, xb_.data(), pool_, prof, Op::kMatmulDown, act_quant_);
}

void CpuForward::mlp_residual(int64_t l, Step& s) {
  const ModelConfig& c = config();
  const Layer& L = layers_[size_t(l)];
  const int64_t dim = c.dim, na = s.na;
  OpProfile* prof = &profile_;
  // ---- Block boundary (tensor parallel: all-reduce xb_ [na][dim] here, before the observer and the residual). ----
  if (observer_) observer_(l, LinearInput::kMlpDelta, xb_.data(), na, dim);
  OpTimer t(prof, Op::kResidual);
  if (!L.post_ffn_norm.empty())
    per_token(na, [&](int64_t i) {
      rmsnorm(&xb_[i * dim], L.post_ffn_norm.data(), &xb_[i * dim], dim, c.rms_eps);
      add_inplace(&x_[i * dim], &xb_[i * dim], dim);
    });
  else
    per_token(na, [&](int64_t i) { add_inplace(&x_[i * dim], &xb_[i * dim], dim); });
}

}  // namespace tinfer
