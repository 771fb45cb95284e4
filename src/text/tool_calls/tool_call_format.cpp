// The format table. Detection reads the chat template's text for what only that family's template writes; the rows
// are tried in table order, so each detector only has to exclude the rows above it.
#include "text/tool_calls/tool_call_format.h"

#include <array>
#include <nlohmann/json.hpp>

#include "text/tool_calls/byte_parser.h"
#include "text/tool_calls/structural_tags.h"

namespace tinfer::toolcall {
namespace {

bool has(std::string_view t, std::string_view s) { return t.find(s) != std::string_view::npos; }

// Qwen3-Coder writes <function=NAME> and <parameter=KEY> inside <tool_call>.
bool detect_qwen3_coder(std::string_view t) { return has(t, "<function=") && has(t, "<parameter="); }
// Hermes 2 Pro / Qwen2.5 / Qwen3: a JSON object inside <tool_call></tool_call>.
bool detect_hermes(std::string_view t) { return has(t, "<tool_call>"); }
bool detect_mistral(std::string_view t) { return has(t, "[TOOL_CALLS]"); }
// Pythonic templates describe the call list, e.g. "[func_name1(params_name1=params_value1, ...), func_name2(...)]".
bool detect_pythonic(std::string_view t) {
  return has(t, "[func_name1(") || has(t, "[func_name(") || has(t, "<|python_start|>");
}
// Llama 3.1 / 3.2: header ids, and the call as {"name": ..., "parameters": ...} (or the <|python_tag|> of 3.1).
bool detect_llama3_json(std::string_view t) {
  return has(t, "<|start_header_id|>") && (has(t, "\"parameters\"") || has(t, "<|python_tag|>"));
}

using Builder = std::string (*)(const stag::Json& tools, const ToolChoice& choice);

template <Builder B>
std::string from_json(const nlohmann::json& tools, const ToolChoice& choice) {
  return B(stag::Json::parse(tools.dump()), choice);
}
template <Builder B>
std::string from_text(std::string_view tools_json, const ToolChoice& choice) {
  stag::Json tools = stag::Json::parse(tools_json, nullptr, false);
  return tools.is_array() ? B(tools, choice) : std::string();
}

template <Builder B>
constexpr ToolCallFormat row(const char* name, bool (*detect)(std::string_view),
                             std::unique_ptr<ToolCallParser> (*make)()) {
  return {name, detect, make, from_json<B>, from_text<B>};
}

constexpr std::array<ToolCallFormat, 5> kFormats{{
    row<stag::qwen3_coder>("qwen3_coder", detect_qwen3_coder, make_qwen3_coder_parser),
    row<stag::hermes>("hermes", detect_hermes, make_hermes_parser),
    row<stag::mistral>("mistral", detect_mistral, make_mistral_parser),
    row<stag::pythonic>("pythonic", detect_pythonic, make_pythonic_parser),
    row<stag::llama3_json>("llama3_json", detect_llama3_json, make_llama3_json_parser),
}};

}  // namespace

std::span<const ToolCallFormat> tool_call_formats() { return kFormats; }

const ToolCallFormat* find_tool_call_format(std::string_view name) {
  for (const auto& f : kFormats)
    if (name == f.name) return &f;
  return nullptr;
}

const ToolCallFormat& detect_tool_call_format(std::string_view chat_template) {
  for (const auto& f : kFormats)
    if (f.detect(chat_template)) return f;
  return *find_tool_call_format("hermes");
}

}  // namespace tinfer::toolcall
