// Structured-output fields of a request body -> one GrammarSpec: OpenAI's response_format (json_object,
// json_schema), vLLM's guided_json / guided_regex / guided_choice / guided_grammar and structured_outputs, and
// llama-server's json_schema and grammar. At most one may ask for a grammar; each wrong shape is a 400 naming the
// field. Compilation (and the refusals of what the grammar engine cannot honour) comes later, in the server's
// GrammarCompiler.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "grammar/grammar_spec.h"

namespace tinfer::server {

struct OutputFormat {
  grammar::GrammarSpec spec;
  std::string field;  // the body field it came from (the `param` of a 400 when it does not compile)
};

// nullopt when no field asks for structured output (absent, null, or response_format {"type": "text"}).
// raw_body: the body's text, re-read with its key order (a schema's property order is its output's); "" = `body`.
std::optional<OutputFormat> parse_output_format(const nlohmann::json& body, bool chat, std::string_view raw_body = {});

}  // namespace tinfer::server
