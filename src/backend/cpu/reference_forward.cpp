// Reference forward pass, reading top to bottom against the math of a Llama-family decoder.
#include "backend/cpu/reference_forward.h"

#include <algorithm>
#include <cmath>

#include "model/rope.h"
#include "quant/type_table.h"

namespace tinfer {

std::vector<float> dequantize_tensor(const GgufTensor& t) {
  std::vector<float> out(t.elements());
  type_traits(t.type).to_float(t.data, out.data(), t.elements());
  return out;
}

namespace {

using Vec = std::vector<double>;

// out[r] = sum_c W[r][c] * x[c]; W is [rows][cols] row-major (GGUF: shape [cols, rows]).
Vec matvec(const std::vector<float>& w, const Vec& x, int64_t rows) {
  const int64_t cols = int64_t(x.size());
  Vec out(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double acc = 0;
    const float* row = &w[r * cols];
    for (int64_t c = 0; c < cols; ++c) acc += double(row[c]) * x[c];
    out[r] = acc;
  }
  return out;
}

Vec rmsnorm(const Vec& x, const std::vector<float>& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  double inv = 1.0 / std::sqrt(ss / double(x.size()) + eps);
  Vec out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] * inv * double(w[i]);
  return out;
}

// Optional tensor: dequantized, or empty when the architecture has none.
std::vector<float> optional_tensor(const GgufTensor* t) { return t ? dequantize_tensor(*t) : std::vector<float>{}; }

// x += b (when the projection has a bias).
void add_bias(Vec& x, const std::vector<float>& b) {
  for (size_t i = 0; i < b.size(); ++i) x[i] += b[i];
}

// RMSNorm of each head_dim slice of x with the same weights (qwen3's q/k norm); nothing when w is empty.
void head_rmsnorm(Vec& x, const std::vector<float>& w, int64_t head_dim, double eps) {
  if (w.empty()) return;
  for (size_t h = 0; h * size_t(head_dim) < x.size(); ++h) {
    const Vec head(x.begin() + int64_t(h) * head_dim, x.begin() + int64_t(h + 1) * head_dim);
    const Vec n = rmsnorm(head, w, eps);
    std::copy(n.begin(), n.end(), x.begin() + int64_t(h) * head_dim);
  }
}

// The gated MLP's activation of the gate value.
double gated_act(FfnAct act, double g) {
  switch (act) {
    case FfnAct::silu: return g / (1.0 + std::exp(-g));
    case FfnAct::gelu_tanh: return 0.5 * g * (1.0 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
  }
  return 0;
}

// A fused [rows][cols] matrix cut into consecutive blocks of `rows` output rows each.
std::vector<std::vector<float>> split_rows(const std::vector<float>& w, int64_t cols, std::vector<int64_t> rows) {
  std::vector<std::vector<float>> out;
  size_t at = 0;
  for (int64_t r : rows) {
    out.emplace_back(w.begin() + int64_t(at), w.begin() + int64_t(at) + r * cols);
    at += size_t(r * cols);
  }
  return out;
}

}  // namespace

ReferenceForward::ReferenceForward(const Model& model, LayerSkip skip, int64_t max_positions)
    : model_(model), skip_(std::move(skip)), max_positions_(max_positions > 0 ? max_positions : model.config().ctx_len) {
  const DecoderTensors& t = model.tensors();
  tok_embd_ = dequantize_tensor(*t.tok_embd);
  output_norm_ = dequantize_tensor(*t.output_norm);
  output_ = t.output == t.tok_embd ? tok_embd_ : dequantize_tensor(*t.output);
  const ModelConfig& c = model.config();
  for (const LayerTensors& l : t.layers) {
    // Fused tensors (phi3) are split by output rows: q | k | v and gate | up, each row `dim` long.
    std::vector<std::vector<float>> qkv, gu;
    if (l.wqkv) qkv = split_rows(dequantize_tensor(*l.wqkv), c.dim, {c.q_dim(), c.kv_dim(), c.kv_dim()});
    else qkv = {dequantize_tensor(*l.wq), dequantize_tensor(*l.wk), dequantize_tensor(*l.wv)};
    if (l.w_gateup) gu = split_rows(dequantize_tensor(*l.w_gateup), c.dim, {c.ffn_dim, c.ffn_dim});
    else gu = {dequantize_tensor(*l.w_gate), dequantize_tensor(*l.w_up)};
    layers_.push_back({dequantize_tensor(*l.attn_norm), qkv[0], qkv[1], qkv[2], dequantize_tensor(*l.wo),
                       dequantize_tensor(*l.ffn_norm), gu[0], gu[1], dequantize_tensor(*l.w_down),
                       optional_tensor(l.bq), optional_tensor(l.bk), optional_tensor(l.bv), optional_tensor(l.q_norm),
                       optional_tensor(l.k_norm), optional_tensor(l.post_attn_norm), optional_tensor(l.post_ffn_norm)});
  }
}

std::vector<std::vector<float>> ReferenceForward::logits(const std::vector<int32_t>& tokens,
                                                         const std::vector<int64_t>& want,
                                                         const std::vector<int32_t>& exit_after) const {
  const ModelConfig& c = model_.config();
  const int64_t n = int64_t(tokens.size()), hd = c.head_dim, group = c.n_heads / c.n_kv_heads;
  std::vector<Vec> x(n);  // residual stream [n][dim]
  for (int64_t i = 0; i < n; ++i) {
    x[i] = Vec(tok_embd_.begin() + tokens[i] * c.dim, tok_embd_.begin() + (tokens[i] + 1) * c.dim);
    for (double& e : x[i]) e *= double(c.embed_scale);
  }

  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& L = layers_[l];
    const bool attn_on = !skip_.skips_attn(int64_t(l)), mlp_on = !skip_.skips_mlp(int64_t(l));
    // Positions that exited after fewer layers keep their stream (K and V of this layer still come from it).
    auto frozen = [&](int64_t i) { return size_t(i) < exit_after.size() && exit_after[size_t(i)] > 0 && int64_t(l) >= exit_after[size_t(i)]; };
    std::vector<Vec> q(n), k(n), v(n);
    for (int64_t i = 0; i < n && attn_on; ++i) {
      Vec h = rmsnorm(x[i], L.attn_norm, c.rms_eps);
      q[i] = matvec(L.wq, h, c.q_dim());  // [n_heads * head_dim]
      k[i] = matvec(L.wk, h, c.kv_dim());  // [n_kv_heads * head_dim]
      v[i] = matvec(L.wv, h, c.kv_dim());
      add_bias(q[i], L.bq), add_bias(k[i], L.bk), add_bias(v[i], L.bv);
      head_rmsnorm(q[i], L.q_norm, hd, c.rms_eps), head_rmsnorm(k[i], L.k_norm, hd, c.rms_eps);
      const RopeParams rp = rope_params(c, c.local_rope(int64_t(l)), max_positions_);
      rope_reference(q[i].data(), c.n_heads, hd, c.rope_dim, i, rp.base, rp.scale, c.rope_layout, rp.freq_factors,
                     rp.attn_factor);
      rope_reference(k[i].data(), c.n_kv_heads, hd, c.rope_dim, i, rp.base, rp.scale, c.rope_layout, rp.freq_factors,
                     rp.attn_factor);
    }
    const int64_t window = c.window(int64_t(l));
    for (int64_t i = 0; i < n && attn_on; ++i) {
      Vec att(c.q_dim(), 0.0);
      for (int64_t h = 0; h < c.n_heads; ++h) {
        const int64_t kvh = h / group;  // grouped-query attention: heads share kv head h / group
        // Positions j in (i - window, i] (all of 0..i without a window).
        const int64_t lo = window > 0 ? std::max<int64_t>(0, i - window + 1) : 0;
        Vec score(i + 1, 0.0);
        double mx = -INFINITY;
        for (int64_t j = lo; j <= i; ++j) {
          double s = 0;
          for (int64_t d = 0; d < hd; ++d) s += q[i][h * hd + d] * k[j][kvh * hd + d];
          score[j] = s * double(c.scores_scale());
          mx = std::max(mx, score[j]);
        }
        double sum = 0;
        for (int64_t j = lo; j <= i; ++j) sum += (score[j] = std::exp(score[j] - mx));
        for (int64_t j = lo; j <= i; ++j)
          for (int64_t d = 0; d < hd; ++d) att[h * hd + d] += score[j] / sum * v[j][kvh * hd + d];
      }
      if (frozen(i)) continue;
      Vec o = matvec(L.wo, att, c.dim);
      if (!L.post_attn_norm.empty()) o = rmsnorm(o, L.post_attn_norm, c.rms_eps);
      for (int64_t d = 0; d < c.dim; ++d) x[i][d] += o[d];
    }
    for (int64_t i = 0; i < n && mlp_on; ++i) {
      if (frozen(i)) continue;
      Vec h = rmsnorm(x[i], L.ffn_norm, c.rms_eps);
      Vec g = matvec(L.w_gate, h, c.ffn_dim), u = matvec(L.w_up, h, c.ffn_dim);
      for (int64_t f = 0; f < c.ffn_dim; ++f) g[f] = gated_act(c.ffn_act, g[f]) * u[f];  // SwiGLU / GeGLU
      Vec down = matvec(L.w_down, g, c.dim);
      if (!L.post_ffn_norm.empty()) down = rmsnorm(down, L.post_ffn_norm, c.rms_eps);
      for (int64_t d = 0; d < c.dim; ++d) x[i][d] += down[d];
    }
  }

  std::vector<int64_t> rows = want;
  if (rows.empty())
    for (int64_t i = 0; i < n; ++i) rows.push_back(i);
  std::vector<std::vector<float>> out;
  for (int64_t i : rows) {
    Vec h = rmsnorm(x[i], output_norm_, c.rms_eps);
    Vec l = matvec(output_, h, c.n_vocab);
    out.emplace_back(l.begin(), l.end());
  }
  return out;
}

}  // namespace tinfer
