// The serving engine: one iteration per step() = inbox (adds, aborts) -> Scheduler::schedule -> ModelRunner
// (CoW copies, one ragged forward) -> per-sample Sampler -> Scheduler::update -> TokenEvents. n > 1 requests
// prefill once and fork into n scheduler sequences sharing the prompt's blocks after the first token. Beam
// search requests hand their rows to a BeamGroup (decoding/beam_group.h), which forks and prunes their
// sequences; their n results are emitted when the search ends.
#include <tinfer/engine.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "core/error.h"
#include "core/thread_pool.h"
#include "core/timer.h"
#include "engine/decoding/beam_group.h"
#include "engine/decoding/speculator.h"
#include "engine/entropy.h"
#include "engine/kv_budget.h"
#include "engine/model_runner.h"
#include "engine/scheduler.h"
#include "model/backend.h"
#include "model/model.h"

namespace tinfer {

namespace {

void throw_if(const std::vector<std::string>& errs, const std::string& what) {
  if (errs.empty()) return;
  std::string msg = what + ":";
  for (const auto& e : errs) msg += "\n  " + e;
  fail(msg);
}

// Every row of the plan decodes (one known token, maybe drafts): a sample of the step-cost model.
bool is_decode_only(const BatchPlan& plan) {
  for (const ScheduledRequest& s : plan.requests)
    if (!s.needs_logits || s.padding || s.tokens.size() != size_t(s.num_draft) + 1) return false;
  return true;
}

// Client state of one request: its samples (one Sampler and one scheduler sequence each) and callback.
struct Live {
  explicit Live(ResolvedRequest r) : req(std::move(r)) {}
  RequestId id = 0;
  ResolvedRequest req;
  EventCallback on_event;
  std::vector<Sampler> samplers;      // [n]
  std::vector<kv::SeqId> seqs;        // [n] scheduler sequence of each sample; 0 before the fork
  std::vector<int> completion;        // [n] tokens delivered so far
  std::vector<bool> done;             // [n]
  bool forked = false;                // n == 1, or the n sequences exist
  int num_done = 0;
  std::unique_ptr<BeamGroup> beam;    // beam search only (then samplers and seqs stay unused)
  int cached = 0;                     // beam search: prefix-cache hit of the prompt
  // report_entropy: each prompt position's next-token entropy (a preempted prefill rewrites its rows), then
  // their mean once the last prompt row is known.
  std::vector<float> prompt_row_entropy;
  float prompt_entropy = std::numeric_limits<float>::quiet_NaN();
};

class EngineImpl final : public Engine {
 public:
  EngineImpl(std::unique_ptr<Model> model, const EngineConfig& cfg) : config_(cfg), model_(std::move(model)) {
    throw_if(config_.validate(), "engine config");
    const ModelConfig& mc = model_->config();
    max_model_len_cfg_ = config_.max_model_len > 0 ? config_.max_model_len : static_cast<int>(mc.ctx_len);
    // Packs the weights (MemAvailable is read after); refuses a context the model cannot position.
    pool_ = std::make_unique<ThreadPool>(config_.threads);  // shared with a draft model's backend
    fwd_ = create_backend("cpu", *model_, BackendOptions{.pool = pool_.get(), .max_positions = max_model_len_cfg_,
                                                          .act_quant = config_.act_quant,
                                                          .skip = config_.skip,
                                                          .early_exit = config_.early_exit});
    precision_ = config_.kv_precision(mc.n_layers);
    const KvPrecision& dtype = precision_;
    // The reserved layout keeps every block by design: windows are not given back there.
    const kv::KvWindow window = config_.window_kv && config_.kv_layout == kv::KvLayout::kPaged
                                    ? kv_window_of(mc, config_.max_seqs, config_.max_batched_tokens)
                                    : kv::KvWindow{};
    const KvBudget budget = kv_budget(config_.kv_memory_bytes, config_.kv_fraction, mc, dtype,
                                            config_.block_size, config_.max_seqs, max_model_len_cfg_, window);
    plan_ = fit_kv_budget(mc, budget.budget_bytes, config_.block_size, max_model_len_cfg_, dtype, window);
    if (config_.verbose) std::fprintf(stderr, "%s\n", describe_kv_budget(plan_, budget, dtype).c_str());
    if (config_.verbose && !config_.skip.empty())
      std::fprintf(stderr, "layer skip: %s (%.1f of %.1f MiB of weights read per step)\n", config_.skip.describe().c_str(),
                   fwd_->weight_bytes_read() / 1048576.0, fwd_->weight_bytes() / 1048576.0);
    kv_ = fwd_->allocate_kv(plan_.num_blocks, plan_.block_size, dtype, plan_.window_blocks);

    SchedulerConfig sc;
    sc.max_batched_tokens = config_.max_batched_tokens;
    sc.max_seqs = config_.max_seqs;
    sc.chunked_prefill = config_.chunked_prefill;
    sc.max_model_len = max_model_len_cfg_;
    sc.max_background_running = config_.max_background_running;
    sc.cache_outputs = !config_.early_exit.enabled();
    kv::KvCacheConfig kc{.num_blocks = plan_.num_blocks,
                         .block_size = plan_.block_size,
                         .window_tokens = plan_.window_release ? plan_.window_tokens : 0,
                         .prefix_caching = config_.prefix_caching,
                         .layout = config_.kv_layout};
    // Mixed sliding-window models: group 0 the full-attention layers, group 1 the windowed ones (their own pool).
    const kv::KvGroupSpec groups[] = {{plan_.num_blocks, 0}, {plan_.window_blocks, plan_.window_tokens}};
    sched_ = std::make_unique<Scheduler>(sc, plan_.window_blocks > 0 ? kv::KvCacheGroups(kc, groups) : kv::KvCacheGroups(kc),
                                         make_batching_policy(config_.batching));
    max_len_ = sched_->max_len();
    limits_ = RequestLimits{.n_vocab = static_cast<int>(mc.n_vocab),
                            .max_len = max_len_,
                            .max_seqs = config_.max_seqs,
                            .default_max_tokens = config_.default_max_tokens,
                            .max_tokens_cap = config_.max_tokens_cap,
                            .background_min_tokens = config_.long_request_tokens};
    for (int32_t t = 0; t < mc.n_vocab; ++t)
      if (model_->tokenizer().is_eog(t)) limits_.eos_ids.push_back(t);
    runner_ = std::make_unique<ModelRunner>(*fwd_, *kv_);
    if (config_.spec.mode != SpecMode::kNone)
      spec_ = std::make_unique<Speculator>(
          config_.spec, make_drafter(config_.spec, *model_,
                                     DrafterEnv{.pool = pool_.get(),
                                                .target = fwd_.get(),
                                                .act_quant = config_.act_quant,
                                                .max_len = max_len_,
                                                .block_size = plan_.block_size,
                                                .kv_tokens = int64_t(plan_.num_blocks) * plan_.block_size,
                                                .disable_batch = config_.spec.disable_batch > 0
                                                                     ? config_.spec.disable_batch
                                                                     : config_.max_seqs,
                                                .verbose = config_.verbose}));
    publish_stats();
  }

