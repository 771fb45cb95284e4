#include "text/tool_calls/tool_call.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace tinfer::toolcall {

void ParseDelta::append(ParseDelta&& more) {
  content += more.content;
  reasoning += more.reasoning;
  for (auto& d : more.calls) {
    // A piece continues the previous delta of the same call; a delta with an id opens a call.
    if (d.id.empty() && !calls.empty() && calls.back().index == d.index) {
      calls.back().arguments += d.arguments;
    } else {
      calls.push_back(std::move(d));
    }
  }
}

ToolCallParser::ToolCallParser() : rng_(std::random_device{}()) {}

void ToolCallParser::set_tools(const nlohmann::json&) {}

std::string ToolCallParser::new_id(size_t alnum_chars, bool call_prefix) {
  static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::uniform_int_distribution<size_t> pick(0, sizeof(kAlnum) - 2);
  std::string id = call_prefix ? "call_" : "";
  for (size_t i = 0; i < alnum_chars; ++i) id += kAlnum[pick(rng_)];
  return id;
}

int ToolCallParser::open_call(ParseDelta& out, const std::string& name, size_t id_chars, bool call_prefix) {
  int index = next_index_++;
  ToolCallDelta d;
  d.index = index;
  d.id = new_id(id_chars, call_prefix);
  d.name = name;
  open_.push_back({index, d.id, name});
  out.calls.push_back(std::move(d));
  return index;
}

void ToolCallParser::add_piece(ParseDelta& out, int index, std::string_view piece) {
  if (piece.empty()) return;
  if (!out.calls.empty() && out.calls.back().index == index) {
    out.calls.back().arguments += piece;
  } else {
    out.calls.push_back({index, "", "", std::string(piece)});
  }
}

void ToolCallParser::close_call(int index, std::string arguments) {
  auto it = std::find_if(open_.begin(), open_.end(), [&](const Open& o) { return o.index == index; });
  if (it == open_.end()) return;
  calls_.push_back({it->id, it->name, std::move(arguments), index});
  open_.erase(it);
}

}  // namespace tinfer::toolcall
