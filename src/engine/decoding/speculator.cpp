// Speculator: drafting, adaptive K and verification (see speculator.h).
#include "engine/decoding/speculator.h"

#include <algorithm>
#include <cmath>
#include <queue>

#include <tinfer/engine.h>

#include "tinfer/error.h"
#include "core/timer.h"
#include "engine/scheduler.h"

namespace tinfer {

const char* spec_mode_name(SpecMode m) {
  switch (m) {
    case SpecMode::kNone:
      return "none";
    case SpecMode::kNgram:
      return "ngram";
    case SpecMode::kDraft:
      return "draft";
    case SpecMode::kSelf:
      return "self";
  }
  return "?";
}

std::optional<SpecMode> parse_spec_mode(std::string_view s) {
  for (SpecMode m : {SpecMode::kNone, SpecMode::kNgram, SpecMode::kDraft, SpecMode::kSelf})
    if (s == spec_mode_name(m)) return m;
  return std::nullopt;
}

std::vector<std::string> SpecConfig::validate() const {
  std::vector<std::string> errs;
  if (num_tokens < 1 || num_tokens > 16) errs.push_back("spec num_tokens must be in [1, 16]");
  if (disable_batch < 0) errs.push_back("spec disable_batch must be >= 0 (0 = never)");
  if (!(row_cost > 0 && row_cost <= 1)) errs.push_back("spec row_cost must be in (0, 1]");
  if (ngram_min < 1 || ngram_max > 8 || ngram_min > ngram_max)
    errs.push_back("spec ngram sizes must satisfy 1 <= min <= max <= 8");
  if (mode == SpecMode::kDraft && draft_model.empty()) errs.push_back("--spec draft needs --draft-model FILE");
  if (mode == SpecMode::kSelf && self_layers < 1) errs.push_back("--spec self needs --spec-self-layers L >= 1");
  return errs;
}

Speculator::Speculator(const SpecConfig& config, std::unique_ptr<Drafter> drafter)
    : config_(config), cost_(config.row_cost), drafter_(std::move(drafter)) {
  check(drafter_ != nullptr, "speculator: no drafter");
}

std::vector<int> Speculator::allocate(std::span<const double> acceptance, std::span<const bool> probe_due,
                                      int batch) const {
  const size_t n = acceptance.size();
  std::vector<int> k(n, 0);
  if (n == 0) return k;
  const int kmax = config_.num_tokens;
  if (!config_.adaptive) {
    std::fill(k.begin(), k.end(), kmax);
    return k;
  }
  // Greedy by marginal gain a_i^(k_i + 1): the next row of request i adds that many expected tokens and costs
  // c (its verify row) + d (drafting it), in one-row steps. Time so far: T = 1 + c (rows - 1) + d drafts.
  const double c = cost_.row_cost(), d = draft_cost();
  const double b = double(std::max<int>(batch, static_cast<int>(n)));
  double tokens = b, time = 1.0 + c * (b - 1.0);
  using Item = std::pair<double, size_t>;  // (gain, request)
  std::priority_queue<Item> pq;
  for (size_t i = 0; i < n; ++i) pq.push({acceptance[i], i});
  while (!pq.empty()) {
    const auto [gain, i] = pq.top();
    pq.pop();
    if (gain <= (c + d) * tokens / time) break;  // no row left raises tokens per unit time
    ++k[i];
    tokens += gain;
    time += c + d;
    if (k[i] < kmax) pq.push({gain * acceptance[i], i});
  }
  for (size_t i = 0; i < n; ++i)
    if (k[i] == 0 && probe_due[i]) k[i] = 1;  // probe: acceptance may have come back
  return k;
}

double Speculator::draft_cost() const {
  const double one_row = cost_.one_row_seconds();
  return one_row > 0 && draft_tokens_ > 0 ? (draft_seconds_ / draft_tokens_) / one_row : 0.0;
}

double Speculator::acceptance(kv::SeqId seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? global_acceptance() : it->second.kept / it->second.tried;
}

Speculator::SeqState& Speculator::state(kv::SeqId seq) {
  auto [it, added] = seqs_.try_emplace(seq);
  if (added) it->second.kept = 2.0 * global_acceptance(), it->second.probe_every = global_probe_every_;
  return it->second;
}

void Speculator::propose(Scheduler& sched, DraftGate& gate) {
  std::vector<kv::SeqId> ids = sched.decoding();
  const int batch = static_cast<int>(ids.size());
  if (config_.disable_batch > 0 && batch >= config_.disable_batch) return;
  std::erase_if(ids, [&](kv::SeqId s) { return !gate.may_draft(s); });
  if (ids.empty()) return;
  std::vector<double> acc(ids.size());
  std::unique_ptr<bool[]> due(new bool[ids.size()]);
  for (size_t i = 0; i < ids.size(); ++i) {
    const SeqState& st = state(ids[i]);
    acc[i] = st.kept / st.tried;
    due[i] = st.idle >= st.probe_every;
  }
  const std::vector<int> k = allocate(acc, std::span<const bool>(due.get(), ids.size()), batch);
  const double c = cost_.row_cost(), d = draft_cost();
  queries_.clear();
  int64_t asked = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    SeqState& st = state(ids[i]);
    if (k[i] == 0) {
      ++st.idle;
      continue;
    }
    // A probe is a draft the model would not buy (its one token's gain is below its price).
    st.probing = acc[i] <= (c + d);
    st.idle = 0;
    const Request* r = sched.find(ids[i]);
    queries_.push_back(DraftQuery{.seq = ids[i], .tokens = r->tokens, .k = k[i], .draft = {}});
    asked += k[i];
  }
  if (queries_.empty()) return;
  const double t0 = now_s();
  drafter_->propose(queries_);
  // Drafting's price per token asked for, decayed: a draft model's forwards; prompt lookup's ~0.
  draft_seconds_ = 0.95 * draft_seconds_ + (now_s() - t0);
  draft_tokens_ = 0.95 * draft_tokens_ + double(asked);
  for (DraftQuery& q : queries_) {
    if (q.draft.empty()) continue;
    if (static_cast<int>(q.draft.size()) > q.k) q.draft.resize(size_t(q.k));
    q.draft.resize(gate.usable_draft(q.seq, q.draft));
    if (q.draft.empty()) continue;
    ++stats_.proposals;
    stats_.proposed += static_cast<int64_t>(q.draft.size());
    sched.propose(q.seq, std::move(q.draft));
  }
}

