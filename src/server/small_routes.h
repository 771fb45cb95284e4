// The small JSON routes: /v1/models, /v1/models/{id}, /tokenize, /detokenize (vLLM's shapes). Pure functions of the
// context and the body; throw ApiError on bad input.
#pragma once
#include <nlohmann/json.hpp>

#include "server/server_context.h"

namespace tinfer::server {

nlohmann::json models_response(const ServerContext& ctx, int64_t created);
// GET /v1/models/{id}: that model's entry of models_response; ApiError 404 model_not_found for an id not served.
nlohmann::json model_response(const ServerContext& ctx, int64_t created, const std::string& id);
// {"prompt": str, "add_special_tokens": bool=true} or {"messages": [...]} -> {tokens, count, max_model_len}
nlohmann::json tokenize_response(const ServerContext& ctx, const nlohmann::json& body);
// {"tokens": [ids]} -> {"prompt": text}
nlohmann::json detokenize_response(const ServerContext& ctx, const nlohmann::json& body);

}  // namespace tinfer::server