  const RequestLimits& request_limits() const override { return limits_; }

  RequestId add_request(ResolvedRequest req, EventCallback on_event) override {
    auto live = std::make_unique<Live>(std::move(req));
    const ResolvedRequest& r = live->req;
    const int n_vocab = limits_.n_vocab;
    // Sample i draws with seed + i (mod 2^64), so samples differ yet each is reproducible; an absent
    // seed is resolved once.
    if (!r.use_beam_search) live->samplers.emplace_back(r.sampling, n_vocab, r.prompt);
    for (int i = 1; i < r.n && !r.use_beam_search; ++i) {
      SamplingParams p = r.sampling;
      p.seed = live->samplers[0].seed() + static_cast<uint64_t>(i);
      live->samplers.emplace_back(p, n_vocab, r.prompt);
    }
    live->seqs.assign(r.n, 0);
    live->completion.assign(r.n, 0);
    live->done.assign(r.n, false);
    live->forked = r.n == 1 || r.use_beam_search;
    live->on_event = std::move(on_event);
    std::lock_guard<std::mutex> lock(mu_);
    live->id = ++next_id_;
    const RequestId id = live->id;
    inbox_.push_back(std::move(live));
    ++unfinished_;
    return id;
  }

  void abort(RequestId id) override {
    std::lock_guard<std::mutex> lock(mu_);
    aborts_.push_back(id);
  }

