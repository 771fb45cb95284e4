// The public offline serving API: an Engine owns a model, its KV cache, a scheduler and the
// samplers, and runs iteration-level (continuous) batching. Clients add requests from any thread;
// one thread drives step(); events are delivered by callback on the stepping thread.
// The HTTP server (src/server) only converts JSON to these calls and back.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tinfer/act_quant.h"
#include "tinfer/kv_precision.h"
#include "tinfer/early_exit.h"
#include "tinfer/layer_skip.h"
#include "tinfer/op_profile.h"
#include "tinfer/batching_mode.h"
#include "tinfer/spec_config.h"
#include "tinfer/request.h"
#include "tinfer/request_resolver.h"
#include "tinfer/sampler.h"
#include "tinfer/scheduler_config.h"
#include "tinfer/kv_types.h"

namespace tinfer {

class Model;
class Tokenizer;

// The engine's configuration by owner: each group goes whole to the part that uses it.
struct EngineConfig {
  // The KV cache (engine/kv_budget.h sizes it, kvcache/ holds it).
  struct Kv {
    // The memory (the CPU analogue of gpu_memory_utilization): memory_bytes if > 0, else fraction of the memory
    // available after the weights.
    int64_t memory_bytes = 0;
    double fraction = 0.5;
    int block_size = 16;
    bool prefix_caching = true;
    // Sliding-window layers (Mistral, Gemma 3's local layers) keep only their window's blocks: a pool of their
    // own when the model mixes them with full-attention layers, blocks given back as they leave the window
    // otherwise. false: they keep the whole context like every other layer (their attention is windowed either way).
    bool window = true;
    kv::KvLayout layout = kv::KvLayout::kPaged;  // kReserved: baseline, max context reserved per sequence
    // Freed blocks before never-used ones (the arena's resident memory grows to the running peak), or vLLM's
    // never-used first (it grows to the whole arena): kv_types.h.
    kv::ReuseOrder reuse = kv::ReuseOrder::kResidentFirst;
    // Element types (tinfer/kv_dtype.h): dtype for K and V unless dtype_k / dtype_v say otherwise (a per-layer
    // precision plan, Plans::kv_layers, gives every layer's instead). f16 by default, as every peer's (ΔPPL
    // +0.01% against f32, BENCHMARKS §2d); f32 on request.
    KvDtype dtype = KvDtype::f16;
    std::optional<KvDtype> dtype_k, dtype_v;
    // K smoothing at load (backend/k_smoothing_at_load.h): where some layer's K is quantized and no plan gives
    // factors (a plan, Plans::kv_layers, says whether K is smoothed), the engine calibrates them with one forward over a built-in text when it starts (well under a
    // second for SmolLM2-135M). false: a quantized K is stored with per-token scales alone.
    bool k_smooth_at_load = true;
  };
  // Calibrated plans, applied by the backend and the cache.
  struct Plans {
    // Per-layer KV precision plan (tinfer calibrate-kv, --kv-plan): every layer's K and V types; empty = Kv's.
    std::vector<KvLayerTypes> kv_layers;
    std::vector<std::vector<float>> kv_k_smooth;  // per-layer K smoothing factors (KvPrecision::k_smooth), or empty
    // Calibrated layer skipping (tinfer calibrate-skip, --skip-plan): the sub-blocks every forward leaves out; a
    // layer whose attention is skipped holds no KV (the planner counts only the layers kept). Empty = none.
    LayerSkip skip;
    EarlyExit early_exit;  // per-token early exit (tinfer/early_exit.h); threshold 1 = off
  };
  // What requests are resolved against (RequestLimits).
  struct Requests {
    int default_max_tokens = 256;
    int max_tokens_cap = 4096;
    // The background class (long jobs): requests asking for more than long_request_tokens outputs (0: none)
    // are admitted only while no interactive request waits and fewer than
    // scheduler.max_background_running run.
    int long_request_tokens = 0;
  };

