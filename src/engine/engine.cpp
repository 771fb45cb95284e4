// The serving engine: one iteration per step() = inbox (adds, aborts) -> Scheduler::schedule -> ModelRunner
// (CoW copies, one ragged forward) -> each request's DecodeStrategy chooses its rows' tokens -> Scheduler::update
// -> the strategies report TokenEvents (through LiveRequest::emit). How a request decodes (plain, n > 1 forking,
// beam search) lives in its strategy (decoding/decode_strategy.h); work beside decoding (speculation) enters
// through the one StepExtension (step_extension.h).
#include <tinfer/engine.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "core/timer.h"
#include "engine/decoding/beam_strategy.h"
#include "engine/decoding/sample_strategy.h"
#include "engine/decoding/speculator.h"
#include "engine/kv_budget.h"
#include "engine/live_request.h"
#include "engine/model_runner.h"
#include "engine/phase_timer.h"
#include "engine/scheduler.h"
#include "engine/step_extension.h"
#include "backend/backend.h"
#include "backend/k_smoothing_at_load.h"
#include "model/model.h"

namespace tinfer {

namespace {

void throw_if(const std::vector<std::string>& errs, const std::string& what) {
  if (errs.empty()) return;
  std::string msg = what + ":";
  for (const auto& e : errs) msg += "\n  " + e;
  fail(msg);
}

class EngineImpl final : public Engine, private SeqRegistry, private DraftGate {
 public:
  EngineImpl(std::unique_ptr<Model> model, const EngineConfig& cfg) : config_(cfg), model_(std::move(model)) {
    throw_if(config_.validate(), "engine config");
    const ModelConfig& mc = model_->config();
    max_model_len_cfg_ = config_.scheduler.max_model_len > 0 ? config_.scheduler.max_model_len
                                                             : static_cast<int>(mc.ctx_len);
    // Packs the weights (MemAvailable is read after); refuses a context the model cannot position.
    pool_ = std::make_unique<ThreadPool>(config_.threads);  // shared with a draft model's backend
    fwd_ = create_backend("cpu", *model_, BackendOptions{.pool = pool_.get(), .max_positions = max_model_len_cfg_,
                                                          .act_quant = config_.act_quant,
                                                          .skip = config_.plans.skip,
                                                          .early_exit = config_.plans.early_exit,
                                                          .packed_cache = config_.packed_cache_dir,
                                                          .packed_cache_copy = config_.packed_cache_copy});
    allocate_kv();
    make_scheduler();
    runner_ = std::make_unique<ModelRunner>(*fwd_, *kv_);
    ext_ = make_extension();
    publish_stats();
  }

  const RequestLimits& request_limits() const override { return limits_; }

