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
};

inline constexpr LadderRung kLadder[] = {
    {"naive: padded static batching, reserved KV, f32 KV, no prefix cache, no chunked prefill", "baseline",
     [](EngineConfig& c) {
       c.batching = BatchingMode::kStaticPadded;
       c.kv_layout = kv::KvLayout::kReserved;
       c.kv_dtype = KvDtype::f32;
       c.prefix_caching = false;
       c.chunked_prefill = false;
     }},
    {"+ paged KV (blocks on demand)", "+40% batch capacity",
     [](EngineConfig& c) { c.kv_layout = kv::KvLayout::kPaged; }},
    {"+ continuous batching", "~2x throughput", [](EngineConfig& c) { c.batching = BatchingMode::kContinuous; }},
    {"+ chunked prefill + prefix caching", "lower TTFT tail; shared prefixes computed once",
     [](EngineConfig& c) { c.chunked_prefill = true, c.prefix_caching = true; }},
    {"+ fp16 KV cache", "2x KV capacity at dPPL ~ 0", [](EngineConfig& c) { c.kv_dtype = KvDtype::f16; }},
    // Weight precision (issue 11), against the base file's F16: the base -m should be F16 for these rungs.
    {"+ INT8 weights: Q8_0 W8A8, SmoothQuant", "INT8 ~1.6x over FP16, dPPL ~ 0", [](EngineConfig&) {},
     "q8_0:smoothquant"},
    {"INT4 weights instead: Q4_0 mix, RTN", "INT4 ~2.2x over FP16, dPPL <= 0.5", [](EngineConfig&) {}, "q4_0:rtn"},
    {"INT4 weights: Q4_0 mix, GPTQ", "lower KLD than RTN at the same size", [](EngineConfig&) {}, "q4_0:gptq"},
    {"INT4 weights: Q4_0 mix, AWQ", "lower KLD than RTN at the same size", [](EngineConfig&) {}, "q4_0:awq"},
};

}  // namespace tinfer::cli
