// SampleStrategy: plain and parallel sampling (see sample_strategy.h).
#include "engine/decoding/sample_strategy.h"

#include <algorithm>

#include "tinfer/error.h"
#include "engine/decoding/speculator.h"
#include "engine/entropy.h"
#include "engine/live_request.h"

namespace tinfer {

SampleStrategy::SampleStrategy(LiveRequest& live, int n_vocab, Scheduler& sched, SeqRegistry& seqs,
                               JumpForward* jump)
    : live_(live), sched_(sched), seqs_reg_(seqs), forked_(live.req.n == 1),
      jump_(jump && jump->on && live.req.grammar ? jump : nullptr) {
  const ResolvedRequest& r = live.req;
  samplers_.reserve(size_t(r.n));
  samplers_.emplace_back(r.sampling, n_vocab, r.prompt);
  for (int i = 1; i < r.n; ++i) {
    SamplingParams p = r.sampling;
    p.seed = samplers_[0].seed() + static_cast<uint64_t>(i);
    samplers_.emplace_back(p, n_vocab, r.prompt);
  }
  seqs_.assign(size_t(r.n), 0);
  if (r.grammar) {
    for (int i = 0; i < r.n; ++i) grammar_.push_back(r.grammar->start());
    mask_.resize(mask_words(n_vocab));
  }
}

const uint32_t* SampleStrategy::mask(int k) {
  if (grammar_.empty()) return nullptr;
  return grammar_[size_t(k)]->fill_mask(mask_) ? mask_.data() : nullptr;
}

void SampleStrategy::keep(int k, Token t) {
  samplers_[size_t(k)].accept(t);
  if (!grammar_.empty()) grammar_[size_t(k)]->accept(t);
}

void SampleStrategy::start() {
  seqs_[0] = seqs_reg_.open(live_);
  sched_.add(seqs_[0], live_.req);
}

int SampleStrategy::index_of(kv::SeqId seq) const {
  const auto it = std::find(seqs_.begin(), seqs_.end(), seq);
  check(it != seqs_.end(), "engine: sequence " + std::to_string(seq) + " is none of its request's samples");
  return static_cast<int>(it - seqs_.begin());
}

bool SampleStrategy::is_stop(Token t) const {
  return std::find(live_.req.stop_ids.begin(), live_.req.stop_ids.end(), t) != live_.req.stop_ids.end();
}

bool SampleStrategy::may_draft(kv::SeqId) const { return forked_ && live_.req.speculative; }

size_t SampleStrategy::usable_draft(kv::SeqId seq, std::span<const Token> draft) {
  if (grammar_.empty()) return draft.size();
  TokenConstraint& g = *grammar_[size_t(index_of(seq))];
  size_t j = 0;
  while (j < draft.size() && g.accept(draft[j])) ++j;
  g.rollback(static_cast<int>(j));
  return j;
}

void SampleStrategy::jump_forward(size_t k, size_t row, StepRows& rows) {
  std::vector<SampleResult>& out = rows.results[row];
  for (Token t : forced_) {  // (the scheduler drops what passes the output or length limit)
    keep(int(k), t);
    SampleResult r;
    r.token = t;  // logprob 0: the grammar allows nothing else here
    out.push_back(std::move(r));
    ++rows.appended[row];
    ++jump_->tokens;
  }
}

void SampleStrategy::emit(int k, const SampleResult* r, bool finished, FinishReason why, int cached) {
  live_.emit(k, r, finished, why, cached);
  if (finished && seqs_[size_t(k)]) {
    seqs_reg_.close(seqs_[size_t(k)]);
    seqs_[size_t(k)] = 0;
  }
}

void SampleStrategy::on_row(const PlanRow& row, StepRows& rows) {
  const int64_t nv = int64_t(rows.n_vocab);
  if (row.prompt_logits && live_.entropy) live_.entropy->prompt_chunk(row.s, row.prompt_logits, nv, rows.entropy_scratch);
  if (!row.logits) return;
  std::vector<SampleResult>& out = rows.results[row.i];
  if (!forked_) {
    sample_first(row, rows);
  } else {
    const std::span<const Token> draft(row.s.tokens.end() - row.s.num_draft, row.s.tokens.end());
    const size_t k = size_t(index_of(row.s.id));
    commit_run(samplers_[k], row.logits, rows.n_vocab, draft, &out, grammar_.empty() ? nullptr : grammar_[k].get(),
               mask_, jump_ ? &forced_ : nullptr);
    if (jump_) jump_forward(k, row.i, rows);
    if (live_.entropy)  // committed token t was drawn from row t (the last known token's, then drafts')
      for (size_t t = 0; t < out.size(); ++t)
        out[t].entropy = next_token_entropy(row.logits + int64_t(t) * nv, nv, rows.entropy_scratch);
  }
  for (const SampleResult& r : out) rows.committed[row.i].push_back(r.token);
}

void SampleStrategy::sample_first(const PlanRow& row, StepRows& rows) {
  const int n = live_.req.n;
  firsts_.clear();
  const uint32_t* allowed = mask(0);  // every sample is at the grammar's start
  for (int k = 0; k < n; ++k) firsts_.push_back(samplers_[size_t(k)].sample(row.logits, allowed));
  if (live_.entropy) {
    const float h = next_token_entropy(row.logits, int64_t(rows.n_vocab), rows.entropy_scratch);
    for (SampleResult& r : firsts_) r.entropy = h;
  }
  // The parent continues as the first sample that does not stop, so the others can still fork from it.
  int p = 0;
  while (p + 1 < n && is_stop(firsts_[size_t(p)].token)) ++p;
  keep(p, firsts_[size_t(p)].token);
  rows.results[row.i] = {firsts_[size_t(p)]};
  if (p != 0) {
    seqs_[size_t(p)] = seqs_[0];
    seqs_[0] = 0;
  }
  fork_parent_ = row.s.id;
}

void SampleStrategy::on_output(const RequestOutput& out, std::span<const SampleResult> results) {
  const int k = index_of(out.id);
  const size_t nt = out.new_tokens.size();
  if (nt == 0) emit(k, nullptr, out.finished, out.finish_reason, out.num_cached_prompt_tokens);
  for (size_t t = 0; t < nt; ++t) {  // one event per committed token; the last one carries the finish
    const bool last = t + 1 == nt;
    emit(k, &results[t], last && out.finished, last ? out.finish_reason : FinishReason::kNone,
         out.num_cached_prompt_tokens);
  }
  if (out.id != fork_parent_) return;
  fork_parent_ = 0;
  fork(out.id, k);
}

// The parent sequence sampled its first token for all n samples; it continues as `parent_index`, the others
// become forks sharing its blocks (or, when max_seqs is full, new requests whose prompt ends with their token).
void SampleStrategy::fork(kv::SeqId parent, int parent_index) {
  const ResolvedRequest& req = live_.req;
  const bool parent_alive = sched_.find(parent) != nullptr;
  for (int k = 0; k < req.n; ++k) {
    if (k == parent_index) continue;
    const SampleResult& first = firsts_[size_t(k)];
    const Token tok = first.token;
    keep(k, tok);
    const bool length = req.max_tokens <= 1 || static_cast<int>(req.prompt.size()) + 1 >= sched_.max_len();
    if (!parent_alive || is_stop(tok) || length) {
      emit(k, &first, true, is_stop(tok) ? FinishReason::kStop : FinishReason::kLength, 0);
      continue;
    }
    const kv::SeqId child = seqs_reg_.open(live_);
    seqs_[size_t(k)] = child;
    if (sched_.num_running() < sched_.config().max_seqs)
      sched_.fork(parent, child, tok);  // cannot finish: stop and length were ruled out above
    else
      sched_.add(child, req, std::span<const Token>(&tok, 1));
    emit(k, &first, false, FinishReason::kNone, 0);
  }
  forked_ = true;
}

void SampleStrategy::abort() {
  for (int k = 0; k < live_.req.n; ++k) {
    if (live_.sample_done(k)) continue;
    if (seqs_[size_t(k)]) sched_.abort(seqs_[size_t(k)]);  // blocks return to the pool now
    emit(k, nullptr, true, FinishReason::kAbort, 0);
  }
}

}  // namespace tinfer
