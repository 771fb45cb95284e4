// Integers and whole-number floats, range-checked (json_integer.h).
#include "server/json_integer.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace tinfer::server {

int64_t json_integer(const nlohmann::json& v, const std::string& name, int64_t lo, int64_t hi) {
  auto bad = [&](const std::string& what) { throw ApiError(400, "'" + name + "' " + what, name, "invalid_value"); };
  if (!v.is_number_integer() && !v.is_number_unsigned()) {
    if (!v.is_number_float() || std::floor(v.get<double>()) != v.get<double>()) bad("must be an integer");
  }
  const double d = v.get<double>();
  bool in_range;
  if (v.is_number_unsigned())  // nlohmann's type for every non-negative integer; it may exceed int64
    in_range = v.get<uint64_t>() <= static_cast<uint64_t>(hi) && v.get<int64_t>() >= lo;
  else if (v.is_number_integer()) in_range = v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
  else in_range = std::fabs(d) < 0x1p63 && d >= static_cast<double>(lo) && d <= static_cast<double>(hi);
  if (!in_range) bad("must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v.dump());
  return v.is_number_float() ? static_cast<int64_t>(d) : v.get<int64_t>();
}

}  // namespace tinfer::server
