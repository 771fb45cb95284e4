// libFuzzer target: arbitrary bytes as a model's answer, through every tool-call format's parser (the first byte
// picks the row and whether a reasoning parser goes in front). Never a crash; and the invariants the server relies
// on: one push, byte-by-byte pushes and a split at any point give the same content and calls; complete calls have
// JSON-object arguments equal to their streamed pieces; an answer with no complete call comes back whole as content.
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "text/tool_calls/reasoning.h"
#include "text/tool_calls/tool_call_format.h"

namespace {

using namespace tinfer::toolcall;

struct Out {
  std::string content, reasoning;
  std::map<int, std::string> pieces;
  std::vector<ToolCall> calls;
};

std::unique_ptr<ToolCallParser> make(uint8_t sel) {
  auto formats = tool_call_formats();
  auto p = formats[sel % formats.size()].make_parser();
  if (sel & 0x80) p = reasoning_then_tools(sel & 0x40, std::move(p));
  p->seed_ids(1);
  return p;
}

Out run(uint8_t sel, const std::string& text, size_t chunk) {
  auto p = make(sel);
  Out o;
  auto take = [&](ParseDelta d) {
    o.content += d.content, o.reasoning += d.reasoning;
    for (const auto& c : d.calls) o.pieces[c.index] += c.arguments;
  };
  for (size_t pos = 0; pos < text.size(); pos += chunk) take(p->push(std::string_view(text).substr(pos, chunk)));
  take(p->finish());
  o.calls = p->calls();
  return o;
}

void same(const Out& a, const Out& b) {
  if (a.content != b.content || a.reasoning != b.reasoning || a.pieces != b.pieces || a.calls.size() != b.calls.size())
    std::abort();
  for (size_t i = 0; i < a.calls.size(); ++i)
    if (a.calls[i].arguments != b.calls[i].arguments || a.calls[i].name != b.calls[i].name) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t sel = data[0], cut = data[1];
  const std::string text(reinterpret_cast<const char*>(data) + 2, size - 2);
  Out one = run(sel, text, text.size() + 1);
  same(one, run(sel, text, 1));
  same(one, run(sel, text, 1 + cut % 7));
  for (const auto& c : one.calls) {
    if (one.pieces[c.index] != c.arguments) std::abort();
    if (!nlohmann::json::parse(c.arguments, nullptr, false).is_object()) std::abort();
  }
  if (one.calls.empty() && !(sel & 0x80) && one.content != text) std::abort();
  return 0;
}
