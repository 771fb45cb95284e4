// RoPE: theta_i = pos / scale * base^(-2i / rope_dim); interleaved rotates (2i, 2i+1), neox (i, i + rope_dim/2).
#include "model/rope.h"

#include <cmath>

#include "tinfer/error.h"

namespace tinfer {

RopeParams rope_params(const ModelConfig& cfg, bool local, int64_t n_positions) {
  if (local) return {cfg.rope_base_swa, 1.0, nullptr, 1.0};
  const std::vector<float>& f =
      !cfg.rope_freq_factors_long.empty() && n_positions > cfg.rope_orig_ctx ? cfg.rope_freq_factors_long : cfg.rope_freq_factors;
  return {cfg.rope_base, cfg.rope_scale, f.empty() ? nullptr : f.data(), cfg.rope_attn_factor};
}

RopeTable::RopeTable(const ModelConfig& cfg, int64_t n_pos, bool local)
    : head_dim_(cfg.head_dim), rope_dim_(cfg.rope_dim), layout_(cfg.rope_layout) {
  check(n_pos >= 1, "RoPE table: need at least one position");
  const RopeParams rp = rope_params(cfg, local, n_pos);
  base_ = rp.base, scale_ = rp.scale, attn_factor_ = rp.attn_factor;
  if (rp.freq_factors) factors_.assign(rp.freq_factors, rp.freq_factors + rope_dim_ / 2);
  const int64_t half = rope_dim_ / 2;
  cos_.resize(n_pos * half);
  sin_.resize(n_pos * half);
  for (int64_t p = 0; p < n_pos; ++p)
    for (int64_t i = 0; i < half; ++i) {
      double theta = double(p) / scale_ * std::pow(base_, -2.0 * double(i) / double(rope_dim_));
      if (!factors_.empty()) theta /= double(factors_[size_t(i)]);
      cos_[p * half + i] = float(std::cos(theta) * attn_factor_);
      sin_[p * half + i] = float(std::sin(theta) * attn_factor_);
    }
  n_pos_ = n_pos;
}

void RopeTable::apply(float* x, int64_t n_heads, int64_t pos) const {
  const int64_t half = rope_dim_ / 2;
  const float* c = &cos_[pos * half];
  const float* s = &sin_[pos * half];
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim_;
    for (int64_t i = 0; i < half; ++i) {
      int64_t a = layout_ == RopeLayout::interleaved ? 2 * i : i;
      int64_t b = layout_ == RopeLayout::interleaved ? 2 * i + 1 : i + half;
      float x0 = v[a], x1 = v[b];
      v[a] = x0 * c[i] - x1 * s[i];
      v[b] = x0 * s[i] + x1 * c[i];
    }
  }
}

void rope_reference(double* x, int64_t n_heads, int64_t head_dim, int64_t rope_dim, int64_t pos, double base,
                    double scale, RopeLayout layout, const float* freq_factors, double attn_factor) {
  const int64_t half = rope_dim / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    double* v = x + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      double theta = double(pos) / scale * std::pow(base, -2.0 * double(i) / double(rope_dim));
      if (freq_factors) theta /= double(freq_factors[i]);
      int64_t a = layout == RopeLayout::interleaved ? 2 * i : i;
      int64_t b = layout == RopeLayout::interleaved ? 2 * i + 1 : i + half;
      double x0 = v[a], x1 = v[b];
      const double c = std::cos(theta) * attn_factor, s = std::sin(theta) * attn_factor;
      v[a] = x0 * c - x1 * s;
      v[b] = x0 * s + x1 * c;
    }
  }
}

std::vector<float> llama3_rope_factors(double factor, double low_freq_factor, double high_freq_factor,
                                       double original_ctx, double base, int64_t rope_dim) {
  check(factor >= 1 && low_freq_factor > 0 && high_freq_factor > low_freq_factor && original_ctx > 0,
        "llama3 RoPE scaling needs factor >= 1 and 0 < low_freq_factor < high_freq_factor");
  const double pi = 3.14159265358979323846;
  const double low_wavelen = original_ctx / low_freq_factor, high_wavelen = original_ctx / high_freq_factor;
  std::vector<float> f;
  for (int64_t i = 0; i < rope_dim / 2; ++i) {
    const double freq = std::pow(base, -2.0 * double(i) / double(rope_dim)), wavelen = 2 * pi / freq;
    if (wavelen < high_wavelen) {
      f.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      f.push_back(float(factor));
    } else {
      const double smooth = (original_ctx / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      f.push_back(float(1.0 / ((1 - smooth) / factor + smooth)));  // freq / the blended frequency
    }
  }
  return f;
}

}  // namespace tinfer
