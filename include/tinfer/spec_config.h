// Speculative decoding's switches (EngineConfig::spec): which drafter, how many tokens it may propose, and the
// adaptive controller's model. Plain data; validate() lists every problem.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tinfer {

enum class SpecMode {
  kNone,   // one token per decode step
  kNgram,  // prompt lookup: the continuation of the latest earlier match of the last n tokens
  kDraft,  // a second, smaller model with the same tokenizer (draft_model)
  kSelf,   // the target's own first self_layers layers plus its head
};

const char* spec_mode_name(SpecMode m);                      // "none", "ngram", "draft", "self"
std::optional<SpecMode> parse_spec_mode(std::string_view s);  // nullopt for an unknown name

struct SpecConfig {
  SpecMode mode = SpecMode::kNone;
  int num_tokens = 4;  // K: most draft tokens per request per step
  // Adaptive K: each request drafts as many tokens as its measured acceptance repays at the current batch
  // (see speculator.h); off: always up to num_tokens.
  bool adaptive = true;
  // No drafting at all while this many requests decode at once (0 = never). On this CPU a verify row of the
  // default 135M model costs ~0.2 of a one-row step (its weights are small next to its per-row work), and at
  // batch 4 speculation measured no gain (BENCHMARKS section 1l): from 4 up it is off, like vLLM's
  // speculative_disable_by_batch_size. A larger model, whose step is weight-read-bound, can raise it.
  int disable_batch = 4;
  // The adaptive model's prior price of one more row in a decode step, as a fraction of a one-row step, used
  // until the engine has measured it on its own steps (StepCostModel): the weight pass is paid once, each row
  // adds its multiply-adds (BENCHMARKS §1j: K = 4 drafts cost 1.45x on TinyLlama Q8_0, ~0.11 a row; SmolLM2
  // Q4_1 measures ~0.19, its weights being small next to its per-row work).
  double row_cost = 0.15;
  int ngram_min = 1, ngram_max = 3;  // kNgram: match lengths tried, longest first
  std::string draft_model;            // kDraft: GGUF file
  int self_layers = 0;                // kSelf: layers the draft runs (1 .. n_layers - 1)

  std::vector<std::string> validate() const;
};

}  // namespace tinfer
