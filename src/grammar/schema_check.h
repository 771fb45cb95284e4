// JSON Schema keywords the grammar cannot honour. xgrammar ignores them with a warning (the output would then not
// validate against the schema the client sent); we refuse them instead, naming the keyword and where it is.
#pragma once
#include <string>

namespace tinfer::grammar {

// Throws GrammarError for invalid JSON, a schema that is not an object or boolean, an unsupported keyword
// ("... keyword 'uniqueItems' at #/properties/tags ..."), a shape xgrammar would compile wrongly (an empty anyOf,
// a required property not in `properties`), or a schema past the compile-cost bounds (nesting deeper than 128
// levels, more than 4096 subschemas, 256 optional properties in one object, 8192 enum values).
void check_schema_supported(const std::string& schema_json);
// The same for every JSON Schema inside a structural tag (tool calls), under one budget for the whole tag.
void check_structural_tag(const std::string& tag_json);

}  // namespace tinfer::grammar
