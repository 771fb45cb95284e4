// JSON Schema keywords the grammar cannot honour. xgrammar ignores them with a warning (the output would then not
// validate against the schema the client sent); we refuse them instead, naming the keyword and where it is.
#pragma once
#include <string>

namespace tinfer::grammar {

// Throws GrammarError for invalid JSON, a schema that is not an object or boolean, or an unsupported keyword
// ("... keyword 'uniqueItems' at #/properties/tags ..."). Nesting is bounded (the caller's JSON depth limit).
void check_schema_supported(const std::string& schema_json);

}  // namespace tinfer::grammar
