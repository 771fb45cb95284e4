// The fewest tokens a request's prompt can encode to, known from counts and byte lengths alone: what lets the server
// refuse a prompt that cannot fit max_model_len before it renders the chat template and tokenizes the text, which is
// where a 1 MiB body costs ~60 MB (36,150 empty messages, or one 1 MiB word). The refusal is the engine's own
// context-length 400, with "at least N tokens".
//
// Every floor is a lower bound, never an estimate: a request that would fit is never refused. The facts behind it,
// measured once when the server starts:
//   bytes_per_token   Tokenizer::max_bytes_per_token(): a text of B bytes is at least B / it tokens (0: no bound);
//                     a completions prompt, tokenized alone, gets the bound of its own bytes (max_bytes_per_token_in)
//   message_tokens    per role, the fewest tokens one more empty message of that role adds to a rendered chat, over
//                     the probes the template accepts, less kMergeSlack (a message's text may merge with the
//                     wrapper's); 0 where no probe rendered (the template refuses that role there, or prints little)
//   user_content      the template prints each user message's content (a probe finds both of two)
//   tool_strings      the template prints every string of a tool definition (a probe finds its name, description,
//                     a parameter's key, description and enum value)
#pragma once
#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "text/chat/chat_template.h"
#include "text/tokenizer/tokenizer.h"

namespace tinfer::server {

struct CompletionRequest;

class PromptFloor {
 public:
  // The roles a message may have once parsed ("developer" is read as "system"), in message_tokens' order.
  static constexpr std::array<const char*, 4> kRoles = {"user", "assistant", "system", "tool"};
  static constexpr int kMergeSlack = 2;  // tokens a message's text may save by merging with the template's text

  PromptFloor() = default;  // no facts: every floor is 0
  static PromptFloor measure(const Tokenizer& tok, const ChatTemplate& tmpl);

  int64_t text_floor(std::string_view text) const;  // a completions prompt's text (0 without a tokenizer)
  // A chat prompt: its messages and the body's "tools" / "functions" (the parsed body).
  int64_t chat_floor(const std::vector<ChatMessage>& messages, const nlohmann::json& body) const;
  std::string describe() const;  // the facts, for the startup log

  const Tokenizer* tokenizer = nullptr;
  size_t bytes_per_token = 0;
  std::array<int, kRoles.size()> message_tokens{};
  bool user_content = false, tool_strings = false;
};

// Throws the context-length ApiError (400, context_length_exceeded) when a prompt's floor reaches max_model_len.
void refuse_unfit_prompts(const PromptFloor& floor, int max_model_len, const CompletionRequest& req,
                          const nlohmann::json& body);

}  // namespace tinfer::server
