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
};

}  // namespace tinfer::cli
