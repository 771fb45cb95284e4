// A streamed completion or chat request, timed chunk by chunk.
#include "bench/serve_client.h"

#include <nlohmann/json.hpp>

#include "core/timer.h"

namespace tinfer::cli {

namespace {

// True when a stream chunk carries output text (completions `text`, chat `delta.content`).
bool has_output(const nlohmann::json& chunk) {
  auto it = chunk.find("choices");
  if (it == chunk.end() || !it->is_array()) return false;
  for (const auto& ch : *it) {
    if (!ch.is_object()) continue;
    if (auto t = ch.find("text"); t != ch.end() && t->is_string() && !t->get_ref<const std::string&>().empty())
      return true;
    if (auto d = ch.find("delta"); d != ch.end() && d->is_object())
      if (auto c = d->find("content"); c != d->end() && c->is_string() && !c->get_ref<const std::string&>().empty())
        return true;
  }
  return false;
}

void read_usage(const nlohmann::json& chunk, RequestResult& r) {
  auto u = chunk.find("usage");
  if (u == chunk.end() || !u->is_object()) return;
  if (auto p = u->find("prompt_tokens"); p != u->end() && p->is_number_integer()) r.prompt_tokens = p->get<int64_t>();
  if (auto c = u->find("completion_tokens"); c != u->end() && c->is_number_integer())
    r.completion_tokens = c->get<int64_t>();
}

}  // namespace

RequestResult run_request(const ServeTarget& t, const std::string& body) {
  RequestResult r;
  r.start = now_s();
  const double deadline = r.start + t.timeout_s;
  try {
    HttpResponse res(t.url, "POST", t.path, body, t.headers, deadline);
    if (res.status() != 200) {
      r.error = "http " + std::to_string(res.status());
      try {
        r.detail = res.read_body(deadline, 300);
      } catch (const HttpFailure& f) {  // the status is the error; a broken error body is only its detail
        r.detail = f.what();
      }
      r.end = now_s();
      return r;
    }
    bool done = false;
    std::string data;
    while (!done && res.next_sse_data(data, deadline)) {
      const double now = now_s();
      if (data == "[DONE]") {
        done = true;
        break;
      }
      const auto chunk = nlohmann::json::parse(data, nullptr, false);
      if (chunk.is_discarded() || !chunk.is_object()) {
        r.error = "stream error";
        r.detail = "unparsable chunk: " + data.substr(0, 200);
        break;
      }
      if (chunk.contains("error")) {
        r.error = "stream error";
        r.detail = chunk["error"].dump().substr(0, 300);
        break;
      }
      if (has_output(chunk)) r.chunk_times.push_back(now);
      read_usage(chunk, r);
    }
    r.end = now_s();
    if (r.error.empty() && !done) {
      r.error = "connection";
      r.detail = "the stream ended without data: [DONE]";
    }
    r.ok = r.error.empty();
  } catch (const HttpFailure& f) {
    r.end = now_s();
    r.error = f.kind == HttpFailure::kTimeout ? "timeout" : "connection";
    r.detail = f.what();
  }
  return r;
}

}  // namespace tinfer::cli
