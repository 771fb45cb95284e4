// Scheduler implementation: one budgeted pass over running then waiting requests per step; preemption by
// recompute when blocks run out; stop/length checks in update().
#include "engine/scheduler.h"

#include <algorithm>
#include <unordered_set>

#include "tinfer/error.h"

namespace tinfer {

std::vector<std::string> SchedulerConfig::validate() const {
  std::vector<std::string> errs;
  if (max_batched_tokens < 1) errs.push_back("max_batched_tokens must be >= 1");
  if (max_seqs < 1) errs.push_back("max_seqs must be >= 1");
  if (max_model_len < 2) errs.push_back("max_model_len must be >= 2 (a prompt token and an output)");
  if (max_background_running < 1) errs.push_back("max_background_running must be >= 1");
  // Without chunking a (re)computed sequence must fit one step whole, up to its longest length.
  if (!chunked_prefill && max_batched_tokens < max_model_len)
    errs.push_back("without chunked prefill max_batched_tokens (" + std::to_string(max_batched_tokens) +
                   ") must be >= max_model_len (" + std::to_string(max_model_len) + ")");
  return errs;
}

Scheduler::Scheduler(SchedulerConfig config, kv::KvCacheGroups kv, std::unique_ptr<BatchingPolicy> policy)
    : config_(std::move(config)), kv_(std::move(kv)), policy_(std::move(policy)) {
  auto errs = config_.validate();
  if (!errs.empty()) {
    std::string msg = "scheduler config:";
    for (const auto& e : errs) msg += "\n  " + e;
    fail(msg);
  }
  check(policy_ != nullptr, "scheduler: no batching policy");
  // A lone request can always grow to max_len_, so preemption never loops: full-attention pools bound max_len_,
  // and a windowed pool must hold one sequence's window and one step's tokens.
  const int64_t capacity = kv_.token_capacity();
  for (int g = 0; g < kv_.num_groups(); ++g) {
    const kv::KvCacheManager& m = kv_.group(g);
    const int w = m.config().window_tokens, bs = m.block_size();
    if (w <= 0) continue;
    const int need = (w - 1 + config_.max_batched_tokens + bs - 1) / bs + 1;
    check(m.pool().num_blocks() >= need, "scheduler: a sliding-window pool of " + std::to_string(m.pool().num_blocks()) +
                                             " blocks cannot hold one sequence's window of " + std::to_string(w) +
                                             " tokens and a step of " + std::to_string(config_.max_batched_tokens) +
                                             " (" + std::to_string(need) + " blocks)");
  }
  max_len_ = static_cast<int>(std::min<int64_t>(config_.max_model_len, capacity));
}

void Scheduler::add(RequestId id, const ResolvedRequest& req, std::span<const Token> generated, StopIds stops) {
  RequestParams p{.prompt = req.prompt,
                  .max_tokens = req.max_tokens - static_cast<int>(generated.size()),
                  .stop_ids = stops == StopIds::kResolved ? req.stop_ids : std::vector<Token>{},
                  .cache_salt = req.cache_salt,
                  .priority = req.priority,
                  .prompt_logits = req.report_entropy && generated.empty()};
  p.prompt.insert(p.prompt.end(), generated.begin(), generated.end());
  add(id, std::move(p));
}

void Scheduler::add(RequestId id, RequestParams p) {
  check(!requests_.count(id) && !policy_->holds(id), "request " + std::to_string(id) + ": duplicate id");
  check(!p.prompt.empty(), "request " + std::to_string(id) + ": empty prompt");
  const int n = static_cast<int>(p.prompt.size());
  check(n < max_len_, "request " + std::to_string(id) + ": prompt of " + std::to_string(n) +
                          " tokens leaves no room for output (max length " + std::to_string(max_len_) + ")");
  check(p.max_tokens >= 1, "request " + std::to_string(id) + ": max_tokens must be >= 1 (resolve the request first)");
  check(p.priority != Priority::kAuto, "request " + std::to_string(id) + ": priority is unresolved");
  Request r;
  r.id = id;
  r.tokens = std::move(p.prompt);
  r.num_prompt_tokens = n;
  r.max_tokens = p.max_tokens;
  r.stop_ids = std::move(p.stop_ids);
  r.cache_salt = p.cache_salt;
  r.priority = p.priority;
  r.prompt_logits = p.prompt_logits;
  queue_of(r).push_back(id);
  requests_.emplace(id, std::move(r));
}

void Scheduler::emit(BatchPlan& plan, const Request& r, int n, std::vector<kv::CowCopy> copies,
                     std::span<const Token> draft) {
  ScheduledRequest s;
  s.id = r.id;
  s.start_pos = r.num_computed_tokens;
  s.tokens.assign(r.tokens.begin() + s.start_pos, r.tokens.begin() + s.start_pos + n);
  s.tokens.insert(s.tokens.end(), draft.begin(), draft.end());
  s.num_draft = static_cast<int>(draft.size());
  s.block_table = kv_.block_table(r.id);
  if (kv_.num_groups() > 1) s.window_table = kv_.block_table(r.id, 1);
  s.needs_logits = s.start_pos + n == r.num_tokens();
  s.prompt_logits = r.prompt_logits && r.num_output_tokens() == 0;
  s.decode = n == 1 && draft.empty() && s.start_pos >= r.num_prompt_tokens;
  s.copies = std::move(copies);
  plan.num_tokens += static_cast<int>(s.tokens.size());
  plan.requests.push_back(std::move(s));
}

void Scheduler::propose(RequestId id, std::vector<Token> draft) {
  auto it = requests_.find(id);
  check(it != requests_.end() && it->second.status == RequestStatus::kRunning,
        "propose: request " + std::to_string(id) + " is not running");
  if (draft.empty()) {
    drafts_.erase(id);
    return;
  }
  drafts_[id] = std::move(draft);
}

std::vector<RequestId> Scheduler::decoding() const {
  std::vector<RequestId> out;
  for (RequestId id : running_) {
    const Request& r = requests_.at(id);
    if (r.num_tokens() - r.num_computed_tokens == 1) out.push_back(id);
  }
  return out;
}

int Scheduler::draft_room(const Request& r, int budget) const {
  auto it = drafts_.find(r.id);
  if (it == drafts_.end() || r.num_tokens() - r.num_computed_tokens != 1) return 0;
  // Every kept draft plus the token sampled after them must fit the output limit and the length limit, so
  // at most k + 1 tokens join the request.
  const int by_output = r.max_tokens - r.num_output_tokens() - 1;
  const int by_length = max_len_ - r.num_tokens() - 1;
  const int k = std::min({static_cast<int>(it->second.size()), budget, by_output, by_length});
  return std::max(k, 0);
}

BatchPlan Scheduler::schedule() {
  BatchPlan plan;
  plan.step = next_step_++;
  plan.block_size = kv_.block_size();
  int budget = config_.max_batched_tokens;
  const int num_running_at_start = num_running();
  std::unordered_set<RequestId> scheduled;

  // Running requests: decodes (one uncomputed token) first, then unfinished prefill chunks; each in admission order.
  std::vector<RequestId> order = running_;
  std::stable_partition(order.begin(), order.end(), [&](RequestId id) {
    const Request& r = requests_.at(id);
    return r.num_tokens() - r.num_computed_tokens == 1;
  });
  bool preempted_any = false;
  for (RequestId id : order) {
    if (budget == 0) break;
    Request& r = requests_.at(id);
    if (r.status != RequestStatus::kRunning) continue;  // preempted earlier in this loop
    const int n = std::min(r.num_tokens() - r.num_computed_tokens, budget);
    // Drafts ride along only when their slots are free now: they never cost anyone a preemption.
    int k = draft_room(r, budget - n);
    while (k > 0 && !kv_.can_allocate(id, {.num_computed = r.num_computed_tokens, .num_new = n + k})) --k;
    const kv::AllocRequest a{.num_computed = r.num_computed_tokens, .num_new = n + k};
    std::vector<kv::CowCopy> copies;
    bool runs = true;
    while (runs && !kv_.allocate(id, a, &copies)) {
      const size_t before = plan.preempted.size();
      runs = make_room(id, scheduled, plan);
      preempted_any = preempted_any || plan.preempted.size() > before;
    }
    if (!runs) continue;
    const std::span<const Token> draft = k > 0 ? std::span<const Token>(drafts_.at(id)).first(size_t(k))
                                               : std::span<const Token>();
    emit(plan, r, n, std::move(copies), draft);
    scheduled.insert(id);
    budget -= n + k;
  }
  drafts_.clear();

  // Waiting requests join in FCFS order; none after a preemption (the pool is short) or when the policy says no.
  if (!preempted_any && policy_->may_admit(num_running_at_start)) admit_waiting(plan, budget, scheduled);
  const int before = plan.num_tokens;
  policy_->plan_rows(plan, budget, kv_);  // static-padded: finished members' padding rows
  stats_.padding_tokens += plan.num_tokens - before;
  ++stats_.steps;
  stats_.scheduled_tokens += plan.num_tokens;
  return plan;
}

void Scheduler::admit_waiting(BatchPlan& plan, int& budget, std::unordered_set<RequestId>& scheduled) {
  bool out_of_blocks = false;
  while (num_running() < config_.max_seqs && budget > 0) {
    Request* next = next_waiting();
    if (!next) break;
    Request& r = *next;
    // Never the whole sequence from cache: the last token is computed so that its logits exist. A request that
    // wants every prompt row's logits reuses nothing until its first output exists.
    const int max_hit = r.prompt_logits && r.num_output_tokens() == 0 ? 0 : r.num_tokens() - 1;
    const kv::PrefixHit hit = kv_.match_prefix(r.tokens, r.cache_salt, max_hit);
    const int remaining = r.num_tokens() - hit.num_tokens;
    if (!config_.chunked_prefill && remaining > budget) break;
    const int n = std::min(remaining, budget);
    const int reserve = std::min(r.num_prompt_tokens + r.max_tokens, max_len_);
    const kv::AllocRequest a{.num_computed = hit.num_tokens,
                             .num_new = n,
                             .hit = &hit,
                             .reserve_tokens = reserve,
                             .extra_key = r.cache_salt};
    if (!kv_.allocate(r.id, a, nullptr)) {
      out_of_blocks = true;
      break;
    }
    kv_.record_prefix_query(r.num_tokens(), hit.num_tokens);
    queue_of(r).pop_front();
    if (r.priority == Priority::kBackground) ++background_running_;
    r.status = RequestStatus::kRunning;
    r.admit_order = next_admit_++;
    r.num_computed_tokens = hit.num_tokens;
    r.num_cached_prompt_tokens = std::min(hit.num_tokens, r.num_prompt_tokens);
    running_.push_back(r.id);
    emit(plan, r, n, {});
    scheduled.insert(r.id);
    budget -= n;
  }
  policy_->admissions_done(out_of_blocks || next_waiting() == nullptr || num_running() >= config_.max_seqs);
}

bool Scheduler::make_room(RequestId id, const std::unordered_set<RequestId>& scheduled, BatchPlan& plan) {
  if (policy_->reclaim(kv_)) return true;  // a policy row gives way first: nothing is lost
  Request* victim = nullptr;
  for (RequestId rid : running_) {
    Request& c = requests_.at(rid);
    if (!scheduled.count(rid) && (!victim || c.admit_order > victim->admit_order)) victim = &c;
  }
  preempt(*victim);  // (id itself is never scheduled yet, so there is always a victim)
  plan.preempted.push_back(victim->id);
  return victim->id != id;
}

Request* Scheduler::next_waiting() {
  if (!waiting_.empty()) return &requests_.at(waiting_.front());
  if (!background_.empty() && background_running_ < config_.max_background_running)
    return &requests_.at(background_.front());
  return nullptr;
}

void Scheduler::preempt(Request& r) {
  kv_.free(r.id);
  remove_running(r.id);
  r.status = RequestStatus::kWaiting;
  r.num_computed_tokens = 0;  // recompute prompt + outputs on resume (prefix cache may cover part of it)
  ++r.num_preemptions;
  ++stats_.preemptions;
  queue_of(r).push_front(r.id);
}

void Scheduler::remove_running(RequestId id) {
  auto it = requests_.find(id);
  if (it != requests_.end() && it->second.priority == Priority::kBackground) --background_running_;
  std::erase(running_, id);
}

FinishReason Scheduler::stop_reason(const Request& r) const {
  const Token t = r.tokens.back();
  if (std::find(r.stop_ids.begin(), r.stop_ids.end(), t) != r.stop_ids.end()) return FinishReason::kStop;
  if (r.num_output_tokens() >= r.max_tokens || r.num_tokens() >= max_len_) return FinishReason::kLength;
  return FinishReason::kNone;
}

RequestOutput Scheduler::finish(Request& r, FinishReason reason, bool release_kv) {
  RequestOutput out;
  out.id = r.id;
  out.finished = true;
  out.finish_reason = reason;
  out.output_tokens = r.output_tokens();
  out.num_prompt_tokens = r.num_prompt_tokens;
  out.num_cached_prompt_tokens = r.num_cached_prompt_tokens;
  const RequestId id = r.id;  // copied: erasing the entry destroys r
  if (release_kv) kv_.free(id);
  if (r.status == RequestStatus::kRunning)
    remove_running(id);
  else
    std::erase(queue_of(r), id);
  ++stats_.finished;
  requests_.erase(id);  // r dangles from here on
  return out;
}

std::vector<RequestOutput> Scheduler::update(const BatchPlan& plan, std::span<const Token> sampled) {
  check(sampled.size() == plan.requests.size(), "scheduler update: " + std::to_string(sampled.size()) +
                                                    " sampled tokens for " + std::to_string(plan.requests.size()) +
                                                    " scheduled requests");
  std::vector<std::vector<Token>> runs(sampled.size());
  for (size_t i = 0; i < sampled.size(); ++i) runs[i] = {sampled[i]};
  return update(plan, std::span<const std::vector<Token>>(runs));
}

std::vector<RequestOutput> Scheduler::update(const BatchPlan& plan, std::span<const std::vector<Token>> committed,
                                             std::span<const int> appended) {
  check(committed.size() == plan.requests.size(), "scheduler update: " + std::to_string(committed.size()) +
                                                      " committed runs for " + std::to_string(plan.requests.size()) +
                                                      " scheduled requests");
  std::vector<RequestOutput> outs;
  std::vector<Token> firsts(plan.requests.size(), -1);  // for the batching policy's rows
  for (size_t i = 0; i < plan.requests.size(); ++i) {
    const ScheduledRequest& s = plan.requests[i];
    if (!committed[i].empty()) firsts[i] = committed[i][0];
    auto it = requests_.find(s.id);
    if (it == requests_.end()) continue;  // aborted since
    Request& r = it->second;
    if (r.status != RequestStatus::kRunning || r.num_computed_tokens != s.start_pos) continue;  // preempted since
    const int n_known = static_cast<int>(s.tokens.size()) - s.num_draft;
    if (!s.needs_logits) {
      r.num_computed_tokens += n_known;
      kv_.commit(r.id, r.tokens, r.num_computed_tokens);
      continue;
    }
    const std::vector<Token>& run = committed[i];
    const int extra = i < appended.size() ? appended[i] : 0;  // no KV yet: computed next step
    const int accepted = static_cast<int>(run.size()) - 1 - extra;
    check(accepted >= 0 && accepted <= s.num_draft,
          "scheduler update: request " + std::to_string(s.id) + " commits " + std::to_string(run.size()) +
              " tokens after " + std::to_string(s.num_draft) + " drafts");
    check(std::equal(run.begin(), run.begin() + accepted, s.tokens.end() - s.num_draft),
          "scheduler update: request " + std::to_string(s.id) + " keeps tokens that are not its drafts");
    // Kept drafts have their KV (computed from kept tokens only); the rejected ones' slots are given back
    // before commit() hashes any block, so the prefix cache never sees an unverified token.
    r.num_computed_tokens += n_known + accepted;
    if (s.num_draft > 0) {
      kv_.truncate(r.id, r.num_computed_tokens);
      stats_.spec_drafted += s.num_draft;
      stats_.spec_accepted += accepted;
      ++stats_.spec_steps;
    }
    RequestOutput o;
    o.id = r.id;
    o.num_prompt_tokens = r.num_prompt_tokens;
    o.num_cached_prompt_tokens = r.num_cached_prompt_tokens;
    FinishReason reason = FinishReason::kNone;
    for (Token t : run) {
      r.tokens.push_back(t);
      o.new_tokens.push_back(t);
      reason = stop_reason(r);
      if (reason != FinishReason::kNone) break;  // later tokens are dropped with the request
    }
    kv_.commit(r.id, r.tokens,
               std::min(r.num_computed_tokens, config_.cache_outputs ? r.num_tokens() : r.num_prompt_tokens));
    if (reason == FinishReason::kNone) {
      outs.push_back(std::move(o));
    } else {
      if (r.num_computed_tokens >= r.num_tokens()) {  // stopped inside the kept drafts: drop the KV past the end
        r.num_computed_tokens = r.num_tokens() - 1;    // (a policy row that adopts r computes its last token)
        kv_.truncate(r.id, r.num_computed_tokens);
      }
      const bool adopted = policy_->adopt_finished(r);  // (static-padded: keeps computing its row)
      RequestOutput f = finish(r, reason, !adopted);
      f.new_tokens = std::move(o.new_tokens);
      outs.push_back(std::move(f));
    }
  }
  policy_->update_rows(plan, firsts, static_cast<int>(running_.size()), max_len_, kv_);
  return outs;
}

std::optional<RequestOutput> Scheduler::abort(RequestId id) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return std::nullopt;
  RequestOutput out = finish(it->second, FinishReason::kAbort);
  policy_->update_rows(BatchPlan{}, {}, static_cast<int>(running_.size()), max_len_, kv_);  // batch may end
  return out;
}