  bool has_work() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return unfinished_ > 0 || !aborts_.empty();
  }

  bool step() override;

  EngineStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  OpProfile op_profile() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return profile_;
  }
  OpProfile& stepping_profile() override { return fwd_->profile(); }
  const Model& model() const override { return *model_; }
  const Tokenizer& tokenizer() const override { return model_->tokenizer(); }
  const EngineConfig& config() const override { return config_; }
  int max_model_len() const override { return max_len_; }

 private:
  struct Owner {
    Live* live;
    int index;
  };
  void drain_inbox(bool* did_something);
  void emit(Live& l, int index, const SampleResult* s, Token tok, bool finished, FinishReason why, int cached,
            const Hypothesis* beam = nullptr);
  void start_beam_search(Live& l);
  // Beam rounds around Scheduler::update: decide (and fill `committed` for continuing beams), then fork the
  // new beams and report finished searches.
  void beam_rounds_decide(const BatchPlan& plan, const std::vector<Live*>& beams,
                          std::vector<std::vector<Token>>& committed);
  void beam_rounds_finish(const std::vector<Live*>& beams, std::vector<RequestId>& touched);
  void finish_request_if_done(Live& l);
  bool is_stop(const Live& l, Token t) const;
  void fork_samples(Live& l, kv::SeqId parent, int parent_index, const std::vector<SampleResult>& first);
  void publish_stats();
  // report_entropy requests: the prompt rows' entropies of this step's prompt chunks, and each sampled row's.
  void record_prompt_entropy(const BatchPlan& plan);

  EngineConfig config_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<Backend> fwd_;
  kv::KvMemoryPlan plan_;
  KvPrecision precision_;
  std::unique_ptr<KvCache> kv_;
  std::unique_ptr<Scheduler> sched_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<Speculator> spec_;  // null without speculative decoding
  RequestLimits limits_;
  int max_model_len_cfg_ = 0;
  int max_len_ = 0;

  // Stepping thread only.
  std::unordered_map<RequestId, std::unique_ptr<Live>> live_;
  std::unordered_map<kv::SeqId, Owner> owner_;  // scheduler sequence -> (request, sample index)
  kv::SeqId next_seq_ = 0;
  int running_peak_ = 0;
  int64_t prompt_tokens_ = 0, generated_ = 0, aborts_done_ = 0;
  std::vector<float> entropy_scratch_;

  // Shared with client threads.
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Live>> inbox_;
  std::vector<RequestId> aborts_;
  RequestId next_id_ = 0;
  int unfinished_ = 0;
  EngineStats stats_;
  OpProfile profile_;  // counters as of the last step (no trace)
};

bool EngineImpl::is_stop(const Live& l, Token t) const {
  return std::find(l.req.stop_ids.begin(), l.req.stop_ids.end(), t) != l.req.stop_ids.end();
}

void EngineImpl::emit(Live& l, int index, const SampleResult* s, Token tok, bool finished, FinishReason why,
                      int cached, const Hypothesis* beam) {
  TokenEvent ev;
  ev.id = l.id;
  ev.index = index;
  if (s) {
    ev.has_token = true;
    ev.token = tok;
    ev.logprob = s->logprob;
    ev.top_logprobs = s->top;
    ev.entropy = s->entropy;
    ++l.completion[index];
    ++generated_;
  }
  ev.finished = finished;
  ev.finish_reason = why;
  ev.prompt_tokens = static_cast<int>(l.req.prompt.size());
  ev.cached_prompt_tokens = cached;
  ev.completion_tokens = l.completion[index];
  ev.clamped = l.req.clamped;
  ev.prompt_entropy = l.prompt_entropy;
  if (beam) {
    ev.beam = true;
    ev.beam_logprob = beam->logprob;
    ev.beam_score = beam->score;
  }
  if (finished && !l.done[index]) {
    l.done[index] = true;
    ++l.num_done;
    if (l.seqs[index]) {
      owner_.erase(l.seqs[index]);
      if (spec_) spec_->release(l.seqs[index]);
    }
  }
  if (l.on_event) l.on_event(ev);
}

