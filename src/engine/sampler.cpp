// Sampler implementation. Every filter keeps a prefix of the vocabulary ordered by (logit desc, id asc),
// so the chain is computed without a full sort: a linear pass (penalties, temperature, max, min-p
// pre-filter, exp once per survivor), nth_element for top-k, and a mass quickselect for top-p.
#include "tinfer/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <sstream>

#include "tinfer/error.h"
#include "kernels/kernels.h"

namespace tinfer {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kPosInf = std::numeric_limits<float>::infinity();
constexpr float kMaxFinite = std::numeric_limits<float>::max();

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Total order used by every filter: higher logit first, lower id first on ties (deterministic cuts).
bool better(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.token < b.token);
}

// Top-p cut without sorting: the length of the shortest `better`-ordered prefix of c[0, n) whose
// weight (.prob) reaches `target`, moving that prefix to the front. A quickselect on mass: partition
// around a pivot, keep the side the cut falls in; expected O(n). n itself if the mass never gets there.
size_t nucleus(Candidate* c, size_t n, double target) {
  size_t lo = 0, hi = n;  // c[0, lo) is in the prefix (mass acc < target); the cut end lies in (lo, hi]
  double acc = 0.0;
  while (hi - lo > 32) {
    // Median-of-three pivot, parked at c[hi - 1].
    Candidate* a = c + lo;
    Candidate* b = c + lo + (hi - lo) / 2;
    Candidate* d = c + hi - 1;
    if (better(*b, *a)) std::swap(*a, *b);
    if (better(*d, *b)) std::swap(*b, *d);
    if (better(*b, *a)) std::swap(*a, *b);
    std::swap(*b, *d);
    const Candidate pivot = *d;
    Candidate* mid = std::partition(c + lo, c + hi - 1, [&](const Candidate& x) { return better(x, pivot); });
    std::swap(*mid, c[hi - 1]);
    const size_t m = size_t(mid - c);
    double upper = 0.0;
    for (size_t j = lo; j < m; ++j) upper += c[j].prob;
    if (acc + upper >= target) {
      hi = m;  // the prefix ends strictly above the pivot
    } else if (acc + upper + pivot.prob >= target) {
      return m + 1;  // ends exactly at the pivot
    } else {
      acc += upper + pivot.prob;
      lo = m + 1;
    }
  }
  std::sort(c + lo, c + hi, better);
  for (size_t j = lo; j < hi; ++j) {
    acc += c[j].prob;
    if (acc >= target) return j + 1;
  }
  return hi;
}

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

double sample_uniform(uint64_t seed, uint64_t position) {
  // splitmix64 is a bijection, so distinct positions of one seed never share a draw.
  const uint64_t h = splitmix64(splitmix64(seed) ^ position);
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

std::vector<std::string> SamplingParams::validate() const {
  std::vector<std::string> errs;
  if (!(std::isfinite(temperature) && temperature >= 0.0f))
    errs.push_back("temperature must be a finite number >= 0 (0 = greedy), got " + num(temperature));
  if (top_k < 0) errs.push_back("top_k must be >= 0 (0 = off), got " + num(top_k));
  if (!(top_p > 0.0f && top_p <= 1.0f)) errs.push_back("top_p must be in (0, 1], got " + num(top_p));
  if (!(min_p >= 0.0f && min_p <= 1.0f)) errs.push_back("min_p must be in [0, 1], got " + num(min_p));
  if (!(std::isfinite(repetition_penalty) && repetition_penalty > 0.0f))
    errs.push_back("repetition_penalty must be a finite number > 0 (1 = off), got " + num(repetition_penalty));
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f))
    errs.push_back("presence_penalty must be in [-2, 2], got " + num(presence_penalty));
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f))
    errs.push_back("frequency_penalty must be in [-2, 2], got " + num(frequency_penalty));
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0) errs.push_back("logit_bias token id must be >= 0, got " + std::to_string(id));
    if (!(bias >= -kMaxLogitBias && bias <= kMaxLogitBias))
      errs.push_back("logit_bias values must be in [-100, 100], got " + num(bias) + " for token " + std::to_string(id));
  }
  if (top_logprobs < 0 || top_logprobs > kMaxTopLogprobs)
    errs.push_back("top_logprobs must be in [0, " + std::to_string(kMaxTopLogprobs) + "], got " +
                   std::to_string(top_logprobs));
  return errs;
}

