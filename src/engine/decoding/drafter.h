// The draft side of speculative decoding: something that proposes the next tokens of many sequences at once
// (batched, so a draft model runs one forward per draft position for all of them). Implementations keep
// per-sequence state keyed by the scheduler's sequence id and bring it up to date from the committed tokens
// they are shown, so a rejected draft needs no undo call: the next query simply shows fewer tokens than were
// drafted.
#pragma once
#include <memory>
#include <span>
#include <vector>

#include "tinfer/act_quant.h"
#include "tinfer/spec_config.h"
#include "tinfer/kv_types.h"

namespace tinfer {

class Backend;
class Model;
class ThreadPool;

struct DraftQuery {
  kv::SeqId seq = 0;
  std::span<const kv::Token> tokens;  // the sequence's committed tokens: prompt then outputs
  int k = 0;                          // propose at most k tokens
  std::vector<kv::Token> draft;       // out: up to k tokens to follow `tokens` (none: nothing to propose)
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual const char* name() const = 0;
  virtual void propose(std::span<DraftQuery> queries) = 0;
  virtual void release(kv::SeqId seq) = 0;  // the sequence is gone: drop its state
};

// Prompt lookup over each sequence's own tokens (NgramDrafter per sequence).
std::unique_ptr<Drafter> make_ngram_drafter(int min_n, int max_n);

// What a model-backed drafter runs on and is sized by: the engine's thread pool (drafting and verifying take
// turns on it), the target's backend (a self-draft runs its first layers), activation quantization, the longest
// sequence, the block size and the target's KV capacity in tokens (the draft's own cache holds as many).
struct DrafterEnv {
  ThreadPool* pool = nullptr;
  Backend* target = nullptr;
  ActQuant act_quant = ActQuant::block32;
  int max_len = 0;
  int block_size = 16;
  int64_t kv_tokens = 0;
  kv::ReuseOrder kv_reuse = kv::ReuseOrder::kResidentFirst;  // the target's --kv-reuse, for the draft's own cache
  int disable_batch = 4;   // SpecConfig::disable_batch: most sequences drafting at once (0 = no limit)
  bool verbose = false;
};

// The drafter SpecConfig names for `target` (ngram, a draft model loaded from config.draft_model, or the
// target's first self_layers layers). Throws Error for a draft whose tokenizer differs from the target's.
std::unique_ptr<Drafter> make_drafter(const SpecConfig& config, const Model& target, const DrafterEnv& env);

}  // namespace tinfer