  std::string model_path;
  std::string tokenizer_path;       // llama2.c .bin models only
  // A directory for packed-weight caches (--packed-cache): a later start of the same model reads its packed
  // weights back instead of packing them. "" = pack at every start.
  std::string packed_cache_dir;
  bool packed_cache_copy = false;  // --packed-cache-mode copy: into huge-page buffers instead of mapped in place
  // Applied by create(config) to the loaded model before the backend packs it (the tools' --quantize-on-load:
  // the float model quantized in memory); empty = none.
  std::function<std::unique_ptr<Model>(std::unique_ptr<Model>)> model_transform;
  int threads = 0;                  // 0 = all cores
  ActQuant act_quant = ActQuant::block32;  // int8 activation scales per 32-block, or per token (W8A8)
  Kv kv;
  Plans plans;
  // Handed to the Scheduler whole, except max_model_len (0 here = the model's context length) and cache_outputs
  // (the engine's: off under early exit).
  SchedulerConfig scheduler{.max_batched_tokens = 512, .max_model_len = 0};
  BatchingMode batching = BatchingMode::kContinuous;
  Requests requests;
  SpecConfig spec;                  // speculative decoding (mode none: off)
  // Structured output's jump-forward: where a request's grammar admits one continuation only (a schema's keys and
  // punctuation), its tokens are committed with the sampled one and computed in the next step as one chunk,
  // instead of one forward each. The text is the grammar's; its tokens (the model's own BPE of the forced text) may
  // differ from those the model would have chosen, so outputs can differ from those with it off. Off by default:
  // a model conditioned on tokens it would not have written can answer differently (Qwen2.5-Coder, given its
  // </tool_call> as one token, goes on to a second call where it otherwise stops; BENCHMARKS §1t).
  bool grammar_jump_forward = false;
  bool verbose = true;              // print the KV budget at start (bytes/token, capacity, concurrency)