void EngineImpl::finish_request_if_done(Live& l) {
  if (l.num_done < l.req.n) return;
  const RequestId id = l.id;
  live_.erase(id);  // l dangles from here on
  std::lock_guard<std::mutex> lock(mu_);
  --unfinished_;
}

void EngineImpl::drain_inbox(bool* did_something) {
  std::vector<std::unique_ptr<Live>> adds;
  std::vector<RequestId> aborts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    adds.swap(inbox_);
    aborts.swap(aborts_);
  }
  for (auto& up : adds) {
    Live& l = *up;
    prompt_tokens_ += static_cast<int64_t>(l.req.prompt.size());
    if (l.req.use_beam_search) {
      start_beam_search(l);
      live_[l.id] = std::move(up);
      continue;
    }
    const kv::SeqId seq = ++next_seq_;
    sched_->add(seq, RequestParams{.prompt = l.req.prompt,
                                   .max_tokens = l.req.max_tokens,
                                   .stop_ids = l.req.stop_ids,
                                   .cache_salt = l.req.cache_salt,
                                   .priority = l.req.priority,
                                   .prompt_logits = l.req.report_entropy});
    if (l.req.report_entropy) l.prompt_row_entropy.assign(l.req.prompt.size(), std::numeric_limits<float>::quiet_NaN());
    l.seqs[0] = seq;
    owner_[seq] = {&l, 0};
    live_[l.id] = std::move(up);
  }
  for (RequestId id : aborts) {
    auto it = live_.find(id);
    if (it == live_.end()) continue;  // unknown or already finished
    Live& l = *it->second;
    if (l.beam) l.beam->abort_all();  // every beam's blocks return now
    for (int i = 0; i < l.req.n; ++i) {
      if (l.done[i]) continue;
      if (l.seqs[i]) sched_->abort(l.seqs[i]);  // blocks return to the pool now
      emit(l, i, nullptr, -1, true, FinishReason::kAbort, 0);
    }
    if (!l.forked && l.seqs[0]) owner_.erase(l.seqs[0]);
    ++aborts_done_;
    *did_something = true;
    finish_request_if_done(l);
  }
}

// The parent sequence sampled its first token for all n samples; it continues as `parent_index`, the others
// become forks sharing its blocks (or, when max_seqs is full, new requests whose prompt ends with their token).
void EngineImpl::fork_samples(Live& l, kv::SeqId parent, int parent_index, const std::vector<SampleResult>& first) {
  const bool parent_alive = sched_->find(parent) != nullptr;
  for (int k = 0; k < l.req.n; ++k) {
    if (k == parent_index) continue;
    const Token tok = first[k].token;
    l.samplers[k].accept(tok);
    const bool length = l.req.max_tokens <= 1 || static_cast<int>(l.req.prompt.size()) + 1 >= max_len_;
    if (!parent_alive || is_stop(l, tok) || length) {
      emit(l, k, &first[k], tok, true, is_stop(l, tok) ? FinishReason::kStop : FinishReason::kLength, 0);
      continue;
    }
    const kv::SeqId child = ++next_seq_;
    l.seqs[k] = child;
    owner_[child] = {&l, k};
    if (sched_->num_running() < sched_->config().max_seqs) {
      sched_->fork(parent, child, tok);  // cannot finish: stop and length were ruled out above
    } else {
      std::vector<Token> prompt = l.req.prompt;
      prompt.push_back(tok);
      sched_->add(child, RequestParams{.prompt = std::move(prompt),
                                       .max_tokens = l.req.max_tokens - 1,
                                       .stop_ids = l.req.stop_ids,
                                       .cache_salt = l.req.cache_salt,
                                       .priority = l.req.priority});
    }
    emit(l, k, &first[k], tok, false, FinishReason::kNone, 0);
  }
  l.forked = true;
}