Sampler::Sampler(const SamplingParams& params, int32_t n_vocab, std::span<const int32_t> prompt)
    : params_(params), n_vocab_(n_vocab) {
  const auto errs = params.validate();
  if (!errs.empty()) {
    std::string msg = "invalid sampling parameters:";
    for (const auto& e : errs) msg += "\n  " + e;
    fail(msg);
  }
  check(n_vocab > 0, "sampler: n_vocab must be > 0, got " + std::to_string(n_vocab));
  if (params.seed) {
    seed_ = *params.seed;
  } else {
    std::random_device rd;
    seed_ = (uint64_t(rd()) << 32) ^ rd();
  }
  for (const auto& [id, bias] : params.logit_bias)
    check(id < n_vocab, "sampler: logit_bias token " + std::to_string(id) + " outside the vocabulary [0, " +
                            std::to_string(n_vocab) + ")");
  seen_.assign(n_vocab, 0);
  counts_.assign(n_vocab, 0);
  work_.resize(n_vocab);
  result_.top.reserve(SamplingParams::kMaxTopLogprobs);
  for (int32_t t : prompt) {
    check(t >= 0 && t < n_vocab, "sampler: prompt token " + std::to_string(t) + " outside the vocabulary [0, " +
                                     std::to_string(n_vocab) + ")");
    if (!seen_[t]) seen_[t] = 1, seen_ids_.push_back(t);
  }
}

void Sampler::accept(int32_t token) {
  check(token >= 0 && token < n_vocab_, "sampler: accepted token " + std::to_string(token) + " outside the vocabulary");
  if (!seen_[token]) seen_[token] = 1, seen_ids_.push_back(token);
  if (counts_[token]++ == 0) count_ids_.push_back(token);
  ++n_generated_;
}

void Sampler::apply_penalties(const float* logits, const uint32_t* allowed) {
  std::memcpy(work_.data(), logits, sizeof(float) * size_t(n_vocab_));
  if (allowed) {  // all-ones words (free text) cost a compare, all-zero words (structure) a fill of 32
    const size_t words = (size_t(n_vocab_) + 31) / 32;
    for (size_t w = 0; w < words; ++w) {
      const uint32_t bits = allowed[w];
      if (bits == ~0u) continue;
      const size_t end = std::min(size_t(n_vocab_), w * 32 + 32);
      if (bits == 0) {
        std::fill(work_.begin() + int64_t(w * 32), work_.begin() + int64_t(end), kNegInf);
        continue;
      }
      for (size_t t = w * 32; t < end; ++t)
        if (!((bits >> (t - w * 32)) & 1u)) work_[t] = kNegInf;
    }
  }
  // The bias is part of the logit every later stage sees (penalties, temperature, greedy), as OpenAI
  // describes it: "added to the logits generated by the model prior to sampling".
  for (const auto& [id, bias] : params_.logit_bias) work_[id] += bias;
  const float rep = params_.repetition_penalty;
  if (rep != 1.0f) {
    for (int32_t id : seen_ids_) {
      const float l = work_[id];
      // HF: always makes a repeat less likely for rep > 1. Kept finite (a tiny or huge rep overflows), so later
      // stages never meet inf - inf; a masked -inf stays masked.
      if (l > 0.0f) work_[id] = std::min(l / rep, kMaxFinite);
      else if (l > kNegInf) work_[id] = std::max(l * rep, -kMaxFinite);
    }
  }
  const float pres = params_.presence_penalty, freq = params_.frequency_penalty;
  if (pres != 0.0f || freq != 0.0f) {
    for (int32_t id : count_ids_) work_[id] -= pres + freq * float(counts_[id]);
  }
}

// The best of work_: the first id with the highest value, NaN never chosen; token 0 when every value is NaN
// (a broken model row: nothing to prefer).
// The kernel table's vectorized argmax: a one-pass scalar loop with a running index was most of a greedy
// step's sampling at 49,152 tokens (32 rows: ~1.3 ms).
int32_t Sampler::argmax() const { return int32_t(tinfer::argmax(work_.data(), n_vocab_)); }

