// Beam search as pure logic, no model and no scheduler: given the live beams and each one's continuations
// (the top log-probabilities of its penalised logits), pick the next beam set the standard (HF) way.
//
// One round: every live beam of generated length L offers its top 2*width continuations; all of them are
// ranked by cumulative log-probability (ties: lower beam index, then lower token id). Walking that ranking,
// a candidate ending in a stop id becomes a finished hypothesis (only if it ranks within the first `width`,
// as HF does), any other becomes a next live beam, until `width` live beams exist. A hypothesis of gen_len
// tokens (the stop token included) scores cum_logprob / gen_len^length_penalty; at most `width` are kept.
// The search is done when:
//   - max_tokens is reached: the live beams become hypotheses too (finish reason "length");
//   - early_stopping: `width` hypotheses exist;
//   - otherwise (HF's heuristic): `width` hypotheses exist and the best live beam's score at its current length
//     cannot beat the worst kept hypothesis;
//   - no live beam is left (every candidate was a stop).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "tinfer/request.h"

namespace tinfer {

// One continuation of a beam: a token and its log-probability (log-softmax of the beam's penalised logits).
struct BeamToken {
  Token token = -1;
  double logprob = 0;
};

// The k most likely continuations of one logits row [n_vocab] (log-softmax in double), most likely first,
// lower id first on ties; min(k, n_vocab) entries. NaN logits are never chosen.
std::vector<BeamToken> top_continuations(std::span<const float> logits, int k);

struct BeamSearchParams {
  int width = 1;                 // live beams kept per round, and hypotheses returned; >= 1
  float length_penalty = 1.0f;   // score = cum_logprob / gen_len^length_penalty (HF)
  bool early_stopping = false;   // true: done once `width` hypotheses exist
  int max_tokens = 1;            // generated tokens per beam; >= 1
  std::vector<Token> stop_ids;   // a continuation with one of these finishes a hypothesis (the token is kept)
};

struct Beam {
  std::vector<Token> tokens;          // generated so far
  std::vector<float> token_logprobs;  // [tokens.size()] each token's own log-probability
  double logprob = 0;                 // cumulative: the sum of token_logprobs (in double)
};

struct Hypothesis {
  std::vector<Token> tokens;
  std::vector<float> token_logprobs;
  double logprob = 0;  // cumulative
  double score = 0;    // logprob / tokens.size()^length_penalty
  bool stopped = false;  // ended in a stop id (else: max_tokens)
};

// Where a next-round beam comes from: its parent's index in the previous beams() and the appended token.
struct BeamOrigin {
  int parent = 0;
  Token token = -1;
  double logprob = 0;  // the token's own log-probability
};

class BeamSearch {
 public:
  // Starts with one live beam of no tokens (the prompt). Throws Error on width < 1 or max_tokens < 1.
  explicit BeamSearch(BeamSearchParams params);

  const BeamSearchParams& params() const { return params_; }
  // How many continuations step() wants per beam: 2 * width.
  int num_continuations() const { return 2 * params_.width; }
  const std::vector<Beam>& beams() const { return beams_; }  // live beams, best first; empty once done
  bool done() const { return done_; }

  // One round. conts[i] holds beams()[i]'s continuations, most likely first (top_continuations; only the first
  // num_continuations() are used). Returns the new live beams' origins in beams() order (best first); empty
  // once the search is done. Throws Error if conts.size() != beams().size() or the search is already done.
  std::vector<BeamOrigin> step(std::span<const std::vector<BeamToken>> conts);

  // The n best hypotheses, best first (fewer if fewer were found).
  std::vector<Hypothesis> best(int n) const;
  double score(double logprob, int gen_len) const;

 private:
  void add_hypothesis(Hypothesis h);  // keeps the best `width`, best first

  BeamSearchParams params_;
  std::vector<Beam> beams_;
  std::vector<Hypothesis> hyps_;  // best first, at most width
  bool done_ = false;
};

}  // namespace tinfer