bool EngineImpl::step() {
  OpProfile* prof = &fwd_->profile();
  bool did = false;
  std::optional<OpTimer> timer(std::in_place, prof, Op::kSchedule);
  drain_inbox(&did);
  if (spec_) {  // drafts for the decoding requests that allow them, handed to the scheduler
    timer.emplace(prof, Op::kDraft);
    spec_->propose(*sched_, [&](kv::SeqId seq) {
      auto it = owner_.find(seq);
      return it != owner_.end() && it->second.live->forked && it->second.live->req.speculative;
    });
    timer.emplace(prof, Op::kSchedule);
  }
  const BatchPlan plan = sched_->schedule();
  if (plan.empty()) {
    timer.reset();
    publish_stats();
    return did;
  }
  running_peak_ = std::max(running_peak_, sched_->num_running());
  timer.reset();
  const double t_forward = now_s();
  runner_->run(plan);  // (the backend times the forward's own categories)
  if (spec_ && is_decode_only(plan)) spec_->observe_step(plan.num_tokens, now_s() - t_forward);
  timer.emplace(prof, Op::kSample);
  record_prompt_entropy(plan);

  // Sample (and verify drafts). A not-yet-forked n > 1 request draws all n first tokens from the same row.
  std::vector<std::vector<Token>> committed(plan.requests.size());
  std::vector<std::vector<SampleResult>> results(plan.requests.size());
  std::unordered_map<kv::SeqId, std::vector<SampleResult>> firsts;  // parent seq -> n first samples
  std::vector<Live*> beams;                                         // beam-search requests with rows
  for (size_t i = 0; i < plan.requests.size(); ++i) {
    const ScheduledRequest& s = plan.requests[i];
    const float* logits = runner_->logits(i);
    if (!logits || s.padding) continue;  // (a padding row's output is discarded)
    const Owner o = owner_.at(s.id);
    Live& l = *o.live;
    if (l.beam) {
      l.beam->on_row(s.id, logits);
      if (std::find(beams.begin(), beams.end(), &l) == beams.end()) beams.push_back(&l);
    } else if (l.forked) {
      const std::span<const Token> draft(s.tokens.end() - s.num_draft, s.tokens.end());
      const int kept = commit_run(l.samplers[o.index], logits, runner_->n_vocab(), draft, &results[i]);
      if (spec_) spec_->record(s.id, s.num_draft, kept);
      if (l.req.report_entropy)  // committed token t was drawn from row t (the last known token's, then drafts')
        for (size_t t = 0; t < results[i].size(); ++t)
          results[i][t].entropy =
              next_token_entropy(logits + t * runner_->n_vocab(), int64_t(runner_->n_vocab()), entropy_scratch_);
    } else {
      std::vector<SampleResult> all;
      for (int k = 0; k < l.req.n; ++k) all.push_back(l.samplers[k].sample(logits));
      if (l.req.report_entropy) {
        const float h = next_token_entropy(logits, int64_t(runner_->n_vocab()), entropy_scratch_);
        for (SampleResult& r : all) r.entropy = h;
      }
      // The parent continues as the first sample that does not stop, so the others can still fork from it.
      int p = 0;
      while (p + 1 < l.req.n && is_stop(l, all[p].token)) ++p;
      l.samplers[p].accept(all[p].token);
      results[i] = {all[p]};
      if (p != 0) {
        l.seqs[p] = l.seqs[0];
        l.seqs[0] = 0;
        owner_[s.id] = {&l, p};
      }
      firsts.emplace(s.id, std::move(all));
    }
    for (const SampleResult& r : results[i]) committed[i].push_back(r.token);
  }

  beam_rounds_decide(plan, beams, committed);

  timer.emplace(prof, Op::kSchedule);  // update, events and bookkeeping
  const std::vector<RequestOutput> outs = sched_->update(plan, std::span<const std::vector<Token>>(committed));
  std::unordered_map<kv::SeqId, size_t> plan_index;
  for (size_t i = 0; i < plan.requests.size(); ++i) plan_index[plan.requests[i].id] = i;
  std::vector<RequestId> touched;
  for (const RequestOutput& out : outs) {
    const Owner o = owner_.at(out.id);
    Live& l = *o.live;
    if (l.beam) {  // beams report only their final hypotheses (beam_rounds_finish)
      l.cached = std::max(l.cached, out.num_cached_prompt_tokens);
      continue;
    }
    const size_t i = plan_index.at(out.id);
    const size_t nt = out.new_tokens.size();
    if (nt == 0) emit(l, o.index, nullptr, -1, out.finished, out.finish_reason, out.num_cached_prompt_tokens);
    for (size_t t = 0; t < nt; ++t) {  // one event per committed token; the last one carries the finish
      const bool last = t + 1 == nt;
      emit(l, o.index, &results[i][t], out.new_tokens[t], last && out.finished,
           last ? out.finish_reason : FinishReason::kNone, out.num_cached_prompt_tokens);
    }
    auto f = firsts.find(out.id);
    if (f != firsts.end()) fork_samples(l, out.id, o.index, f->second);
    touched.push_back(l.id);
  }
  beam_rounds_finish(beams, touched);
  for (RequestId id : touched) {
    auto it = live_.find(id);
    if (it != live_.end()) finish_request_if_done(*it->second);
  }
  running_peak_ = std::max(running_peak_, sched_->num_running());
  timer.reset();
  publish_stats();
  return true;
}