  std::vector<std::string> validate() const;  // every problem, one message each
  // What the cache holds per layer for a model of n_layers (no KV where skip skips the attention); throws Error
  // if kv_layers or skip names another count.
  KvPrecision kv_precision(int64_t n_layers) const;
};

// One event for one sample of a request. index = which of the n samples.
struct TokenEvent {
  RequestId id = 0;
  int index = 0;
  bool has_token = false;
  Token token = -1;
  float logprob = 0;
  std::vector<TokenLogprob> top_logprobs;
  bool finished = false;
  FinishReason finish_reason = FinishReason::kNone;
  int prompt_tokens = 0;
  int cached_prompt_tokens = 0;
  int completion_tokens = 0;         // so far, for this sample
  bool clamped = false;              // max_tokens was clamped to the server cap
  // Beam search: every event of a result carries its hypothesis' cumulative logprob and length-penalised score
  // (logprob is then the token's own log-softmax of the penalised logits).
  bool beam = false;
  double beam_logprob = 0, beam_score = 0;
  // GenerationRequest::report_entropy only (NaN otherwise), in nats: the mean entropy of the next-token
  // distributions over the prompt's positions (from the first token on), and the entropy of the distribution this
  // event's token was drawn from.
  float prompt_entropy = std::numeric_limits<float>::quiet_NaN();
  float entropy = std::numeric_limits<float>::quiet_NaN();
};
using EventCallback = std::function<void(const TokenEvent&)>;

struct EngineStats {
  int running = 0, waiting = 0;
  int background_running = 0, background_waiting = 0;  // of which the background class
  int kv_blocks_total = 0, kv_blocks_used = 0, kv_blocks_peak = 0;
  int kv_blocks_touched = 0;  // ever handed out: with --kv-reuse resident the peak, with fresh it grows to the total
  double prefix_hit_rate = 0;        // hit tokens / looked-up tokens
  int64_t prompt_tokens = 0, generated_tokens = 0, preemptions = 0, aborts = 0, steps = 0;
  int64_t padding_tokens = 0;  // computed for padding rows (static-padded batching)
  int64_t computed_tokens = 0; // positions computed over all steps: prefill, decode, recompute, padding
  int64_t kv_waste_slots = 0;        // reserved but unused token slots (now)
  int running_peak = 0;              // most requests running in one step so far
  int64_t kv_capacity_tokens = 0;    // kv_blocks_total x block_size
  int64_t kv_bytes_per_token = 0;    // every layer's K and V, scales included (the full-attention layers' when
                                     // the sliding-window layers have their own pool)
  int kv_window_blocks_total = 0, kv_window_blocks_used = 0, kv_window_blocks_peak = 0;  // that pool, else 0
  int64_t kv_window_bytes_per_token = 0;
  std::string kv_types;              // KvPrecision::describe(): "f16", "k=int8 v=int4", "mixed: ..."
  // Speculative decoding: draft tokens verified, of which kept, and the decode steps that carried drafts.
  std::string spec_mode = "none";
  int64_t spec_drafted = 0, spec_accepted = 0, spec_steps = 0;
  double spec_row_cost = 0;  // the adaptive model's measured price of a verify row (fraction of a 1-row step)
  // Early exit: rows that could exit (decode rows), rows that did, and the mean layers run per such row.
  int64_t early_exit_eligible = 0, early_exit_exited = 0;
  double early_exit_mean_layers = 0;
  // Structured output's jump-forward: tokens committed as a grammar's forced continuation (no forward of their own).
  int64_t grammar_jump_forward_tokens = 0;
  double spec_acceptance() const { return spec_drafted > 0 ? double(spec_accepted) / double(spec_drafted) : 0.0; }
};

class Engine {
 public:
  // Loads the model and plans the KV cache; throws Error (e.g. a context that cannot fit one sequence).
  static std::unique_ptr<Engine> create(const EngineConfig& config);
  // The same over an already loaded model (tests, synthetic models); config.model_path is ignored.
  static std::unique_ptr<Engine> create(std::unique_ptr<Model> model, const EngineConfig& config);
  virtual ~Engine() = default;

  // Thread-safe. The limits requests are resolved against (fixed once the engine exists).
  virtual const RequestLimits& request_limits() const = 0;
  // Thread-safe. Validates and resolves a request once (defaults, caps, context room, stop ids, priority);
  // throws RequestError naming the field at fault.
  ResolvedRequest resolve(GenerationRequest request) const {
    return resolve_request(std::move(request), request_limits());
  }
  // Thread-safe. The request joins at the next step.
  virtual RequestId add_request(ResolvedRequest request, EventCallback on_event) = 0;
  RequestId add_request(GenerationRequest request, EventCallback on_event) {
    return add_request(resolve(std::move(request)), std::move(on_event));
  }
  // Thread-safe. Aborts at the next step (blocks return to the pool then); unknown ids are ignored.
  virtual void abort(RequestId id) = 0;
  // Runs one iteration (schedule -> forward -> sample -> update). Returns false if there was nothing to do.
  virtual bool step() = 0;
  virtual bool has_work() const = 0;  // thread-safe

  virtual EngineStats stats() const = 0;  // thread-safe snapshot
  // Thread-safe: time by operator category over all steps so far (forward categories from the backend,
  // plus scheduling and sampling), as of the last step.
  virtual OpProfile op_profile() const { return {}; }
  // Stepping thread only: the live profile, to reset between phases or to enable and read its trace.
  virtual OpProfile& stepping_profile() {
    static thread_local OpProfile none;
    return none;
  }
  virtual const Model& model() const = 0;
  virtual const Tokenizer& tokenizer() const = 0;
  virtual const EngineConfig& config() const = 0;
  virtual int max_model_len() const = 0;  // longest prompt + output a request may have
};

}  // namespace tinfer
