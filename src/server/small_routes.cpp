// /v1/models (and /v1/models/{id}), /tokenize and /detokenize. Tokenize uses the same prompt rules as the
// completion endpoints (BOS when the tokenizer adds one; chat template with special tokens parsed in the
// template's text only).
#include "server/small_routes.h"

#include "tinfer/error.h"
#include "server/api_error.h"
#include "server/json_integer.h"
#include "server/openai_request.h"

namespace tinfer::server {

using nlohmann::json;

json models_response(const ServerContext& ctx, int64_t created) {
  auto entry = [&](const std::string& id, int max_model_len) {
    return json{{"id", id},
                {"object", "model"},
                {"created", created},
                {"owned_by", "tinfer"},
                {"max_model_len", max_model_len}};
  };
  json data = json::array();
  if (!ctx.route) {
    data.push_back(entry(ctx.model_id, ctx.max_model_len));
  } else {  // routing: the large model first (the default), then the small one, each with its own limits
    for (int i : {kLargeModel, kSmallModel}) {
      json m = entry(ctx.route->ids()[size_t(i)], ctx.driver.engine(i).max_model_len());
      m["tinfer_route"] = {{"policy", route_mode_name(ctx.route->config().mode)},
                           {"role", i == kLargeModel ? "large" : "small"}};
      data.push_back(std::move(m));
    }
  }
  return {{"object", "list"}, {"data", data}};
}

json model_response(const ServerContext& ctx, int64_t created, const std::string& id) {
  std::string served;
  const json list = models_response(ctx, created);  // held: a range-for over a temporary's member dangles
  for (const json& m : list["data"]) {
    if (m["id"] == id) return m;
    served += (served.empty() ? "'" : ", '") + m["id"].get<std::string>() + "'";
  }
  throw ApiError(404, "The model '" + id + "' does not exist; this server serves " + served, "model",
                 "model_not_found");
}

json tokenize_response(const ServerContext& ctx, const json& body) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object", "", "invalid_body");
  const Tokenizer& tok = ctx.tokenizer;
  bool add_special = true;
  if (auto it = body.find("add_special_tokens"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) throw ApiError(400, "'add_special_tokens' must be a boolean", "add_special_tokens");
    add_special = it->get<bool>();
  }
  std::vector<int32_t> ids;
  if (add_special && tok.add_bos_by_default() && tok.bos() >= 0) ids.push_back(tok.bos());
  if (body.contains("messages")) {
    json chat = {{"messages", body["messages"]}};
    if (body.contains("tools")) chat["tools"] = body["tools"];
    CompletionRequest r = parse_completion_request(chat, true);
    ChatOptions co;
    co.tools_json = r.tools_json;
    ids.clear();  // encode_chat adds BOS itself (and drops one the template prints)
    try {
      ids = encode_chat(tok, ctx.chat_template, r.messages, co, add_special && tok.add_bos_by_default() && tok.bos() >= 0);
    } catch (const Error& e) {
      throw ApiError(400, std::string("the chat template cannot render these messages: ") + e.what(), "messages",
                     "invalid_value");
    }
  } else {
    auto it = body.find("prompt");
    if (it == body.end() || !it->is_string()) throw ApiError(400, "'prompt' must be a string", "prompt");
    auto t = tok.encode(it->get<std::string>(), false, false);
    ids.insert(ids.end(), t.begin(), t.end());
  }
  return {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", ctx.max_model_len}};
}

json detokenize_response(const ServerContext& ctx, const json& body) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object", "", "invalid_body");
  auto it = body.find("tokens");
  if (it == body.end() || !it->is_array()) throw ApiError(400, "'tokens' must be a list of token ids", "tokens");
  std::vector<int32_t> ids;
  for (size_t i = 0; i < it->size(); ++i) {
    // Whole-number floats are ids as in every integer field (json_integer.h); 1.5 is "must be an integer".
    const std::string name = "tokens[" + std::to_string(i) + "]";
    const int64_t id = json_integer((*it)[i], name, INT32_MIN, INT32_MAX);
    if (id < 0 || id >= ctx.tokenizer.n_vocab())
      throw ApiError(400,
                     "'" + name + "' is not a token id (vocabulary size " + std::to_string(ctx.tokenizer.n_vocab()) + ")",
                     "tokens", "invalid_value");
    ids.push_back(static_cast<int32_t>(id));
  }
  return {{"prompt", ctx.tokenizer.decode(ids)}};
}

}  // namespace tinfer::server