void EngineImpl::record_prompt_entropy(const BatchPlan& plan) {
  const int64_t nv = int64_t(runner_->n_vocab());
  for (size_t i = 0; i < plan.requests.size(); ++i) {
    const ScheduledRequest& s = plan.requests[i];
    const float* rows = runner_->prompt_logits(i);
    if (!rows || s.padding) continue;
    auto it = owner_.find(s.id);
    if (it == owner_.end()) continue;
    Live& l = *it->second.live;
    for (size_t t = 0; t < s.tokens.size(); ++t)
      l.prompt_row_entropy.at(size_t(s.start_pos) + t) =
          next_token_entropy(rows + int64_t(t) * nv, nv, entropy_scratch_);
    if (!s.needs_logits) continue;  // the prompt's last row is not computed yet
    double sum = 0;
    for (float h : l.prompt_row_entropy) sum += h;
    l.prompt_entropy = static_cast<float>(sum / double(l.prompt_row_entropy.size()));
  }
}

void EngineImpl::start_beam_search(Live& l) {
  Live* lp = &l;
  l.beam = std::make_unique<BeamGroup>(
      l.req, limits_.n_vocab, *sched_,
      BeamGroup::Hooks{.new_seq =
                           [this, lp] {
                             const kv::SeqId seq = ++next_seq_;
                             owner_[seq] = {lp, 0};
                             return seq;
                           },
                       .drop_seq =
                           [this](kv::SeqId seq) {
                             owner_.erase(seq);
                             if (spec_) spec_->release(seq);
                           }});
  l.beam->start();
}

void EngineImpl::beam_rounds_decide(const BatchPlan& plan, const std::vector<Live*>& beams,
                                    std::vector<std::vector<Token>>& committed) {
  for (Live* l : beams) l->beam->decide();
  for (size_t i = 0; i < plan.requests.size(); ++i) {
    auto it = owner_.find(plan.requests[i].id);  // (sequences the round dropped are gone)
    if (it == owner_.end() || !it->second.live->beam) continue;
    if (auto t = it->second.live->beam->commit(plan.requests[i].id)) committed[i] = {*t};
  }
}

