// Reasoning content: <think>…</think> (DeepSeek-R1 distills, Qwen3, QwQ) goes to ParseDelta::reasoning, the rest to
// content. Some templates end the prompt inside the block ("<think>\n"), so the output starts in the reasoning and
// only "</think>" appears: starts_in_reasoning says which. Chain it in front of a ToolCallParser: its content is
// what the tool-call parser reads.
#pragma once
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "text/tool_calls/marker_text.h"
#include "text/tool_calls/tool_call.h"

namespace tinfer::toolcall {

// Byte by byte like the tool-call parsers (chunking never changes the result). Rules: a "<think>" opens the
// reasoning only at the very start of the output (after whitespace; when starts_in_reasoning, a repeated "<think>"
// there is dropped); the first "</think>" closes it; whitespace right inside the tags and right after "</think>" is
// dropped. An output that never closes its reasoning is all reasoning. Text is withheld only while it may still be
// "<think>" (at the start) or "</think>".
class ReasoningParser {
 public:
  explicit ReasoningParser(bool starts_in_reasoning);
  ParseDelta push(std::string_view text);
  ParseDelta finish();
  bool in_reasoning() const { return state_ != State::kContent; }

 private:
  enum class State { kStart, kReasoning, kContent };
  void step(char c, ParseDelta& out);

  bool starts_in_;
  State state_ = State::kStart;
  bool skip_space_ = false;
  std::string held_;  // kStart: leading whitespace and a partial "<think>"
  MarkerText close_{{"</think>"}, /*fences=*/false};
};

// The whole answer parser for a choice: the reasoning parser, then `tools` (nullptr: none; content passes through)
// on its content. push()/finish() give reasoning, content and calls together; calls() are the tool parser's.
std::unique_ptr<ToolCallParser> reasoning_then_tools(bool starts_in_reasoning, std::unique_ptr<ToolCallParser> tools);

// The template's generation prompt ends inside <think> (e.g. DeepSeek-R1's "<｜Assistant｜><think>\n"): found by
// rendering it for one user message; false when it cannot be rendered.
bool template_opens_reasoning(std::string_view chat_template);

// A structural tag (xgrammar's {"type": "structural_tag", "format": …}) that lets the model reason freely inside
// <think>…</think> and then forces `answer_format` (a structural-tag format object, e.g. {"type": "json_schema",
// "json_schema": {...}}, or the "format" of a ToolCallFormat::structural_tag). Not starts_in_reasoning: the block
// is optional (a model may answer at once); starts_in_reasoning: the output must first close it with "</think>".
// Up to 4 whitespace bytes may separate "</think>" from the answer.
std::string reasoning_then(const nlohmann::json& answer_format, bool starts_in_reasoning);

}  // namespace tinfer::toolcall
