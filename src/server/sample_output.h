// One sample (choice) of a request as the client sees it: token ids -> complete UTF-8 text with stop
// strings cut, plus the per-token logprob records both OpenAI endpoints need.
#pragma once
#include <string>
#include <vector>

#include "engine/text_stream.h"
#include "text/tokenizer/tokenizer.h"
#include "server/stop_matcher.h"
#include "tinfer/engine.h"

namespace tinfer::server {

struct TokenRecord {
  std::string text;  // the token's bytes (specials rendered)
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;  // most likely first
  size_t text_offset = 0;                          // offset of this token in the choice's text
};

class SampleOutput {
 public:
  // at_text_start: the prompt is BOS alone (see TextStream).
  SampleOutput(const Tokenizer& tok, std::vector<std::string> stops, bool want_logprobs, bool at_text_start);

  // Consumes one engine event; returns the text delta now safe to send (may be empty).
  // New logprob records are appended to records() (see take_new_records()).
  std::string on_event(const TokenEvent& ev);
  // Ends the sample by the server (shutdown): flushes held text with finish_reason "abort".
  std::string finish_abort();

  bool done() const { return done_; }
  bool stopped_by_string() const { return stop_.matched(); }
  const std::string& finish_reason() const { return finish_reason_; }
  const std::string& text() const { return text_; }
  int completion_tokens() const { return completion_tokens_; }
  // Records not yet taken (all of them when take_new_records() is never called).
  const std::vector<TokenRecord>& records() const { return records_; }
  // Moves out the records added since the previous call (streaming chunks): a stream keeps none,
  // so its memory does not grow with its length.
  std::vector<TokenRecord> take_new_records();

 private:
  std::string finish(std::string reason);

  const Tokenizer& tok_;
  StopMatcher stop_;
  TextStream stream_;
  bool want_logprobs_;
  bool done_ = false;
  std::string finish_reason_;
  std::string text_;       // everything emitted so far
  size_t raw_offset_ = 0;  // bytes of token text consumed (text_offset of the next token)
  int completion_tokens_ = 0;
  std::vector<TokenRecord> records_;
};

}  // namespace tinfer::server