void EngineImpl::beam_rounds_finish(const std::vector<Live*>& beams, std::vector<RequestId>& touched) {
  for (Live* lp : beams) {
    Live& l = *lp;
    l.beam->after_update();
    if (!l.beam->done()) continue;
    // The n best hypotheses, best first, as sample indices 0..n-1: one event per token, the last one finishing.
    const std::vector<Hypothesis> hyps = l.beam->results();
    for (int k = 0; k < l.req.n; ++k) {
      if (k >= static_cast<int>(hyps.size())) {  // fewer hypotheses than beams (every candidate stopped early)
        emit(l, k, nullptr, -1, true, FinishReason::kStop, l.cached);
        continue;
      }
      const Hypothesis& h = hyps[size_t(k)];
      for (size_t t = 0; t < h.tokens.size(); ++t) {
        const bool last = t + 1 == h.tokens.size();
        SampleResult r;
        r.token = h.tokens[t];
        r.logprob = h.token_logprobs[t];
        emit(l, k, &r, r.token, last,
             last ? (h.stopped ? FinishReason::kStop : FinishReason::kLength) : FinishReason::kNone, l.cached, &h);
      }
    }
    touched.push_back(l.id);
  }
}

void EngineImpl::publish_stats() {
  const OpProfile counters = fwd_->profile().counters();
  const kv::KvStats ks = sched_->kv().stats();
  const SchedulerStats ss = sched_->stats();
  std::lock_guard<std::mutex> lock(mu_);
  profile_ = counters;
  stats_.running = sched_->num_running();
  stats_.waiting = sched_->num_waiting() + static_cast<int>(inbox_.size());
  stats_.background_running = sched_->num_background_running();
  stats_.background_waiting = sched_->num_background_waiting();
  stats_.kv_blocks_total = ks.num_blocks;
  stats_.kv_blocks_used = ks.used;
  stats_.kv_blocks_peak = ks.peak_used;
  stats_.prefix_hit_rate =
      ks.prefix_query_tokens > 0 ? double(ks.prefix_hit_tokens) / double(ks.prefix_query_tokens) : 0.0;
  stats_.prompt_tokens = prompt_tokens_;
  stats_.generated_tokens = generated_;
  stats_.preemptions = ss.preemptions;
  stats_.aborts = aborts_done_;
  stats_.steps = ss.steps;
  stats_.computed_tokens = ss.scheduled_tokens;
  stats_.padding_tokens = ss.padding_tokens;
  stats_.kv_waste_slots = ks.waste_slots;
  stats_.running_peak = running_peak_;
  stats_.kv_capacity_tokens = static_cast<int64_t>(ks.num_blocks) * plan_.block_size;
  stats_.kv_bytes_per_token = static_cast<int64_t>(plan_.bytes_per_token);
  if (sched_->kv().num_groups() > 1) {
    const kv::KvStats ws = sched_->kv().group(1).stats();
    stats_.kv_window_blocks_total = ws.num_blocks, stats_.kv_window_blocks_peak = ws.peak_used;
    stats_.kv_window_blocks_used = ws.used;
    stats_.kv_window_bytes_per_token = static_cast<int64_t>(plan_.window_bytes_per_token);
  }
  stats_.kv_types = precision_.describe();
  stats_.spec_mode = spec_mode_name(config_.spec.mode);
  stats_.spec_drafted = ss.spec_drafted;
  stats_.spec_accepted = ss.spec_accepted;
  stats_.spec_steps = ss.spec_steps;
  stats_.spec_row_cost = spec_ ? spec_->row_cost() : 0.0;
  const EarlyExitCounters ex = fwd_->early_exit_counters();
  stats_.early_exit_eligible = ex.eligible;
  stats_.early_exit_exited = ex.exited;
  stats_.early_exit_mean_layers = ex.mean_layers(model_->config().n_layers);
}

}  // namespace

std::unique_ptr<Engine> Engine::create(std::unique_ptr<Model> model, const EngineConfig& config) {
  check(model != nullptr, "engine: no model");
  return std::make_unique<EngineImpl>(std::move(model), config);
}

std::unique_ptr<Engine> Engine::create(const EngineConfig& config) {
  throw_if(config.validate(), "engine config");
  check(!config.model_path.empty(), "engine config: model_path is empty");
  ModelLoadOptions opts;
  opts.tokenizer_path = config.tokenizer_path;
  return create(Model::load(config.model_path, opts), config);
}

}  // namespace tinfer
