#include "toolcall/parser_test_util.h"

#include <random>

namespace tinfer::toolcall::testing {
namespace {

void absorb(Streamed& s, ParseDelta&& d) {
  s.content += d.content;
  for (auto& c : d.calls) {
    if (!c.id.empty()) {
      if (c.name.empty()) s.problem += "opening delta without a name; ";
      for (const auto& o : s.calls)
        if (o.index == c.index) s.problem += "index opened twice; ";
      s.calls.push_back(c);
      continue;
    }
    if (!c.name.empty()) s.problem += "a piece carries a name; ";
    bool found = false;
    for (auto& o : s.calls)
      if (o.index == c.index) o.arguments += c.arguments, found = true;
    if (!found) s.problem += "piece before its opening delta; ";
  }
}

Streamed run_chunks(const ToolCallFormat& format, const std::string& text, const std::vector<size_t>& sizes,
                    uint64_t seed) {
  auto p = format.make_parser();
  p->seed_ids(seed);
  Streamed s;
  size_t pos = 0;
  for (size_t i = 0; pos < text.size(); ++i) {
    size_t n = sizes.empty() ? text.size() : sizes[i % sizes.size()];
    absorb(s, p->push(std::string_view(text).substr(pos, n)));
    pos += n;
  }
  absorb(s, p->finish());
  s.final_calls = p->calls();
  return s;
}

}  // namespace

Streamed run(const ToolCallFormat& format, const std::string& text, const std::vector<size_t>& cuts, uint64_t seed) {
  return run_chunks(format, text, cuts, seed);
}

Streamed run_random(const ToolCallFormat& format, const std::string& text, uint64_t chunk_seed) {
  std::mt19937_64 rng(chunk_seed);
  std::uniform_int_distribution<size_t> len(1, 9);
  std::vector<size_t> sizes;
  for (size_t total = 0; total < text.size(); total += sizes.back()) sizes.push_back(len(rng));
  return run_chunks(format, text, sizes, 7);
}

}  // namespace tinfer::toolcall::testing