std::optional<RequestOutput> Scheduler::fork(RequestId parent, RequestId child, std::optional<Token> last_token) {
  auto it = requests_.find(parent);
  check(it != requests_.end() && it->second.status == RequestStatus::kRunning,
        "fork: request " + std::to_string(parent) + " is not running");
  check(!requests_.count(child), "fork: request " + std::to_string(child) + " already exists");
  check(!policy_->holds(child), "fork: request " + std::to_string(child) + " is still held by the batching policy");
  check(num_running() < config_.max_seqs, "fork: max_seqs reached");
  Request c = it->second;
  c.id = child;
  c.admit_order = next_admit_++;
  if (last_token) {
    check(c.num_output_tokens() > 0 && c.num_computed_tokens < c.num_tokens(),
          "fork: the parent's last token is already computed or not an output");
    c.tokens.back() = *last_token;
  }
  kv_.fork(parent, child);
  Request& r = requests_.emplace(child, std::move(c)).first->second;
  running_.push_back(child);
  if (r.priority == Priority::kBackground) ++background_running_;
  if (last_token) {
    const FinishReason reason = stop_reason(r);
    if (reason != FinishReason::kNone) return finish(r, reason);
  }
  return std::nullopt;
}

const Request* Scheduler::find(RequestId id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : &it->second;
}

}  // namespace tinfer
