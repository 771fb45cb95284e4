// The playbook's ladder as a table: rung 0 is the naive server, each later rung switches on one more
// technique (cumulative). Later issues add their rungs (quantized weights, quantized KV, speculative
// decoding, layer skipping) as one row each.
#pragma once
#include <tinfer/engine.h>

namespace tinfer::cli {

struct LadderRung {
  const char* name;
  const char* claim;  // the playbook's claimed effect, printed next to the measured one
  void (*apply)(EngineConfig& c);
  // "TYPE[:METHOD]": from this rung on, the models are quantized copies of the base (-m and the quality
  // model) made by tinfer quantize's library with that target type and method (rtn, gptq, awq,
  // smoothquant; default rtn). nullptr: the previous rung's weights. Rungs with weights replace each
  // other (the INT4 methods are alternatives, not cumulative).
  const char* weights = nullptr;
  // The calibrated per-layer KV plan rung: applies the --kv-plan file (the -m model's) to the engine and the
  // --quality-kv-plan file (the quality model's; default --kv-plan) to the quality run, both written by
  // tinfer calibrate-kv. Without them the rung is reported as skipped, with the reason.
  bool kv_plan = false;
  // Model-side rungs (issue 14), alternatives to each other on top of the previous rungs: the k-th plan of
  // --ladder-skip-plans (tinfer calibrate-skip; the quality model is scored with it too, so it must be -m), or
  // the k-th threshold of --ladder-exit (with --ladder-exit-layers; quality scored as teacher-forced decode, one
  // token per step, so tokens can exit). -1: none. Without the options the rung is reported as skipped.
  int skip_plan = -1;
  int exit_threshold = -1;
};

// The KV cache the weight rungs compare under: f16, as rung 4 (their effect alone, not the KV rungs').
inline void f16_kv(EngineConfig& c) {
  c.kv.dtype = KvDtype::f16;
  c.kv.dtype_k.reset(), c.kv.dtype_v.reset();
  c.plans.kv_layers.clear(), c.plans.kv_k_smooth.clear();
}

inline constexpr LadderRung kLadder[] = {
    {"naive: padded static batching, reserved KV, f32 KV, no prefix cache, no chunked prefill", "baseline",
     [](EngineConfig& c) {
       c.batching = BatchingMode::kStaticPadded;
       c.kv.layout = kv::KvLayout::kReserved;
       c.kv.dtype = KvDtype::f32;
       c.kv.prefix_caching = false;
       c.scheduler.chunked_prefill = false;
     }},
    {"+ paged KV (blocks on demand)", "+40% batch capacity",
     [](EngineConfig& c) { c.kv.layout = kv::KvLayout::kPaged; }},
    {"+ continuous batching", "~2x throughput", [](EngineConfig& c) { c.batching = BatchingMode::kContinuous; }},
    {"+ chunked prefill + prefix caching", "lower TTFT tail; shared prefixes computed once",
     [](EngineConfig& c) { c.scheduler.chunked_prefill = true, c.kv.prefix_caching = true; }},
    {"+ fp16 KV cache", "2x KV capacity at dPPL ~ 0", [](EngineConfig& c) { c.kv.dtype = KvDtype::f16; }},
    // KV precision (issue 12).
    {"int8 KV cache instead (per-token scales)", "~2x f16's sequences, dPPL < 0.1",
     [](EngineConfig& c) { c.kv.dtype = KvDtype::int8; }},
    {"calibrated per-layer KV plan instead (calibrate-kv: int8/int4 + K smoothing)", "int4 where the budget allows",
     [](EngineConfig&) {}, nullptr, true},
    // Weight precision (issue 11), against the base file's F16 with an f16 KV cache: the base -m should be F16.
    {"+ INT8 weights: Q8_0 W8A8, SmoothQuant (f16 KV)", "INT8 ~1.6x over FP16, dPPL ~ 0", f16_kv, "q8_0:smoothquant"},
    {"INT4 weights instead: Q4_0 mix, RTN", "INT4 ~2.2x over FP16, dPPL <= 0.5", f16_kv, "q4_0:rtn"},
    {"INT4 weights: Q4_0 mix, GPTQ", "lower KLD than RTN at the same size", f16_kv, "q4_0:gptq"},
    {"INT4 weights: Q4_0 mix, AWQ", "lower KLD than RTN at the same size", f16_kv, "q4_0:awq"},
    // Decoding (issue 13): lossless, so the quality columns repeat the previous rung's. The ladder's load puts
    // every request in flight at once, where drafting is off (from --spec-disable-batch decoding requests): the rung shows
    // that speculation costs nothing there; its batch-1 gain is BENCHMARKS section 1k's.
    {"+ speculative decoding: ngram prompt lookup, adaptive K", "acceptance 0.7: latency -40%, throughput +70%",
     [](EngineConfig& c) { c.spec.mode = SpecMode::kNgram; }},
    // Spending less compute on easy tokens (issue 14): lossy, so each is against the rungs above.
    {"+ layer skip plan (calibrate-skip, tighter budget; -m weights as stored)", "skip what barely changes the stream: >= 10% decode",
     [](EngineConfig&) {}, nullptr, false, 0},
    {"layer skip plan instead (looser budget)", "more speed, more KLD", [](EngineConfig&) {}, nullptr, false, 1},
    {"+ early exit instead (calibrate-exit, higher threshold)", "confident tokens leave early",
     [](EngineConfig&) {}, nullptr, false, -1, 0},
    {"early exit instead (lower threshold)", "more exits, more KLD", [](EngineConfig&) {}, nullptr, false, -1, 1},
};

}  // namespace tinfer::cli