void Sampler::filter() {
  const int64_t V = n_vocab_;
  if (cand_.size() < size_t(V)) cand_.resize(size_t(V));  // (a temperature-only sampler never needs them)
  if (params_.greedy()) {
    cand_[0] = {argmax(), 0.0f, 1.0f};
    n_cand_ = 1;
    return;
  }
  // Weights in the form that cannot overflow: t = (w - m) / T <= 0, so exp(t) is in [0, 1] whatever T
  // and the logits are (T >= kGreedyTemperature, so 1/T <= 1e5 is finite). Scaling first and shifting
  // after (w/T - m/T) turns logits above ~3.4 into inf at T = 1e-38, and inf - inf into NaN weights.
  float m = kNegInf;
  for (int64_t i = 0; i < V; ++i) m = std::max(m, work_[i]);  // NaN never wins (comparisons are false)
  if (m == kNegInf || m == kPosInf) {  // everything masked, or an infinite logit: the best token, drawn surely
    cand_[0] = {argmax(), 0.0f, 1.0f};
    n_cand_ = 1;
    return;
  }
  const float inv_t = 1.0f / params_.temperature, best = m;
  m = 0.0f;  // the best tempered logit: (best - best) / T
  const int64_t k = (params_.top_k > 0 && params_.top_k < V) ? params_.top_k : 0;
  const bool top_p_on = params_.top_p < 1.0f;
  // min-p keeps {p >= min_p * p_max}; p_max is the same before and after top-k/top-p renormalisation,
  // so it may be applied first as a pre-filter -- except when top-p must normalise over the top-k set,
  // which needs the tokens min-p would drop.
  const float min_p_thr = params_.min_p > 0.0f ? m + std::log(params_.min_p) : kNegInf;
  const bool prefilter = !(top_p_on && k > 0);
  const float push_thr = prefilter ? min_p_thr : kNegInf;
  const bool z_full = top_p_on && k == 0;
  double z = 0.0;  // normaliser of the distribution top-p sees
  size_t n = 0;
  // Each survivor's unnormalised weight e = exp(w - m) is computed once and kept in .prob; w is tempered here, in
  // the same pass (a NaN stays NaN and is never pushed).
  for (int32_t i = 0; i < V; ++i) {
    const float w = (work_[i] - best) * inv_t;
    if (w >= push_thr) {
      const float e = std::exp(w - m);
      cand_[n++] = {i, w, e};
      if (z_full) z += e;
    } else if (z_full && w >= kNegInf) {
      z += std::exp(w - m);
    }
  }
  Candidate* c = cand_.data();
  if (k > 0 && size_t(k) < n) {
    std::nth_element(c, c + k, c + n, better);
    n = size_t(k);
  }
  if (top_p_on && k > 0)
    for (size_t j = 0; j < n; ++j) z += c[j].prob;
  if (!prefilter && min_p_thr > kNegInf)
    n = size_t(std::partition(c, c + n, [&](const Candidate& x) { return x.logit >= min_p_thr; }) - c);
  if (top_p_on) n = nucleus(c, n, double(params_.top_p) * z);
  double s = 0.0;
  for (size_t j = 0; j < n; ++j) s += c[j].prob;
  const double inv_s = 1.0 / s;
  for (size_t j = 0; j < n; ++j) c[j].prob = float(c[j].prob * inv_s);
  n_cand_ = n;
}

std::span<const Candidate> Sampler::candidates(const float* logits) {
  apply_penalties(logits);
  filter();
  return {cand_.data(), n_cand_};
}

std::span<const float> Sampler::penalized(const float* logits, const uint32_t* allowed) {
  apply_penalties(logits, allowed);
  return {work_.data(), work_.size()};
}

