// Beam search through the engine on stories260K equals a plain reference beam search over ReferenceForward (the
// fp64 oracle, whole sequence recomputed every round): widths 1, 2, 4, several prompts, a stop id, penalties,
// same tokens, scores within 1e-3. Width 1 equals greedy. Abort mid-search, preemption (tiny pool) and the
// max_seqs fallback (beams re-added as requests) give the same results and leave no block used.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "engine/engine_test_util.h"
#include "backend/cpu/reference_forward.h"

namespace tinfer {
namespace {

using namespace engine_test;

struct Result {
  std::vector<Token> tokens;
  double logprob = 0, score = 0;
  FinishReason reason = FinishReason::kNone;
};

struct BeamCase {
  std::vector<Token> prompt;
  int width = 1;
  int max_tokens = 12;
  float length_penalty = 1.0f;
  bool early_stopping = false;
  std::vector<Token> stops;
  float repetition = 1.0f, presence = 0.0f, frequency = 0.0f;
  std::vector<std::pair<int32_t, float>> bias;
};

GenerationRequest beam_request(const BeamCase& c) {
  GenerationRequest r = greedy(c.prompt, c.max_tokens);
  r.use_beam_search = true;
  r.n = c.width;
  r.length_penalty = c.length_penalty;
  r.early_stopping = c.early_stopping;
  r.stop_token_ids = c.stops;
  r.sampling.repetition_penalty = c.repetition;
  r.sampling.presence_penalty = c.presence;
  r.sampling.frequency_penalty = c.frequency;
  r.sampling.logit_bias = c.bias;
  return r;
}

// The reference: every round recomputes each beam's whole sequence, penalises the last row as the Sampler
// describes (bias; repetition over prompt + beam; presence/frequency over the beam), takes the log-softmax over
// the whole vocabulary and applies HF's rules (beam_search.h) literally.
std::vector<Result> reference_beam_search(const ReferenceForward& ref, const BeamCase& c) {
  struct B {
    std::vector<Token> toks;
    double cum = 0;
  };
  std::vector<B> beams(1);
  std::vector<Result> hyps;
  const auto score = [&](double cum, int len) { return cum / std::pow(double(len), double(c.length_penalty)); };
  const auto keep = [&](Result h) {  // the best `width`, best first; a tie never displaces an older one
    hyps.push_back(std::move(h));
    std::stable_sort(hyps.begin(), hyps.end(), [](const Result& a, const Result& b) { return a.score > b.score; });
    if (static_cast<int>(hyps.size()) > c.width) hyps.pop_back();
  };
  for (int len = 1;; ++len) {
    struct Cand {
      double cum;
      int parent;
      Token tok;
    };
    std::vector<Cand> all;
    for (size_t b = 0; b < beams.size(); ++b) {
      std::vector<Token> seq = c.prompt;
      seq.insert(seq.end(), beams[b].toks.begin(), beams[b].toks.end());
      std::vector<float> row = ref.logits(seq, {int64_t(seq.size()) - 1})[0];
      std::vector<double> l(row.begin(), row.end());
      for (const auto& [t, v] : c.bias) l[size_t(t)] += v;
      for (Token t : std::set<Token>(seq.begin(), seq.end()))
        l[size_t(t)] = l[size_t(t)] > 0 ? l[size_t(t)] / c.repetition : l[size_t(t)] * c.repetition;
      std::map<Token, int> count;
      for (Token t : beams[b].toks) ++count[t];
      for (const auto& [t, n] : count) l[size_t(t)] -= c.presence + c.frequency * n;
      double m = -INFINITY, z = 0;
      for (double v : l) m = std::max(m, v);
      for (double v : l) z += std::exp(v - m);
      for (size_t v = 0; v < l.size(); ++v)
        all.push_back({beams[b].cum + l[v] - m - std::log(z), int(b), Token(v)});
    }
    std::stable_sort(all.begin(), all.end(), [](const Cand& a, const Cand& b) {
      if (a.cum != b.cum) return a.cum > b.cum;
      if (a.parent != b.parent) return a.parent < b.parent;
      return a.tok < b.tok;
    });
    std::vector<B> next;
    for (size_t rank = 0; rank < all.size() && static_cast<int>(next.size()) < c.width; ++rank) {
      B nb = beams[size_t(all[rank].parent)];
      nb.toks.push_back(all[rank].tok);
      nb.cum = all[rank].cum;
      if (std::count(c.stops.begin(), c.stops.end(), all[rank].tok)) {
        if (static_cast<int>(rank) < c.width) keep({nb.toks, nb.cum, score(nb.cum, len), FinishReason::kStop});
      } else {
        next.push_back(std::move(nb));
      }
    }
    beams = std::move(next);
    if (beams.empty()) break;
    if (len >= c.max_tokens) {
      for (const B& b : beams) keep({b.toks, b.cum, score(b.cum, len), FinishReason::kLength});
      break;
    }
    const bool full = static_cast<int>(hyps.size()) >= c.width;
    if (full && (c.early_stopping || hyps.back().score >= score(beams[0].cum, len))) break;
  }
  return hyps;
}

// Runs every case through one engine at once; results per case, index order (best first). Checks the pool.
std::vector<std::vector<Result>> run_beams(Engine& e, const std::vector<BeamCase>& cases) {
  std::vector<std::vector<Result>> out(cases.size());
  std::map<RequestId, size_t> which;
  for (size_t i = 0; i < cases.size(); ++i) {
    out[i].resize(size_t(cases[i].width));
    const RequestId id = e.add_request(beam_request(cases[i]), [&out, &which](const TokenEvent& ev) {
      Result& r = out[which.at(ev.id)].at(size_t(ev.index));
      if (ev.has_token) {
        EXPECT_TRUE(ev.beam);
        r.tokens.push_back(ev.token);
        r.logprob = ev.beam_logprob;
        r.score = ev.beam_score;
      }
      if (ev.finished) r.reason = ev.finish_reason;
    });
    which[id] = i;
  }
  while (e.has_work()) e.step();
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
  return out;
}

void expect_same(const std::vector<Result>& got, const std::vector<Result>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k].tokens, want[k].tokens) << what << " result " << k;
    EXPECT_NEAR(got[k].score, want[k].score, 1e-3) << what << " result " << k;
    EXPECT_NEAR(got[k].logprob, want[k].logprob, 1e-3) << what << " result " << k;
    EXPECT_EQ(got[k].reason, want[k].reason) << what << " result " << k;
  }
}

class BeamSearchEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = stories();
    TINFER_REQUIRE_FILE(model_ ? std::string("x") : std::string(), "models/stories260K.gguf");
    ref_ = std::make_unique<ReferenceForward>(*model_);
    // A stop id the model actually produces: greedy's fourth token after the first prompt.
    stop_ = run_greedy(stories(), base_config(), {prompts(1, 512)[0]}, 8)[0].at(3);
  }
  std::vector<BeamCase> cases(std::vector<int> widths, int n_prompts, int max_tokens) const {
    std::vector<BeamCase> cs;
    const auto ps = prompts(n_prompts, 512);
    for (int w : widths)
      for (const auto& p : ps) cs.push_back({.prompt = p, .width = w, .max_tokens = max_tokens, .stops = {stop_}});
    return cs;
  }
  std::unique_ptr<Model> model_;
  std::unique_ptr<ReferenceForward> ref_;
  Token stop_ = -1;
};

TEST_F(BeamSearchEngine, EqualsReferenceForWidths124) {
  const auto cs = cases({1, 2, 4}, 3, 12);
  auto e = Engine::create(stories(), base_config());
  const auto got = run_beams(*e, cs);
  int stopped = 0;
  for (size_t i = 0; i < cs.size(); ++i) {
    const auto want = reference_beam_search(*ref_, cs[i]);
    ASSERT_EQ(static_cast<int>(want.size()), cs[i].width);
    expect_same(got[i], want, "case " + std::to_string(i) + " width " + std::to_string(cs[i].width));
    for (const Result& r : want) stopped += r.reason == FinishReason::kStop;
  }
  EXPECT_GT(stopped, 0) << "no hypothesis ended at the stop id: the stop path went untested";
}

TEST_F(BeamSearchEngine, WidthOneEqualsGreedy) {
  const auto cs = cases({1}, 4, 16);
  auto e = Engine::create(stories(), base_config());
  const auto got = run_beams(*e, cs);
  for (size_t i = 0; i < cs.size(); ++i) {
    GenerationRequest g = greedy(cs[i].prompt, 16);
    g.stop_token_ids = {stop_};
    auto ge = Engine::create(stories(), base_config());
    const Outputs o = run(*ge, {g});
    EXPECT_EQ(got[i][0].tokens, o.begin()->second[0].tokens) << "prompt " << i;
  }
}

TEST_F(BeamSearchEngine, PenaltiesLengthPenaltyAndEarlyStoppingEqualReference) {
  std::vector<BeamCase> cs = cases({2, 3}, 2, 14);
  for (size_t i = 0; i < cs.size(); ++i) {
    cs[i].repetition = 1.3f;
    cs[i].presence = 0.4f;
    cs[i].frequency = 0.3f;
    cs[i].bias = {{stop_, 1.5f}, {7, -2.0f}};
    cs[i].length_penalty = i % 2 ? 0.5f : 2.0f;
    cs[i].early_stopping = i < 2;
  }
  auto e = Engine::create(stories(), base_config());
  const auto got = run_beams(*e, cs);
  for (size_t i = 0; i < cs.size(); ++i)
    expect_same(got[i], reference_beam_search(*ref_, cs[i]), "case " + std::to_string(i));
}

