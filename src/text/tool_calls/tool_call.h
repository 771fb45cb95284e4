// Tool calls as the OpenAI API shows them, and the streaming parser interface every tool-call format implements
// (tool_call_format.h holds the table of formats). A parser is fed one choice's decoded text in pieces as it streams
// and splits it into content, and tool calls whose arguments arrive in pieces.
#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace tinfer::toolcall {

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // a JSON object as text (what the model wrote for JSON formats; converted for the others)
  int index = 0;          // the streaming index its deltas carried (== its position in calls() unless a call broke)
};

// Streaming: the first delta of call `index` carries id and name (arguments may be ""), later ones only argument
// pieces; the pieces of one index concatenate to exactly that call's ToolCall::arguments.
struct ToolCallDelta {
  int index = 0;
  std::string id;
  std::string name;
  std::string arguments;
};

struct ParseDelta {
  std::string content;
  std::string reasoning;
  std::vector<ToolCallDelta> calls;

  bool empty() const { return content.empty() && reasoning.empty() && calls.empty(); }
  void append(ParseDelta&& more);  // `more` comes after this one (content, reasoning and call pieces concatenate)
};

// tool_choice, as OpenAI defines it ("none" | "auto" | "required" | {"type":"function","function":{"name":…}}),
// with parallel_tool_calls.
struct ToolChoice {
  enum class Mode { kNone, kAuto, kRequired, kNamed } mode = Mode::kAuto;
  std::string name;  // kNamed
  bool parallel = true;
};

// One per choice. push() returns what is decided by the text so far: text is withheld only while it may still be
// the start (or the inside) of a call; finish() flushes the rest at the end of the output. Non-streaming use is
// push(all) + finish(). Chunking never changes the result: the concatenated deltas of any split of a text equal
// those of push(whole text), and so does calls().
//
// A call that breaks (invalid syntax, or the output ends inside it) is returned as content, raw, from its start
// marker on, and never enters calls(). If its first deltas had already gone out (the name and a prefix of valid
// arguments), that index is simply never completed; the next call gets the next index.
class ToolCallParser {
 public:
  virtual ~ToolCallParser() = default;
  virtual ParseDelta push(std::string_view text) = 0;
  virtual ParseDelta finish() = 0;
  // Every complete call so far, in order.
  const std::vector<ToolCall>& calls() const { return calls_; }
  // Call ids are "call_" + 24 random alphanumerics (Mistral: 9 alphanumerics, which its template demands), drawn
  // from std::random_device; seed_ids makes them a deterministic function of the seed (tests).
  virtual void seed_ids(uint64_t seed) { rng_.seed(seed); }
  // The request's OpenAI "tools" array, for formats whose text does not say a value's type (qwen3_coder: a
  // parameter declared "string" stays a string even when it reads as a number). Optional.
  virtual void set_tools(const nlohmann::json& tools);

 protected:
  ToolCallParser();
  std::string new_id(size_t alnum_chars = 24, bool call_prefix = true);
  // Opens call `index` = next_index_++ in `out` with a fresh id; returns the index.
  int open_call(ParseDelta& out, const std::string& name, size_t id_chars = 24, bool call_prefix = true);
  void add_piece(ParseDelta& out, int index, std::string_view piece);
  // Records the complete call `index` (with the id and name it was opened with).
  void close_call(int index, std::string arguments);

  std::vector<ToolCall> calls_;
  int next_index_ = 0;

 private:
  struct Open {
    int index;
    std::string id, name;
  };
  std::vector<Open> open_;
  std::mt19937_64 rng_;
};

}  // namespace tinfer::toolcall
