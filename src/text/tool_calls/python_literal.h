// Pythonic tool calls, "[f(a=1, b='x'), g()]": a list of calls with keyword arguments whose values are Python
// literals (str, int, float, True/False/None, lists, tuples, dicts), converted to JSON objects.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tinfer::toolcall {

struct PythonCall {
  std::string name;       // may be dotted (module.func)
  std::string arguments;  // a JSON object as text, keys in the order written
};

// The whole of `text` must be the list (surrounding whitespace allowed); nullopt otherwise, or when it is empty.
std::optional<std::vector<PythonCall>> parse_python_calls(std::string_view text);

}  // namespace tinfer::toolcall
