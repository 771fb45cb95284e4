// Runs a tool-call parser over a text cut into chunks and reassembles what it streamed, so tests can check that
// every chunking gives the one-shot result.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "text/tool_calls/tool_call.h"
#include "text/tool_calls/tool_call_format.h"

namespace tinfer::toolcall::testing {

struct Streamed {
  std::string content;
  std::vector<ToolCallDelta> calls;   // one per index: the opening delta's id and name, all pieces concatenated
  std::vector<ToolCall> final_calls;  // parser.calls() after finish()
  std::string problem;                // a violation of the delta protocol, "" if none
};

// `cuts`: chunk sizes, repeated; empty = the whole text in one push.
Streamed run(const ToolCallFormat& format, const std::string& text, const std::vector<size_t>& cuts, uint64_t seed = 7);
Streamed run_random(const ToolCallFormat& format, const std::string& text, uint64_t chunk_seed);

}  // namespace tinfer::toolcall::testing
