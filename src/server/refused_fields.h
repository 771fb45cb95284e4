// Request fields naming features this server does not implement (suffix, best_of != n, audio, prompt
// logprobs ...; tools and structured output are served, not refused here). Ignoring them would let a client believe it got what it asked for, so each
// one is refused with a 400 naming the field -- unless its value asks for nothing (null, [], "none",
// {"type": "text"}, the default).
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace tinfer::server {

// Throws ApiError(400, param = the field) for the first refused field present in `body`.
// `n` is the request's n (best_of == n is plain sampling and is accepted).
void refuse_unsupported_fields(const nlohmann::json& body, bool chat, int n);

// The refused field names for an endpoint, for documentation and tests.
std::vector<std::string> refused_field_names(bool chat);

}  // namespace tinfer::server
