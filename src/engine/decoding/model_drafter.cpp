// Model-backed drafters: a draft model (its own weights and backend on the engine's thread pool) or the
// target's first L layers (self-draft: the target's backend with ForwardBatch::n_layers = L). Either keeps its
// own paged KV cache (f16, L or the draft's layers) with one sequence per target sequence, drafts greedily,
// and runs one batched forward per draft position for every query: the first feeds each sequence's tokens the
// draft has not seen (a new sequence's whole prompt, then the previous step's kept drafts and correction),
// the others one draft token each. A sequence whose committed tokens diverge from what the draft fed (drafts
// rejected) is truncated back to the common prefix first, so nothing is recomputed that is still valid.
#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "tinfer/error.h"
#include "tinfer/kv_precision.h"
#include "core/thread_pool.h"
#include "engine/decoding/drafter.h"
#include "kvcache/kv_cache_manager.h"
#include "backend/backend.h"
#include "backend/forward_batch.h"
#include "model/model.h"
#include "text/tokenizer/same_tokenizer.h"
#include "text/tokenizer/tokenizer.h"

namespace tinfer {

namespace {

int32_t argmax(const float* row, int64_t n) {
  int32_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (row[i] > row[best]) best = int32_t(i);
  return best;
}

class ModelDrafter final : public Drafter {
 public:
  // own: the draft model (null for a self-draft); fwd: the backend that runs it; n_layers: 0 = all.
  ModelDrafter(const char* name, std::unique_ptr<Model> own, std::unique_ptr<Backend> own_fwd, Backend& fwd,
               int n_layers, const DrafterEnv& env)
      : name_(name),
        model_(std::move(own)),
        own_fwd_(std::move(own_fwd)),
        fwd_(fwd),
        n_layers_(n_layers),
        max_len_(env.max_len),
        mgr_(kv::KvCacheConfig{.num_blocks = blocks_for(env), .block_size = env.block_size, .prefix_caching = false,
                                .reuse = env.kv_reuse}) {
    const int64_t layers = n_layers_ > 0 ? n_layers_ : fwd_.config().n_layers;
    kv_ = fwd_.allocate_kv(mgr_.pool().num_blocks(), env.block_size, KvPrecision::uniform(layers, KvDtype::f16));
    if (env.verbose)
      std::fprintf(stderr, "speculative %s: %lld draft layers, own KV cache %d blocks x %d tokens (%.1f MiB, f16)\n",
                   name_, (long long)layers, mgr_.pool().num_blocks(), env.block_size, double(kv_->bytes()) / (1 << 20));
  }

  const char* name() const override { return name_; }

  void propose(std::span<DraftQuery> queries) override {
    ++tick_;
    for (DraftQuery& q : queries) q.draft.clear();
    // Round 0: bring every sequence up to its last committed token and draft the first token.
    active_.clear();
    begin_round();
    for (size_t i = 0; i < queries.size(); ++i) {
      DraftQuery& q = queries[i];
      const int n = static_cast<int>(q.tokens.size());
      q.k = std::min(q.k, max_len_ - n);  // positions past the context are never verified
      if (q.k < 1 || n < 1) continue;
      if (!catch_up(q, queries)) continue;
      active_.push_back(i);
    }
    run_round(queries);
    // Rounds 1..k-1: feed the previous draft token of every query that wants more.
    for (int j = 1;; ++j) {
      std::vector<size_t> next;
      begin_round();
      for (size_t i : active_) {
        DraftQuery& q = queries[i];
        if (static_cast<int>(q.draft.size()) <= j - 1 || q.k <= j) continue;
        Seq& st = seqs_.at(q.seq);
        const kv::AllocRequest a{.num_computed = st.computed, .num_new = 1};
        if (!mgr_.allocate(q.seq, a, nullptr)) continue;  // pool short: this query keeps what it has
        add(q.seq, q.draft.back(), st.computed, true);
        st.fed.push_back(q.draft.back());
        ++st.computed;
        next.push_back(i);
      }
      if (next.empty()) break;
      active_ = std::move(next);
      run_round(queries);
    }
  }

  void release(kv::SeqId seq) override {
    if (mgr_.has(seq)) mgr_.free(seq);
    seqs_.erase(seq);
  }

 private:
  struct Seq {
    std::vector<kv::Token> fed;  // tokens whose KV the draft cache holds, positions 0..computed-1
    int computed = 0;
    uint64_t used = 0;  // tick of the last proposal (eviction order)
  };

  static int blocks_for(const DrafterEnv& env) {
    check(env.block_size > 0 && env.kv_tokens > 0 && env.max_len > 0, "draft KV: the engine's plan is empty");
    // Drafting runs only below SpecConfig::disable_batch decoding requests: room for that many whole sequences
    // (least recently drafted ones are evicted and recomputed if more come), never more tokens than the
    // target's cache, never less than one sequence.
    const int64_t batch = std::max(env.disable_batch, 1);
    const int64_t tokens = std::max<int64_t>(std::min<int64_t>(env.kv_tokens, batch * env.max_len), env.max_len);
    return static_cast<int>((tokens + env.block_size - 1) / env.block_size);
  }

