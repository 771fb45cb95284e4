// Jinja parser: lexer chunks -> statement tree. Everything outside the supported subset is an error
// naming the construct and its line, so a template is accepted or refused when it is loaded.
#pragma once
#include <set>
#include <string>
#include <string_view>

#include "text/jinja/ast.h"

namespace tinfer::jinja {

struct Program {
  Body body;
  std::set<std::string> strings;  // string constants and attribute names the template uses
};

Program parse(std::string_view source);

// Names of the filters and tests the evaluator implements (checked at parse time, as Jinja does).
bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);

}  // namespace tinfer::jinja