  RequestId add_request(ResolvedRequest req, EventCallback on_event) override {
    auto live = std::make_unique<LiveRequest>(std::move(req), std::move(on_event), &generated_);
    LiveRequest& l = *live;  // (the strategy touches the scheduler only once start() runs, on the stepping thread)
    SeqRegistry& seqs = *this;
    if (l.req.use_beam_search)
      l.strategy = std::make_unique<BeamStrategy>(l, limits_.n_vocab, *sched_, seqs);
    else
      l.strategy = std::make_unique<SampleStrategy>(l, limits_.n_vocab, *sched_, seqs, &jump_);
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
  // SeqRegistry: scheduler sequence -> request, for the strategies.
  kv::SeqId open(LiveRequest& owner) override {
    const kv::SeqId seq = ++next_seq_;
    owner_[seq] = &owner;
    return seq;
  }
  void close(kv::SeqId seq) override {
    owner_.erase(seq);
    ext_->release(seq);
  }
  // DraftGate: each sequence's strategy answers for it.
  bool may_draft(kv::SeqId seq) const override {
    auto it = owner_.find(seq);
    return it != owner_.end() && it->second->strategy->may_draft(seq);
  }
  size_t usable_draft(kv::SeqId seq, std::span<const kv::Token> draft) override {
    return owner_.at(seq)->strategy->usable_draft(seq, draft);
  }
  void allocate_kv();     // config_.kv and plans -> the KV budget, its blocks, the cache
  void make_scheduler();  // config_.scheduler whole (+ the model's context, the cache's groups); request limits
  std::unique_ptr<StepExtension> make_extension();  // config_.spec whole: a Speculator, or none
  void drain_inbox(bool* did_something);
  // The strategies choose what every row commits (rows_): on_row per row, then decide per request (touched_).
  void choose_tokens(const BatchPlan& plan);
  // After Scheduler::update: each output to its strategy, after_update per request, finished requests leave.
  void deliver(const BatchPlan& plan, const std::vector<RequestOutput>& outs);
  void finish_if_done(RequestId id);
  void publish_stats();

  EngineConfig config_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<Backend> fwd_;
  kv::KvMemoryPlan plan_;
  KvPrecision precision_;
  std::unique_ptr<KvCache> kv_;
  std::unique_ptr<Scheduler> sched_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<StepExtension> ext_;  // speculative decoding, or NoStepExtension
  RequestLimits limits_;
  int max_model_len_cfg_ = 0;
  int max_len_ = 0;

  // Stepping thread only.
  std::unordered_map<RequestId, std::unique_ptr<LiveRequest>> live_;
  std::unordered_map<kv::SeqId, LiveRequest*> owner_;  // scheduler sequence -> request
  kv::SeqId next_seq_ = 0;
  int running_peak_ = 0;
  int64_t prompt_tokens_ = 0, generated_ = 0, aborts_done_ = 0;
  JumpForward jump_{.on = config_.grammar_jump_forward};  // structured output's jump-forward
  StepRows rows_;                     // this step's rows (storage reused)
  std::vector<LiveRequest*> touched_;  // requests with rows this step, in plan order
  std::vector<RequestId> finishing_;  // requests that may have finished this step

  // Shared with client threads.
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<LiveRequest>> inbox_;
  std::vector<RequestId> aborts_;
  RequestId next_id_ = 0;
  int unfinished_ = 0;
  EngineStats stats_;
  OpProfile profile_;  // counters as of the last step (no trace)
};

void EngineImpl::allocate_kv() {
  const ModelConfig& mc = model_->config();
  const EngineConfig::Kv& kvc = config_.kv;
  precision_ = config_.kv_precision(mc.n_layers);
  if (kvc.k_smooth_at_load && config_.plans.kv_layers.empty()) {  // a plan says whether K is smoothed
    const KSmoothingAtLoad ks = apply_k_smoothing_at_load(precision_, *fwd_, model_->tokenizer());
    if (config_.verbose && ks.tokens > 0)
      std::fprintf(stderr, "K smoothing: calibrated at load on %lld built-in tokens in %.2f s\n", (long long)ks.tokens,
                   ks.seconds);
  }
  const KvPrecision& dtype = precision_;
  // The reserved layout keeps every block by design: windows are not given back there.
  const kv::KvWindow window = kvc.window && kvc.layout == kv::KvLayout::kPaged
                                  ? kv_window_of(mc, config_.scheduler.max_seqs, config_.scheduler.max_batched_tokens)
                                  : kv::KvWindow{};
  const KvBudget budget = kv_budget(kvc.memory_bytes, kvc.fraction, mc, dtype, kvc.block_size,
                                    config_.scheduler.max_seqs, max_model_len_cfg_, window);
  plan_ = fit_kv_budget(mc, budget.budget_bytes, kvc.block_size, max_model_len_cfg_, dtype, window);
  if (config_.verbose) std::fprintf(stderr, "%s\n", describe_kv_budget(plan_, budget, dtype).c_str());
  if (config_.verbose && !config_.plans.skip.empty())
    std::fprintf(stderr, "layer skip: %s (%.1f of %.1f MiB of weights read per step)\n",
                 config_.plans.skip.describe().c_str(), fwd_->weight_bytes_read() / 1048576.0,
                 fwd_->weight_bytes() / 1048576.0);
  kv_ = fwd_->allocate_kv(plan_.num_blocks, plan_.block_size, dtype, plan_.window_blocks);
}

void EngineImpl::make_scheduler() {
  const ModelConfig& mc = model_->config();
  SchedulerConfig sc = config_.scheduler;
  sc.max_model_len = max_model_len_cfg_;
  sc.cache_outputs = !config_.plans.early_exit.enabled();
  kv::KvCacheConfig kc{.num_blocks = plan_.num_blocks,
                       .block_size = plan_.block_size,
                       .window_tokens = plan_.window_release ? plan_.window_tokens : 0,
                       .prefix_caching = config_.kv.prefix_caching,
                       .layout = config_.kv.layout,
                       .reuse = config_.kv.reuse};
  // Mixed sliding-window models: group 0 the full-attention layers, group 1 the windowed ones (their own pool).
  const kv::KvGroupSpec groups[] = {{plan_.num_blocks, 0}, {plan_.window_blocks, plan_.window_tokens}};
  sched_ = std::make_unique<Scheduler>(sc, plan_.window_blocks > 0 ? kv::KvCacheGroups(kc, groups) : kv::KvCacheGroups(kc),
                                       make_batching_policy(config_.batching));
  max_len_ = sched_->max_len();
  const EngineConfig::Requests& rq = config_.requests;
  limits_ = RequestLimits{.n_vocab = static_cast<int>(mc.n_vocab),
                          .max_len = max_len_,
                          .max_seqs = sc.max_seqs,
                          .default_max_tokens = rq.default_max_tokens,
                          .max_tokens_cap = rq.max_tokens_cap,
                          .background_min_tokens = rq.long_request_tokens};
  for (int32_t t = 0; t < mc.n_vocab; ++t)
    if (model_->tokenizer().is_eog(t)) limits_.eos_ids.push_back(t);
}

std::unique_ptr<StepExtension> EngineImpl::make_extension() {
  const SpecConfig& spec = config_.spec;
  if (spec.mode == SpecMode::kNone) return std::make_unique<NoStepExtension>();
  return std::make_unique<Speculator>(
      spec, make_drafter(spec, *model_,
                         DrafterEnv{.pool = pool_.get(),
                                    .target = fwd_.get(),
                                    .act_quant = config_.act_quant,
                                    .max_len = max_len_,
                                    .block_size = plan_.block_size,
                                    .kv_tokens = int64_t(plan_.num_blocks) * plan_.block_size,
                                    .kv_reuse = config_.kv.reuse,
                                    .disable_batch = spec.disable_batch > 0 ? spec.disable_batch
                                                                            : config_.scheduler.max_seqs,
                                    .verbose = config_.verbose}));
}

void EngineImpl::finish_if_done(RequestId id) {
  auto it = live_.find(id);
  if (it == live_.end() || !it->second->done()) return;
  live_.erase(it);
  std::lock_guard<std::mutex> lock(mu_);
  --unfinished_;
}

void EngineImpl::drain_inbox(bool* did_something) {
  std::vector<std::unique_ptr<LiveRequest>> adds;
  std::vector<RequestId> aborts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    adds.swap(inbox_);
    aborts.swap(aborts_);
  }
  for (auto& up : adds) {
    LiveRequest& l = *up;
    prompt_tokens_ += static_cast<int64_t>(l.req.prompt.size());
    live_[l.id] = std::move(up);
    l.strategy->start();
  }
  for (RequestId id : aborts) {
    auto it = live_.find(id);
    if (it == live_.end()) continue;  // unknown or already finished
    it->second->strategy->abort();    // every sample reported, blocks back to the pool now
    ++aborts_done_;
    *did_something = true;
    finish_if_done(id);
  }
}

bool EngineImpl::step() {
  PhaseTimer timer(&fwd_->profile());
  timer.to(Op::kSchedule);
  bool did = false;
  drain_inbox(&did);
  ext_->before_schedule(*sched_, *this, timer);
  const BatchPlan plan = sched_->schedule();
  if (plan.empty()) {
    timer.stop();
    publish_stats();
    return did;
  }
  running_peak_ = std::max(running_peak_, sched_->num_running());
  timer.stop();
  const double t_forward = now_s();
  runner_->run(plan);  // (the backend times the forward's own categories)
  ext_->after_forward(plan, now_s() - t_forward);
  timer.to(Op::kSample);
  choose_tokens(plan);
  ext_->after_commit(plan, rows_.committed, rows_.appended);
  timer.to(Op::kSchedule);  // update, events and bookkeeping
  deliver(plan, sched_->update(plan, std::span<const std::vector<Token>>(rows_.committed), rows_.appended));
  running_peak_ = std::max(running_peak_, sched_->num_running());
  timer.stop();
  publish_stats();
  return true;
}

void EngineImpl::choose_tokens(const BatchPlan& plan) {
  const size_t n = plan.requests.size();
  rows_.n_vocab = runner_->n_vocab();
  rows_.committed.resize(n);
  rows_.results.resize(n);
  rows_.appended.assign(n, 0);
  for (size_t i = 0; i < n; ++i) rows_.committed[i].clear(), rows_.results[i].clear();
  touched_.clear();
  for (size_t i = 0; i < n; ++i) {
    const ScheduledRequest& s = plan.requests[i];
    const PlanRow row{.i = i, .s = s, .logits = runner_->logits(i), .prompt_logits = runner_->prompt_logits(i)};
    if (s.padding || (!row.logits && !row.prompt_logits)) continue;  // (a padding row's output is discarded)
    LiveRequest& l = *owner_.at(s.id);
    l.strategy->on_row(row, rows_);
    if (l.last_step != plan.step) {
      l.last_step = plan.step;
      touched_.push_back(&l);
    }
  }
  for (LiveRequest* l : touched_) l->strategy->decide(rows_);
}

void EngineImpl::deliver(const BatchPlan& plan, const std::vector<RequestOutput>& outs) {
  finishing_.clear();
  size_t i = 0;
  for (const RequestOutput& out : outs) {
    while (i < plan.requests.size() && plan.requests[i].id != out.id) ++i;  // outputs come in plan order
    check(i < plan.requests.size(), "engine: an output for a sequence the plan did not run");
    LiveRequest& l = *owner_.at(out.id);
    l.strategy->on_output(out, rows_.results[i]);
    finishing_.push_back(l.id);
  }
  for (LiveRequest* l : touched_) {
    l->strategy->after_update();
    finishing_.push_back(l->id);
  }
  for (RequestId id : finishing_) finish_if_done(id);
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
  stats_.kv_blocks_touched = ks.touched;
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
  stats_.grammar_jump_forward_tokens = jump_.tokens;
  ext_->add_stats(stats_);
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
  std::unique_ptr<Model> model = Model::load(config.model_path, opts);
  if (config.model_transform) model = config.model_transform(std::move(model));
  return create(std::move(model), config);
}

}  // namespace tinfer
