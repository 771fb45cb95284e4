// A cheap pre-scan of a JSON body's nesting depth. nlohmann's recursive parser spends ~40 bytes of
// heap per level (1 MB of "[[[[..." costs ~40 MB), so a body nested deeper than any real request is
// refused before it is parsed. Used by the server (request bodies) and the grammar compiler (schemas sent as text).
#pragma once
#include <cstddef>
#include <string_view>

namespace tinfer {

constexpr size_t kMaxJsonDepth = 64;  // request bodies: OpenAI requests nest a handful of levels

// True when some '[' / '{' outside strings opens level limit + 1. Ignores every other syntax error
// (the real parser reports those).
bool json_deeper_than(std::string_view text, size_t limit);

}  // namespace tinfer
