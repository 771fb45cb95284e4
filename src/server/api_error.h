// An error a client caused (or may retry), in the OpenAI shape {"error": {message, type, param, code}}.
// Thrown anywhere while a request is being validated; the HTTP layer turns it into status + body.
#pragma once
#include <stdexcept>
#include <string>

namespace tinfer::server {

struct ApiError : std::runtime_error {
  int status;
  std::string type;   // "invalid_request_error", "authentication_error", "rate_limit_error", ...
  std::string param;  // the offending field, "" if none
  std::string code;   // machine-readable, "" if none

  ApiError(int status, std::string message, std::string param = "", std::string code = "",
           std::string type = "invalid_request_error")
      : std::runtime_error(std::move(message)),
        status(status),
        type(std::move(type)),
        param(std::move(param)),
        code(std::move(code)) {}
};

// {"error": {...}} as compact JSON text; param/code are null when empty.
std::string error_body(const ApiError& e);

}  // namespace tinfer::server
