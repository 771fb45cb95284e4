#include "text/tool_calls/reasoning.h"

#include <nlohmann/json.hpp>

#include "text/chat/chat_template.h"

namespace tinfer::toolcall {
namespace {
constexpr std::string_view kOpen = "<think>";
}

ReasoningParser::ReasoningParser(bool starts_in_reasoning) : starts_in_(starts_in_reasoning) { close_.skip_space(); }

void ReasoningParser::step(char c, ParseDelta& out) {
  switch (state_) {
    case State::kStart: {
      held_ += c;
      if (is_space(c) && held_.find_first_not_of(" \t\r\n") == std::string::npos) return;
      size_t lead = held_.find_first_not_of(" \t\r\n");
      std::string_view tag = std::string_view(held_).substr(lead);
      if (tag == kOpen) {  // the block opens here
        held_.clear();
        state_ = State::kReasoning;
        return;
      }
      if (kOpen.starts_with(tag)) return;
      std::string rest = std::exchange(held_, std::string());
      state_ = starts_in_ ? State::kReasoning : State::kContent;
      for (char r : starts_in_ ? rest.substr(lead) : rest) step(r, out);
      return;
    }
    case State::kReasoning:
      if (close_.feed(c, out.reasoning) >= 0) {
        state_ = State::kContent;
        skip_space_ = true;
      }
      return;
    case State::kContent:
      if (skip_space_ && is_space(c)) return;
      skip_space_ = false;
      out.content += c;
      return;
  }
}

ParseDelta ReasoningParser::push(std::string_view text) {
  ParseDelta out;
  for (char c : text) step(c, out);
  return out;
}

ParseDelta ReasoningParser::finish() {
  ParseDelta out;
  if (state_ == State::kStart) {
    (starts_in_ ? out.reasoning : out.content) += held_;
    held_.clear();
  } else if (state_ == State::kReasoning) {
    close_.flush(out.reasoning);
  }
  state_ = State::kContent;
  return out;
}

namespace {

class ReasoningThenTools final : public ToolCallParser {
 public:
  ReasoningThenTools(bool starts_in, std::unique_ptr<ToolCallParser> tools)
      : reasoning_(starts_in), tools_(std::move(tools)) {}
  ParseDelta push(std::string_view text) override { return pass(reasoning_.push(text), false); }
  ParseDelta finish() override { return pass(reasoning_.finish(), true); }
  void seed_ids(uint64_t seed) override {
    if (tools_) tools_->seed_ids(seed);
  }
  void set_tools(const nlohmann::json& tools) override {
    if (tools_) tools_->set_tools(tools);
  }

 private:
  ParseDelta pass(ParseDelta d, bool last) {
    if (!tools_) return d;
    ParseDelta out;
    out.reasoning = std::move(d.reasoning);
    out.append(tools_->push(d.content));
    if (last) out.append(tools_->finish());
    calls_ = tools_->calls();
    return out;
  }

  ReasoningParser reasoning_;
  std::unique_ptr<ToolCallParser> tools_;
};

}  // namespace

std::unique_ptr<ToolCallParser> reasoning_then_tools(bool starts_in_reasoning, std::unique_ptr<ToolCallParser> tools) {
  return std::make_unique<ReasoningThenTools>(starts_in_reasoning, std::move(tools));
}

bool template_opens_reasoning(std::string_view chat_template) {
  try {
    ChatTemplate t{std::string(chat_template), "reasoning probe"};
    ChatMessage user;
    user.role = "user";
    user.content = "hi";
    ChatOptions opts;
    opts.add_generation_prompt = true;
    opts.clock = [](const std::string&) { return std::string("01 Jan 2025"); };
    std::string text = t.render({user}, opts).text;
    size_t end = text.find_last_not_of(" \t\r\n");
    return end != std::string::npos && std::string_view(text).substr(0, end + 1).ends_with(kOpen);
  } catch (const std::exception&) {
    return false;
  }
}

std::string reasoning_then(const nlohmann::json& answer_format, bool starts_in_reasoning) {
  nlohmann::json think = {{"type", "tag"},
                          {"begin", starts_in_reasoning ? "" : std::string(kOpen)},
                          {"content", {{"type", "any_text"}}},
                          {"end", "</think>"}};
  if (!starts_in_reasoning) think = {{"type", "optional"}, {"content", think}};
  nlohmann::json gap = {{"type", "regex"}, {"pattern", "[ \\t\\r\\n]{0,4}"}};
  nlohmann::json seq = {{"type", "sequence"}, {"elements", {think, gap, answer_format}}};
  return nlohmann::json{{"type", "structural_tag"}, {"format", seq}}.dump();
}

}  // namespace tinfer::toolcall
