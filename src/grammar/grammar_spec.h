// What a request asks its output to follow, before compilation: a kind and its source text. The server maps the
// OpenAI / vLLM / llama-server fields onto this; GrammarCompiler turns it into a TokenGrammar.
#pragma once
#include <string>

namespace tinfer::grammar {

enum class GrammarKind {
  kJsonObject,     // any JSON object (response_format json_object)
  kJsonSchema,     // source: a JSON Schema (response_format json_schema, guided_json, json_schema)
  kRegex,          // source: a regular expression (guided_regex)
  kChoice,         // source: a JSON array of strings, the output is exactly one of them (guided_choice)
  kEbnf,           // source: GBNF/EBNF with a `root` rule (guided_grammar, grammar)
  kStructuralTag,  // source: an xgrammar structural-tag JSON (tool calls, reasoning then an answer)
};

const char* grammar_kind_name(GrammarKind k);
struct GrammarSpec;
// The spec as an xgrammar structural-tag "format" object (JSON text), to be composed into a larger structural tag
// (a reasoning block, then this): {"type": "json_schema" | "regex" | "grammar" | "or" ...}.
std::string as_structural_format(const GrammarSpec& spec);  // "json_object", "json_schema", "regex", "choice", "ebnf", "structural_tag"

struct GrammarSpec {
  GrammarKind kind = GrammarKind::kJsonObject;
  std::string source;

  std::string cache_key() const { return std::string(grammar_kind_name(kind)) + '\0' + source; }
};

}  // namespace tinfer::grammar