TEST_F(BeamSearchEngine, PreemptionAndSeatFallbackGiveTheSameResults) {
  const auto cs = cases({4, 3}, 3, 24);
  auto base = Engine::create(stories(), base_config());
  const auto want = run_beams(*base, cs);
  EXPECT_EQ(base->stats().preemptions, 0);

  EngineConfig tiny = base_config();
  tiny.scheduler.max_model_len = 128;
  tiny.kv.memory_bytes = model_->config().kv_bytes_per_token(4) * 160;  // 10 blocks for 6 requests of 4 beams
  auto small = Engine::create(stories(), tiny);
  const auto pre = run_beams(*small, cs);
  EXPECT_GT(small->stats().preemptions, 0);

  EngineConfig seats = base_config();
  seats.scheduler.max_seqs = 5;  // forks beyond 5 sequences become re-added requests
  auto few = Engine::create(stories(), seats);
  const auto fb = run_beams(*few, cs);
  for (size_t i = 0; i < cs.size(); ++i) {
    expect_same(pre[i], want[i], "preempted case " + std::to_string(i));
    expect_same(fb[i], want[i], "max_seqs case " + std::to_string(i));
  }
  // And the uninterrupted run is the reference's.
  expect_same(want[0], reference_beam_search(*ref_, cs[0]), "case 0");
}

TEST_F(BeamSearchEngine, StaticBatchingGivesTheSameResults) {
  const auto cs = cases({2, 4}, 2, 16);
  auto base = Engine::create(stories(), base_config());
  const auto want = run_beams(*base, cs);
  for (BatchingMode m : {BatchingMode::kStatic, BatchingMode::kStaticPadded}) {
    EngineConfig c = base_config();
    c.batching = m;
    auto e = Engine::create(stories(), c);
    const auto got = run_beams(*e, cs);
    for (size_t i = 0; i < cs.size(); ++i)
      expect_same(got[i], want[i], std::string(batching_mode_name(m)) + " case " + std::to_string(i));
  }
}

TEST_F(BeamSearchEngine, AbortMidSearchReturnsEveryBlock) {
  auto e = Engine::create(stories(), base_config());
  BeamCase c = cases({4}, 1, 40)[0];
  c.stops.clear();
  std::vector<FinishReason> reasons(4, FinishReason::kNone);
  int tokens = 0;
  const RequestId id = e->add_request(beam_request(c), [&](const TokenEvent& ev) {
    tokens += ev.has_token;
    if (ev.finished) reasons.at(size_t(ev.index)) = ev.finish_reason;
  });
  for (int i = 0; i < 6; ++i) e->step();
  EXPECT_GT(e->stats().kv_blocks_used, 0);
  EXPECT_EQ(e->stats().running, 4);  // four beams, one sequence each
  e->abort(id);
  while (e->has_work()) e->step();
  EXPECT_EQ(e->stats().kv_blocks_used, 0);
  EXPECT_EQ(tokens, 0);  // beam search reports only final hypotheses
  for (FinishReason r : reasons) EXPECT_EQ(r, FinishReason::kAbort);
}

TEST_F(BeamSearchEngine, ForkedBeamsShareThePromptsBlocks) {
  // Four beams over a 55-token prompt (+ 8 outputs: 4 blocks of 16 each): the prompt's three full blocks stay
  // shared, each beam owning only its last block (and a transient copy-on-write one): far below 4 x 4 private.
  BeamCase c{.prompt = prompts(8, 512).back(), .width = 4, .max_tokens = 8, .stops = {}};
  auto e = Engine::create(stories(), base_config());
  run_beams(*e, {c});
  EXPECT_LE(e->stats().kv_blocks_peak, 3 + 4 * 2);
}

TEST(BeamSearchRequest, Validation) {
  RequestLimits lim{.n_vocab = 512, .max_len = 256, .max_seqs = 4};
  GenerationRequest r;
  r.prompt = {1, 2, 3};
  r.use_beam_search = true;
  r.n = 2;
  r.sampling.temperature = 0.7f;
  EXPECT_THROW(resolve_request(r, lim), RequestError);
  r.sampling.temperature = 0;
  EXPECT_FALSE(resolve_request(r, lim).speculative);
  EXPECT_TRUE(resolve_request(r, lim).use_beam_search);
  r.n = 5;  // above max_seqs
  EXPECT_THROW(resolve_request(r, lim), RequestError);
  r.n = 0;
  EXPECT_THROW(resolve_request(r, lim), RequestError);
  r.n = 2;
  r.length_penalty = NAN;
  EXPECT_THROW(resolve_request(r, lim), RequestError);
  r.length_penalty = 1;
  r.sampling.top_logprobs = 2;
  EXPECT_THROW(resolve_request(r, lim), RequestError);
  try {
    r.sampling.top_logprobs = 0;
    r.sampling.temperature = 1;
    resolve_request(r, lim);
    ADD_FAILURE() << "temperature 1 accepted with beam search";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.field(), "temperature");
  }
}

}  // namespace
}  // namespace tinfer
