// BeamSearch: the round logic (ranking, hypotheses, stopping rules) and the top-k log-softmax it consumes.
#include "engine/decoding/beam_search.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tinfer/error.h"

namespace tinfer {

std::vector<BeamToken> top_continuations(std::span<const float> logits, int k) {
  const int64_t V = static_cast<int64_t>(logits.size());
  check(V > 0 && k >= 1, "beam search: top_continuations needs a non-empty row and k >= 1");
  // "a ranks before b"; as the heap's less-than it keeps the weakest kept id at the root.
  const auto better = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  // A min-heap of the k best ids: one pass, O(V log k), k is small (2 * width).
  std::vector<int32_t> heap;
  heap.reserve(size_t(k) + 1);
  double m = -std::numeric_limits<double>::infinity();
  for (int32_t i = 0; i < V; ++i) {
    const float l = logits[i];
    if (std::isnan(l)) continue;
    m = std::max(m, double(l));
    if (static_cast<int>(heap.size()) < k) {
      heap.push_back(i);
      std::push_heap(heap.begin(), heap.end(), better);
    } else if (better(i, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.back() = i;
      std::push_heap(heap.begin(), heap.end(), better);
    }
  }
  double s = 0;
  for (int64_t i = 0; i < V; ++i)
    if (!std::isnan(logits[i])) s += std::exp(double(logits[i]) - m);
  const double log_z = m + std::log(s);
  std::sort(heap.begin(), heap.end(), better);  // best first
  // A grammar's mask leaves forbidden tokens at -inf: never continuations (unless nothing else is left).
  while (heap.size() > 1 && !(logits[heap.back()] > -std::numeric_limits<float>::infinity())) heap.pop_back();
  std::vector<BeamToken> out;
  out.reserve(heap.size());
  for (int32_t id : heap) out.push_back({id, double(logits[id]) - log_z});
  return out;
}

BeamSearch::BeamSearch(BeamSearchParams params) : params_(std::move(params)) {
  check(params_.width >= 1, "beam search: width must be >= 1, got " + std::to_string(params_.width));
  check(params_.max_tokens >= 1, "beam search: max_tokens must be >= 1, got " + std::to_string(params_.max_tokens));
  beams_.emplace_back();
}

double BeamSearch::score(double logprob, int gen_len) const {
  return logprob / std::pow(double(gen_len), double(params_.length_penalty));
}

void BeamSearch::add_hypothesis(Hypothesis h) {
  const size_t width = size_t(params_.width);
  // As HF: a full list takes a new hypothesis only if it beats the worst one.
  if (hyps_.size() >= width && !(h.score > hyps_.back().score)) return;
  auto at = std::upper_bound(hyps_.begin(), hyps_.end(), h.score,
                             [](double s, const Hypothesis& x) { return s > x.score; });
  hyps_.insert(at, std::move(h));
  if (hyps_.size() > width) hyps_.pop_back();
}

std::vector<BeamOrigin> BeamSearch::step(std::span<const std::vector<BeamToken>> conts) {
  check(!done_, "beam search: step() after the search is done");
  check(conts.size() == beams_.size(), "beam search: " + std::to_string(conts.size()) + " continuation lists for " +
                                           std::to_string(beams_.size()) + " beams");
  struct Cand {
    int parent;
    BeamToken t;
    double cum;
  };
  std::vector<Cand> cands;
  const size_t per_beam = size_t(num_continuations());
  for (size_t b = 0; b < conts.size(); ++b)
    for (size_t j = 0; j < std::min(per_beam, conts[b].size()); ++j)
      cands.push_back({int(b), conts[b][j], beams_[b].logprob + conts[b][j].logprob});
  std::stable_sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
    if (a.cum != b.cum) return a.cum > b.cum;
    if (a.parent != b.parent) return a.parent < b.parent;
    return a.t.token < b.t.token;
  });

  const int width = params_.width;
  const int len = static_cast<int>(beams_[0].tokens.size()) + 1;  // every beam has the same length
  const auto& stops = params_.stop_ids;
  std::vector<BeamOrigin> origins;
  for (size_t rank = 0; rank < cands.size() && static_cast<int>(origins.size()) < width; ++rank) {
    const Cand& c = cands[rank];
    if (std::find(stops.begin(), stops.end(), c.t.token) != stops.end()) {
      if (static_cast<int>(rank) >= width) continue;  // HF: a stop below the top `width` is not a hypothesis
      Hypothesis h;
      h.tokens = beams_[size_t(c.parent)].tokens;
      h.tokens.push_back(c.t.token);
      h.token_logprobs = beams_[size_t(c.parent)].token_logprobs;
      h.token_logprobs.push_back(float(c.t.logprob));
      h.logprob = c.cum;
      h.score = score(c.cum, len);
      h.stopped = true;
      add_hypothesis(std::move(h));
      continue;
    }
    origins.push_back({c.parent, c.t.token, c.t.logprob});
  }

  std::vector<Beam> next;
  next.reserve(origins.size());
  for (const BeamOrigin& o : origins) {
    Beam b = beams_[size_t(o.parent)];
    b.tokens.push_back(o.token);
    b.token_logprobs.push_back(float(o.logprob));
    b.logprob += o.logprob;
    next.push_back(std::move(b));
  }
  beams_ = std::move(next);

  const bool full = static_cast<int>(hyps_.size()) >= width;
  if (beams_.empty()) {
    done_ = true;
  } else if (len >= params_.max_tokens) {
    for (const Beam& b : beams_) add_hypothesis({b.tokens, b.token_logprobs, b.logprob, score(b.logprob, len), false});
    done_ = true;
  } else if (full && params_.early_stopping) {
    done_ = true;
  } else if (full && hyps_.back().score >= score(beams_[0].logprob, len)) {
    done_ = true;  // HF's heuristic: the best live beam, scored at its current length, cannot get in
  }
  if (done_) {
    beams_.clear();
    origins.clear();
  }
  return origins;
}

std::vector<Hypothesis> BeamSearch::best(int n) const {
  const size_t k = std::min(hyps_.size(), size_t(std::max(n, 0)));
  return {hyps_.begin(), hyps_.begin() + static_cast<std::ptrdiff_t>(k)};
}

}  // namespace tinfer
