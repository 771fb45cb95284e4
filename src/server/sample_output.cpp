// Detokenization per sample: token -> TextStream (whole characters only) -> StopMatcher (hold
// back possible stop prefixes). Once a stop string matches, later tokens are ignored.
#include "server/sample_output.h"

#include <utility>

namespace tinfer::server {

SampleOutput::SampleOutput(const Tokenizer& tok, std::vector<std::string> stops, bool want_logprobs,
                           bool at_text_start)
    : tok_(tok), stop_(std::move(stops)), stream_(tok, at_text_start), want_logprobs_(want_logprobs) {}

std::string SampleOutput::on_event(const TokenEvent& ev) {
  if (done_) return "";
  std::string out;
  if (ev.has_token) {
    completion_tokens_++;
    if (want_logprobs_) {
      TokenRecord r;
      r.text = tok_.token_bytes(ev.token, true);
      r.logprob = ev.logprob;
      r.text_offset = raw_offset_;
      r.top.reserve(ev.top_logprobs.size());  // exact: records are most of a whole response's memory
      for (const auto& t : ev.top_logprobs) r.top.emplace_back(tok_.token_bytes(t.token, true), t.logprob);
      records_.push_back(std::move(r));
    }
    std::string bytes = stream_.piece(ev.token);
    raw_offset_ += bytes.size();
    out = stop_.push(stream_.assemble(bytes));
    text_ += out;
    if (stop_.matched()) return out + finish("stop");
  }
  if (ev.finished) {
    std::string r = finish_reason_name(ev.finish_reason);
    out += finish(r.empty() ? "stop" : r);
  }
  return out;
}

std::string SampleOutput::finish_abort() {
  if (done_) return "";
  return finish("abort");
}

std::string SampleOutput::finish(std::string reason) {
  done_ = true;
  finish_reason_ = std::move(reason);
  if (stop_.matched()) return "";
  // Held-back text: an incomplete character (U+FFFD) and a partial stop that never completed.
  std::string rest = stop_.push(stream_.flush());
  if (stop_.matched()) finish_reason_ = "stop";
  rest += stop_.flush();
  text_ += rest;
  return rest;
}

std::vector<TokenRecord> SampleOutput::take_new_records() { return std::exchange(records_, {}); }

}  // namespace tinfer::server
