// Speculative decoding's acceptance rule for sampled decoding (Leviathan et al. 2023; Chen et al. 2023): draft
// token x at position i, drawn from the drafter's distribution q_i, is kept with probability
// min(1, p_i(x) / q_i(x)), p_i being the target's distribution there; at the first rejection the next token is
// drawn from the residual max(0, p_i - q_i) (renormalised), and when every draft token is kept, one more is
// drawn from p_k. The committed tokens are then distributed exactly as k+1 draws from the target alone.
// A deterministic drafter (prompt lookup, greedy draft model) is the point mass q_i = [x]: keep x with
// probability p_i(x), else draw from p_i with x removed.
//
// Dense rows of probabilities (vocab entries each, summing to 1; the target's after its sampler's penalties
// and filters, given the tokens kept before i), so the rule is a pure function, testable on a small
// vocabulary. Greedy decoding needs no rule: the sampler's argmax at each position is compared with the draft
// (the output is then identical to non-speculative greedy decoding).
#pragma once
#include <cstdint>
#include <functional>
#include <span>

namespace tinfer {

struct SpecVerdict {
  int accepted = 0;   // draft tokens kept: draft[0, accepted)
  int32_t next = -1;  // the token drawn after them (residual at the rejection, or p_k's bonus draw)
};

// p: draft.size() + 1 rows of target probabilities; q: draft.size() rows of draft probabilities, or nullptr
// for a deterministic draft. uniform(i, 0) is the acceptance draw at position i, uniform(i, 1) the draw of
// the next token at i; each in [0, 1), independent.
SpecVerdict verify_sampled(const float* p, const float* q, int64_t vocab, std::span<const int32_t> draft,
                           const std::function<double(int, int)>& uniform);

}  // namespace tinfer