void Speculator::record(kv::SeqId seq, int drafted, int accepted) {
  if (drafted <= 0) return;
  SeqState& s = state(seq);
  // Drafts are tried in order until one fails: `accepted` successes in accepted (+1 if one failed) trials.
  // Decay 0.8 per verify step: the estimate follows the last few steps of text. The global estimate decays
  // slowly: it is the prior of requests to come.
  const double tried = accepted + (accepted < drafted ? 1 : 0);
  s.kept = 0.8 * s.kept + accepted;
  s.tried = 0.8 * s.tried + tried;
  if (s.probing) {  // a failed probe doubles the wait for the next one; a kept token resets it
    s.probe_every = accepted > 0 ? kProbeEvery : std::min(2 * s.probe_every, kMaxProbeEvery);
    // New requests wait as long as the last probe of any request says (a useless drafter stays asleep).
    global_probe_every_ = accepted > 0 ? kProbeEvery : std::min(2 * global_probe_every_, kMaxProbeEvery);
  }
  s.probing = false;
  global_kept_ = 0.98 * global_kept_ + accepted;
  global_tried_ = 0.98 * global_tried_ + tried;
}

void Speculator::release(kv::SeqId seq) {
  seqs_.erase(seq);
  drafter_->release(seq);
}

void Speculator::before_schedule(Scheduler& sched, DraftGate& gate,
                                 PhaseTimer& timer) {
  timer.to(Op::kDraft);
  propose(sched, gate);
  timer.to(Op::kSchedule);
}

namespace {
// Every row of the plan decodes (one known token, maybe drafts): a sample of the step-cost model.
bool is_decode_only(const BatchPlan& plan) {
  for (const ScheduledRequest& s : plan.requests)
    if (!s.needs_logits || s.padding || s.tokens.size() != size_t(s.num_draft) + 1) return false;
  return true;
}
}  // namespace

void Speculator::after_forward(const BatchPlan& plan, double seconds) {
  if (is_decode_only(plan)) observe_step(plan.num_tokens, seconds);
}

void Speculator::after_commit(const BatchPlan& plan, std::span<const std::vector<kv::Token>> committed,
                              std::span<const int> appended) {
  for (size_t i = 0; i < plan.requests.size(); ++i) {  // a run keeps its accepted drafts and one sampled token
    const ScheduledRequest& s = plan.requests[i];
    // (a grammar's forced continuation, appended after the run, is no draft's: not counted)
    if (s.num_draft > 0 && !s.padding && !committed[i].empty())
      record(s.id, s.num_draft, static_cast<int>(committed[i].size()) - 1 - appended[i]);
  }
}

void Speculator::add_stats(EngineStats& stats) const { stats.spec_row_cost = row_cost(); }

int commit_run(Sampler& sampler, const float* rows, size_t n_vocab, std::span<const kv::Token> draft,
               std::vector<SampleResult>* out, TokenConstraint* grammar, std::span<uint32_t> mask,
               std::vector<kv::Token>* forced) {
  out->clear();
  if (forced) forced->clear();
  for (size_t j = 0; j <= draft.size(); ++j) {
    const float* row = rows + j * n_vocab;
    const uint32_t* allowed = grammar && grammar->fill_mask(mask) ? mask.data() : nullptr;
    const SampleResult& r = sampler.sample(row, allowed);
    sampler.accept(r.token);
    if (grammar) grammar->accept(r.token);
    out->push_back(r);
    if (forced && grammar) {
      *forced = grammar->forced_tokens();
      if (!forced->empty()) return static_cast<int>(j);
    }
    if (j == draft.size() || r.token != draft[j]) return static_cast<int>(j);
  }
  return static_cast<int>(draft.size());  // (not reached)
}

}  // namespace tinfer