void Sampler::fill_logprobs(const float* logits, int32_t token) {
  // log-softmax of the original logits (before penalties and temperature), as OpenAI reports.
  float m = kNegInf;
  for (int32_t i = 0; i < n_vocab_; ++i) m = std::max(m, logits[i]);
  double s = 0.0;
  for (int32_t i = 0; i < n_vocab_; ++i)
    if (logits[i] >= kNegInf) s += std::exp(logits[i] - m);
  const double log_z = double(m) + std::log(s);
  result_.logprob = float(double(logits[token]) - log_z);
  auto& top = result_.top;
  top.clear();
  const size_t want = size_t(params_.top_logprobs);
  if (want == 0) return;
  // Insertion into a sorted array of at most 20: O(V) in practice, no allocation.
  for (int32_t i = 0; i < n_vocab_; ++i) {
    const float l = logits[i];
    if (!(l >= kNegInf)) continue;  // NaN
    if (top.size() == want && !(l > top.back().logprob)) continue;
    if (top.size() < want) top.push_back({});
    size_t j = top.size() - 1;
    while (j > 0 && l > top[j - 1].logprob) {
      top[j] = top[j - 1];
      --j;
    }
    top[j] = {i, l};
  }
  for (auto& t : top) t.logprob = float(double(t.logprob) - log_z);
}

// Temperature without top-k / top-p / min-p (the OpenAI default, T = 1): every token is a candidate, so the
// draw needs no list. The weights e = exp((w - best) / T) overwrite work_ (vectorized, with their sums per
// kExpChunk tokens); the draw walks the chunk sums to u * z, then one chunk. filter() + the scan over its
// list took ~40 us a row at SmolLM2's 49,152 tokens (scalar exp, a 590 KB list): 5-8% of a 32-request step.
// The same distribution as filter()'s up to float rounding. nullopt: not this case (or every logit masked or
// an infinite one), filter() decides.
std::optional<int32_t> Sampler::draw_tempered(double u) {
  const int64_t V = n_vocab_;
  if (params_.greedy() || (params_.top_k > 0 && params_.top_k < V) || params_.top_p < 1.0f || params_.min_p > 0.0f)
    return std::nullopt;
  const float best = work_[size_t(argmax())];  // NaN only when every logit is
  if (!(best > kNegInf) || best == kPosInf) return std::nullopt;
  const int64_t chunks = (V + kExpChunk - 1) / kExpChunk;
  chunk_sums_.resize(size_t(chunks));
  exp_weights(work_.data(), V, best, 1.0f / params_.temperature, work_.data(), chunk_sums_.data());
  double z = 0.0;
  for (float s : chunk_sums_) z += s;
  const double target = u * z;
  double acc = 0.0;
  for (int64_t c = 0; c < chunks; ++c) {
    if (!(target < acc + chunk_sums_[size_t(c)])) {
      acc += chunk_sums_[size_t(c)];
      continue;
    }
    const int64_t end = std::min(V, (c + 1) * kExpChunk);
    int64_t last = -1;
    for (int64_t i = c * kExpChunk; i < end; ++i) {
      if (!(work_[size_t(i)] > 0.0f)) continue;
      acc += work_[size_t(i)];
      last = i;
      if (target < acc) return int32_t(i);
    }
    if (last >= 0) return int32_t(last);  // the chunk's float sum rounded past its elements'
  }
  for (int64_t i = V - 1; i >= 0; --i)  // u * z at the very top: the last token that has weight
    if (work_[size_t(i)] > 0.0f) return int32_t(i);
  return std::nullopt;  // (unreachable: the best token's weight is 1)
}

// filter()'s survivors, drawn by u over their cumulative probabilities.
int32_t Sampler::draw_filtered(double u) {
  filter();
  if (n_cand_ == 1) return cand_[0].token;
  double acc = 0.0;
  for (size_t j = 0; j < n_cand_; ++j) {
    acc += cand_[j].prob;
    if (u < acc) return cand_[j].token;
  }
  return cand_[n_cand_ - 1].token;
}

const SampleResult& Sampler::sample(const float* logits, const uint32_t* allowed) {
  apply_penalties(logits, allowed);
  const double u = sample_uniform(seed_, uint64_t(n_generated_));
  const std::optional<int32_t> tempered = draw_tempered(u);
  const int32_t token = tempered ? *tempered : draw_filtered(u);
  result_.token = token;
  result_.logprob = 0.0f;
  result_.top.clear();
  if (params_.logprobs || params_.top_logprobs > 0) fill_logprobs(logits, token);
  return result_;
}

}  // namespace tinfer