  // Truncates the draft's copy of q.seq to its common prefix with q.tokens and schedules the rest into batch_
  // (the last token's logits give the first draft). False when the pool cannot hold it even after evicting
  // sequences that are not being drafted now.
  bool catch_up(DraftQuery& q, std::span<DraftQuery> queries) {
    Seq& st = seqs_[q.seq];
    st.used = tick_;
    const int n = static_cast<int>(q.tokens.size());
    int c = 0;
    const int lim = std::min(st.computed, n - 1);  // the last token is always fed: its logits draft
    while (c < lim && st.fed[size_t(c)] == q.tokens[size_t(c)]) ++c;
    if (mgr_.has(q.seq) && c < st.computed) mgr_.truncate(q.seq, c);
    st.computed = c;
    st.fed.assign(q.tokens.begin(), q.tokens.begin() + c);
    const kv::AllocRequest a{.num_computed = c, .num_new = n - c};
    while (!mgr_.allocate(q.seq, a, nullptr)) {
      if (!evict_one(queries, q.seq)) return false;
    }
    for (int p = c; p < n; ++p) add(q.seq, q.tokens[size_t(p)], p, p == n - 1);
    st.fed.insert(st.fed.end(), q.tokens.begin() + c, q.tokens.end());
    st.computed = n;
    return true;
  }

  // Frees the least recently drafted sequence that is not part of this proposal; false if there is none.
  bool evict_one(std::span<DraftQuery> queries, kv::SeqId keep) {
    kv::SeqId victim = 0;
    uint64_t oldest = UINT64_MAX;
    for (const auto& entry : seqs_) {
      const kv::SeqId id = entry.first;
      const uint64_t used = entry.second.used;
      if (id == keep || !mgr_.has(id) || used >= oldest) continue;
      if (std::any_of(queries.begin(), queries.end(), [id](const DraftQuery& q) { return q.seq == id; })) continue;
      victim = id, oldest = used;
    }
    if (oldest == UINT64_MAX) return false;
    release(victim);
    return true;
  }

  void begin_round() {
    batch_.clear();
    slot_.clear();
  }

  // Appends one token of seq to this round's batch (a sequence's tokens are added in one go, after its
  // allocation, so its block table is final when first seen).
  void add(kv::SeqId seq, kv::Token t, int pos, bool logits) {
    auto [it, added] = slot_.try_emplace(seq, static_cast<int32_t>(batch_.block_tables.size()));
    if (added) {
      const auto& table = mgr_.block_table(seq);
      batch_.block_tables.emplace_back(table.begin(), table.end());
    }
    if (logits) batch_.logit_rows.push_back(static_cast<int32_t>(batch_.tokens.size()));
    batch_.tokens.push_back(t);
    batch_.positions.push_back(pos);
    batch_.seq.push_back(it->second);
  }

  // One forward over batch_; the query behind the r-th logit row (active_[r]) gets its next draft token.
  void run_round(std::span<DraftQuery> queries) {
    if (batch_.tokens.empty()) return;
    batch_.n_layers = n_layers_;
    const int64_t V = fwd_.config().n_vocab;
    logits_.resize(batch_.logit_rows.size() * size_t(V));
    // A self-draft runs on the target's backend: its forward is drafting (Op::kDraft, timed by the engine),
    // not part of the step's own operator categories.
    const OpProfile before = fwd_.profile().counters();
    fwd_.forward(batch_, *kv_, logits_.data());
    if (!own_fwd_) fwd_.profile().restore_counters(before);
    for (size_t r = 0; r < active_.size(); ++r)
      queries[active_[r]].draft.push_back(argmax(&logits_[r * size_t(V)], V));
  }

  const char* name_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Backend> own_fwd_;
  Backend& fwd_;
  int n_layers_;
  int max_len_;
  kv::KvCacheManager mgr_;
  std::unique_ptr<KvCache> kv_;
  std::unordered_map<kv::SeqId, Seq> seqs_;
  std::unordered_map<kv::SeqId, int32_t> slot_;  // this round: sequence -> index into batch_.block_tables
  std::vector<size_t> active_;                   // queries in this round, in logit-row order
  ForwardBatch batch_;
  std::vector<float> logits_;
  uint64_t tick_ = 0;
};

}  // namespace

std::unique_ptr<Drafter> make_drafter(const SpecConfig& config, const Model& target, const DrafterEnv& env) {
  switch (config.mode) {
    case SpecMode::kNgram:
      return make_ngram_drafter(config.ngram_min, config.ngram_max);
    case SpecMode::kDraft: {
      check(env.pool != nullptr, "draft model: no thread pool");
      auto draft = Model::load(config.draft_model);
      check_same_tokenizer(target.tokenizer(), draft->tokenizer(), "draft model " + config.draft_model, "target");
      auto fwd = create_backend("cpu", *draft,
                                BackendOptions{.pool = env.pool, .max_positions = env.max_len, .act_quant = env.act_quant});
      Backend& ref = *fwd;
      return std::make_unique<ModelDrafter>("draft", std::move(draft), std::move(fwd), ref, 0, env);
    }
    case SpecMode::kSelf: {
      check(env.target != nullptr, "self-draft: no target backend");
      env.target->require(BackendCapability::kPartialDepth, "--spec self");  // drafts with ForwardBatch::n_layers
      const int64_t layers = target.config().n_layers;
      check(config.self_layers >= 1 && config.self_layers < layers,
            "--spec-self-layers " + std::to_string(config.self_layers) + " must be in [1, " +
                std::to_string(layers - 1) + "] for a model of " + std::to_string(layers) + " layers");
      return std::make_unique<ModelDrafter>("self", nullptr, nullptr, *env.target, config.self_layers, env);
    }
    case SpecMode::kNone:
      break;
  }
  fail("make_drafter: speculative decoding is off");
}

}  // namespace tinfer
