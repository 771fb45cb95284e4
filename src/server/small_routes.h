// The small JSON routes: /v1/models, /tokenize, /detokenize (vLLM's shapes). Pure functions of the
// context and the body; throw ApiError on bad input.
#pragma once
#include <nlohmann/json.hpp>

#include "server/server_context.h"

namespace tinfer::server {

nlohmann::json models_response(const ServerContext& ctx, int64_t created);
// {"prompt": str, "add_special_tokens": bool=true} or {"messages": [...]} -> {tokens, count, max_model_len}
nlohmann::json tokenize_response(const ServerContext& ctx, const nlohmann::json& body);
// {"tokens": [ids]} -> {"prompt": text}
nlohmann::json detokenize_response(const ServerContext& ctx, const nlohmann::json& body);

}  // namespace tinfer::server
