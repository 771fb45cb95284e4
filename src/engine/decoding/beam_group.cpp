// BeamGroup: a beam-search request's rounds mapped onto scheduler sequences (fork, abort, re-add).
#include "engine/decoding/beam_group.h"

#include "tinfer/error.h"
#include "engine/scheduler.h"

namespace tinfer {

BeamGroup::BeamGroup(const ResolvedRequest& req, int n_vocab, Scheduler& sched, Hooks hooks)
    : req_(req),
      n_vocab_(n_vocab),
      width_(req.n),
      sched_(sched),
      hooks_(std::move(hooks)),
      search_(BeamSearchParams{.width = req.n,
                               .length_penalty = req.length_penalty,
                               .early_stopping = req.early_stopping,
                               .max_tokens = req.max_tokens,
                               .stop_ids = req.stop_ids}),
      per_beam_history_(req.sampling.repetition_penalty != 1.0f || req.sampling.presence_penalty != 0.0f ||
                        req.sampling.frequency_penalty != 0.0f) {
  samplers_.emplace_back(req.sampling, n_vocab_, req.prompt);
}

void BeamGroup::start() {
  slots_.clear();
  slots_.emplace_back();
  if (req_.grammar) {
    slots_[0].grammar = req_.grammar->start();
    mask_.resize(mask_words(n_vocab_));
  }
  add_request(slots_[0]);
  slot_of_[slots_[0].seq] = 0;
}

void BeamGroup::add_request(Slot& s) {
  const std::vector<Token>& gen = search_.beams()[size_t(&s - slots_.data())].tokens;
  s.seq = hooks_.new_seq();
  // No stop ids: the round decides when a beam ends, and never lets a sequence reach max_tokens.
  sched_.add(s.seq, req_, gen, Scheduler::StopIds::kNone);
}

void BeamGroup::drop(kv::SeqId seq) {
  sched_.abort(seq);
  slot_of_.erase(seq);
  hooks_.drop_seq(seq);
}

void BeamGroup::on_row(kv::SeqId seq, const float* logits) {
  Slot& s = slots_.at(size_t(slot_of_.at(seq)));
  check(!s.conts, "beam search: a second row for one beam in one round");
  const uint32_t* allowed = s.grammar && s.grammar->fill_mask(mask_) ? mask_.data() : nullptr;
  s.conts = top_continuations(samplers_[size_t(s.sampler)].penalized(logits, allowed), search_.num_continuations());
  rows_this_step_ = true;
  ++rows_used_;
}

std::optional<Token> BeamGroup::commit(kv::SeqId seq) const {
  auto it = commits_.find(seq);
  return it == commits_.end() ? std::nullopt : std::optional<Token>(it->second);
}

void BeamGroup::decide() {
  commits_.clear();
  if (!rows_this_step_) return;
  rows_this_step_ = false;
  bool all = true;
  for (const Slot& s : slots_) all = all && s.conts.has_value();
  if (!all) {  // the round waits for the missing rows; the early beams' blocks go back meanwhile
    for (Slot& s : slots_)
      if (s.conts && s.seq) {
        drop(s.seq);
        s.seq = 0;
        s.fork_from = 0;
      }
    return;
  }
  std::vector<std::vector<BeamToken>> conts;
  conts.reserve(slots_.size());
  for (Slot& s : slots_) conts.push_back(std::move(*s.conts));
  const std::vector<BeamOrigin> origins = search_.step(conts);

  std::vector<Slot> next(origins.size());
  std::vector<Sampler> samplers;
  std::vector<bool> continued(slots_.size(), false);
  for (size_t j = 0; j < origins.size(); ++j) {
    const BeamOrigin& o = origins[j];
    Slot& parent = slots_[size_t(o.parent)];
    if (per_beam_history_) {
      samplers.push_back(samplers_[size_t(parent.sampler)]);
      samplers.back().accept(o.token);
      next[j].sampler = static_cast<int>(j);
    }
    if (parent.grammar) {
      next[j].grammar = parent.grammar->fork();
      next[j].grammar->accept(o.token);
    }
    if (parent.seq && !continued[size_t(o.parent)]) {  // the parent's sequence continues as its best child
      continued[size_t(o.parent)] = true;
      next[j].seq = parent.seq;
      commits_[parent.seq] = o.token;
    } else {
      next[j].fork_from = parent.seq;
    }
  }
  for (size_t p = 0; p < slots_.size(); ++p)  // no child (or the search is done): the sequence goes
    if (slots_[p].seq && !continued[p]) drop(slots_[p].seq);
  if (per_beam_history_) samplers_ = std::move(samplers);
  slots_ = std::move(next);
  slot_of_.clear();
  for (size_t j = 0; j < slots_.size(); ++j)
    if (slots_[j].seq) slot_of_[slots_[j].seq] = static_cast<int>(j);
}

void BeamGroup::after_update() {
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    if (s.conts) continue;  // its row is in: it waits for the rest of the round, needing no sequence
    if (s.seq && sched_.find(s.seq)) continue;
    if (s.seq) {  // (defensive: the scheduler ended it, which no round asked for) recompute it
      slot_of_.erase(s.seq);
      hooks_.drop_seq(s.seq);
      s.seq = 0;
    }
    const Request* parent = s.fork_from ? sched_.find(s.fork_from) : nullptr;
    if (parent && parent->status == RequestStatus::kRunning && sched_.num_running() < sched_.config().max_seqs) {
      s.seq = hooks_.new_seq();
      const auto finished = sched_.fork(s.fork_from, s.seq, search_.beams()[i].tokens.back());
      check(!finished, "beam search: a forked beam finished in the scheduler");
    } else {
      add_request(s);
    }
    s.fork_from = 0;
    slot_of_[s.seq] = static_cast<int>(i);
  }
}

void BeamGroup::abort_all() {
  for (Slot& s : slots_)
    if (s.seq) {
      drop(s.seq);
      s.seq = 0;
    }
  commits_.clear();
}

}  // namespace tinfer
