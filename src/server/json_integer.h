// The one reader of integer fields, shared by every endpoint (completions, chat, best_of, /detokenize): a JSON
// integer, or a float with no fraction (16.0: JavaScript clients and some SDKs send whole numbers as floats),
// within [lo, hi]. Anything else is a 400 naming the field, so "2.0" means 2 everywhere and "1.5" nowhere.
#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace tinfer::server {

// 0 <= hi. Throws ApiError(400, param = name): "'name' must be an integer" or "'name' must be in [lo, hi], got V".
int64_t json_integer(const nlohmann::json& v, const std::string& name, int64_t lo, int64_t hi);

}  // namespace tinfer::server
