// The tool-call formats, one row per family: how to recognise the model's template, its streaming parser, and the
// xgrammar structural tag that enforces tool_choice "required" / a named function in that family's text format.
// README.md in this folder has the table with what each row parses and enforces.
#pragma once
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>

#include "text/tool_calls/tool_call.h"

namespace tinfer::toolcall {

struct ToolCallFormat {
  const char* name;  // "hermes", "llama3_json", "mistral", "pythonic", "qwen3_coder"
  bool (*detect)(std::string_view chat_template);
  std::unique_ptr<ToolCallParser> (*make_parser)();
  // xgrammar structural-tag JSON ({"type": "structural_tag", "format": …}, the input of xgrammar 0.2.9's
  // Grammar::FromStructuralTag / GrammarCompiler::CompileStructuralTag) for `choice`:
  //   kRequired: one or more calls (exactly one if !parallel) to any of `tools`, and nothing else;
  //   kNamed:    exactly one call to choice.name;
  //   kAuto:     free text in which a call, once its marker is written, must be complete and valid ("" for
  //              pythonic, whose calls have no marker to trigger on);
  //   kNone:     "" (no constraint).
  // Each call's arguments are constrained by its function's "parameters" schema ({"type": "object"} when absent),
  // in the exact text this family writes. `tools` is the OpenAI "tools" array (validated by the caller; a kNamed
  // name that is not among them gives "").
  std::string (*structural_tag)(const nlohmann::json& tools, const ToolChoice& choice);
  // The same from the "tools" array as JSON text, keeping its key order: nlohmann::json sorts object keys, so through
  // structural_tag() every schema's properties are forced in alphabetical order; through this, in the client's
  // declared order (as the template showed them to the model). "" for text that is not a JSON array.
  std::string (*structural_tag_text)(std::string_view tools_json, const ToolChoice& choice);
};

std::span<const ToolCallFormat> tool_call_formats();
const ToolCallFormat* find_tool_call_format(std::string_view name);  // nullptr if unknown (--tool-call-parser NAME)
const ToolCallFormat& detect_tool_call_format(std::string_view chat_template);  // falls back to hermes

}  // namespace tinfer::toolcall
