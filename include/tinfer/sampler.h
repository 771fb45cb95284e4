// Per-request token sampler: logit bias, penalties, then greedy or temperature -> top-k -> top-p -> min-p, and a
// draw from a counter-based RNG keyed by (seed, output position), so a seed gives the same text
// whatever else is in the batch. Also reports OpenAI-style logprobs of the original logits.
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace tinfer {

struct SamplingParams {
  // Below kGreedyTemperature (0 included) = greedy (argmax after penalties); filters are then ignored.
  float temperature = 1.0f;
  int top_k = 0;                   // keep the k most likely tokens; 0 = off
  float top_p = 1.0f;              // nucleus: smallest set with cumulative probability >= top_p; (0, 1]
  float min_p = 0.0f;              // keep tokens with p >= min_p * p_max; [0, 1]
  // Penalty history (as HF and vLLM do): repetition over prompt + generated tokens, so a model is not
  // pushed to parrot its prompt; presence/frequency over generated tokens only, as OpenAI defines them.
  float repetition_penalty = 1.0f; // HF/CTRL: logit > 0 divided, logit < 0 multiplied; > 0, 1 = off
  float presence_penalty = 0.0f;   // OpenAI: logit -= presence * [count > 0]; [-2, 2]
  float frequency_penalty = 0.0f;  // OpenAI: logit -= frequency * count; [-2, 2]
  // Any 64-bit value; absent = a random seed, chosen once per request (see Sampler::seed()).
  std::optional<uint64_t> seed;
  // OpenAI logit_bias: (token id, bias in [-100, 100]) added to the logit before penalties and
  // temperature, so greedy sees it too. Ids must be in the vocabulary (checked by Sampler).
  std::vector<std::pair<int32_t, float>> logit_bias;
  bool logprobs = false;           // report the chosen token's logprob
  int top_logprobs = 0;            // also report the N most likely tokens; [0, kMaxTopLogprobs]

  static constexpr int kMaxTopLogprobs = 20;  // OpenAI's limit
  // vLLM's _SAMPLING_EPS: a temperature this small is indistinguishable from argmax in float, and 1/T
  // stays finite (<= 1e5) above it.
  static constexpr float kGreedyTemperature = 1e-5f;
  bool greedy() const { return temperature < kGreedyTemperature; }
  static constexpr float kMaxLogitBias = 100.0f;  // OpenAI's range is [-100, 100]

  // Every problem with these parameters, one message each; empty when valid.
  std::vector<std::string> validate() const;
};

struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0.0f;
};

struct SampleResult {
  int32_t token = -1;
  float logprob = 0.0f;             // log-softmax of the original logits at `token` (if requested)
  std::vector<TokenLogprob> top;    // top_logprobs entries, most likely first (if requested)
  float entropy = std::numeric_limits<float>::quiet_NaN();  // set by the engine (report_entropy): of the row drawn from
};

// One candidate that survived the filters: its id and its probability renormalised over the survivors.
struct Candidate {
  int32_t token;
  float logit;  // (penalised logit - the best one) / temperature: log of the unnormalised weight, <= 0; greedy: 0
  float prob;
};

// The uniform draw in [0, 1) for output position `position` of a request seeded `seed`: a pure
// function (splitmix64 of both), so it does not depend on earlier draws or on batch composition.
double sample_uniform(uint64_t seed, uint64_t position);

class Sampler {
 public:
  // `prompt` seeds the repetition-penalty history. Throws Error on invalid params, n_vocab <= 0 or
  // out-of-range prompt ids. All working memory is allocated here (O(n_vocab)).
  Sampler(const SamplingParams& params, int32_t n_vocab, std::span<const int32_t> prompt = {});

  // Samples the token for output position n_generated() from logits[n_vocab]. Does not record the
  // token: call accept() with whatever the request keeps. The returned reference is valid until the
  // next call; no allocation once top_logprobs' storage has been reserved (at construction).
  // `allowed` (a grammar's mask, tinfer/token_constraint.h: bit t set = token t allowed; null = all) removes the
  // other tokens before logit_bias and penalties; reported logprobs stay those of the model's own logits.
  const SampleResult& sample(const float* logits, const uint32_t* allowed = nullptr);

  // Records a generated token: it joins the penalty history and advances the output position.
  void accept(int32_t token);

  // The survivors of penalties + temperature + top-k + top-p + min-p for `logits`, in no particular
  // order, probabilities summing to 1. With temperature 0 it is the single argmax. For tests and tools.
  std::span<const Candidate> candidates(const float* logits);

  // logits[n_vocab] after logit_bias and the penalties of this sampler's history, before temperature: what
  // beam search ranks (decoding/beam_search.h). Valid until the next call; no allocation.
  // `allowed`: a grammar's mask (see sample()); the others come out -inf.
  std::span<const float> penalized(const float* logits, const uint32_t* allowed = nullptr);

  uint64_t seed() const { return seed_; }  // the resolved seed (a random one when params had none)
  int64_t n_generated() const { return n_generated_; }
  const SamplingParams& params() const { return params_; }

 private:
  // logits -> work_ (masked, biased, penalised, unscaled)
  void apply_penalties(const float* logits, const uint32_t* allowed = nullptr);
  void filter();                              // work_ -> cand_ (survivors with probabilities)
  std::optional<int32_t> draw_tempered(double u);  // temperature alone: a draw from work_ without cand_
  int32_t draw_filtered(double u);                  // filter(), then a draw from cand_
  int32_t argmax() const;                     // of work_, NaN never chosen
  void fill_logprobs(const float* logits, int32_t token);

  SamplingParams params_;
  int32_t n_vocab_;
  uint64_t seed_;
  int64_t n_generated_ = 0;

  // Penalty history. Repetition uses prompt + generated; presence/frequency use generated only.
  std::vector<uint8_t> seen_;       // [n_vocab] 1 if the token is in prompt or output
  std::vector<int32_t> seen_ids_;   // distinct ids with seen_ == 1
  std::vector<int32_t> counts_;     // [n_vocab] occurrences in the output
  std::vector<int32_t> count_ids_;  // distinct ids with counts_ > 0

  std::vector<float> work_;         // [n_vocab] penalised logits
  std::vector<Candidate> cand_;     // n_vocab once filter() first runs; cand_[0, n_cand_) are the survivors
  std::vector<float> chunk_sums_;   // draw_tempered: the weights' sums per kExpChunk tokens
  size_t n_cand_ = 0;
  SampleResult result_;
};

}  // namespace tinfer
