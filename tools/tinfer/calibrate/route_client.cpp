// route_client: blocking JSON requests over http_client.h.
#include "calibrate/route_client.h"

#include <nlohmann/json.hpp>

#include "tinfer/error.h"
#include "core/timer.h"

namespace tinfer::cli {

namespace {

nlohmann::json call(const HttpUrl& url, const std::string& method, const std::string& path,
                    const nlohmann::json& body) {
  const double deadline = now_s() + 600;
  HttpResponse res(url, method, url.path + path, body.is_null() ? "" : body.dump(),
                   {{"Content-Type", "application/json"}}, deadline);
  const std::string text = res.read_body(deadline, size_t(64) << 20);
  check(res.status() == 200,
        method + " " + path + ": http " + std::to_string(res.status()) + ": " + text.substr(0, 300));
  return nlohmann::json::parse(text);
}

}  // namespace

RoutedServer connect_routed(const std::string& url) {
  RoutedServer s;
  s.url = parse_http_url(url);
  const nlohmann::json models = call(s.url, "GET", "/v1/models", nullptr);
  for (const auto& m : models.at("data")) {
    if (!m.contains("tinfer_route")) continue;
    const std::string role = m["tinfer_route"].value("role", "");
    (role == "large" ? s.large : s.small) = m.at("id").get<std::string>();
    s.policy = m["tinfer_route"].value("policy", "");
  }
  check(!s.large.empty() && !s.small.empty(),
        url + " does not route between two models (start it with tinfer serve --model-small --model-large --route)");
  return s;
}

RouteReply ask(const RoutedServer& s, const std::string& prompt, bool chat, const std::string& model, int max_tokens) {
  nlohmann::json body = {{"temperature", 0}, {"max_tokens", max_tokens}};
  if (!model.empty()) body["model"] = model;
  if (chat)
    body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", prompt}}});
  else
    body["prompt"] = prompt;
  RouteReply r;
  const double t0 = now_s();
  const nlohmann::json res = call(s.url, "POST", chat ? "/v1/chat/completions" : "/v1/completions", body);
  r.seconds = now_s() - t0;
  const auto& choice = res.at("choices").at(0);
  r.text = chat ? choice.at("message").at("content").get<std::string>() : choice.at("text").get<std::string>();
  r.model = res.at("model").get<std::string>();
  r.completion_tokens = res.at("usage").at("completion_tokens").get<int>();
  if (res.contains("tinfer_route")) {
    const auto& info = res["tinfer_route"].at(0);
    r.automatic = info.value("automatic", false);
    r.escalated = info.value("escalated", false);
    if (info.contains("prompt_entropy") && info["prompt_entropy"].is_number())
      r.prompt_entropy = info["prompt_entropy"].get<double>();
  }
  r.tokens = call(s.url, "POST", "/tokenize", {{"prompt", r.text}, {"add_special_tokens", false}})
                 .at("tokens")
                 .get<std::vector<int>>();
  return r;
}

}  // namespace tinfer::cli
