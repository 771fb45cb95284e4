#include "text/jinja/template.h"

#include <ctime>

#include "text/jinja/parser.h"

namespace tinfer::jinja {

Template::Template(std::string_view source) : prog_(std::make_shared<Program>(parse(source))) {}

Str Template::render(std::unordered_map<std::string, Value> vars, const Limits& limits, Clock clock) const {
  std::unordered_map<std::string, Value> g;
  add_globals(g);
  for (auto& [k, v] : vars) g[k] = std::move(v);
  Interp in(limits, clock ? std::move(clock) : Clock(local_strftime));
  return in.render(prog_->body, std::move(g));
}

bool Template::mentions(const std::string& s) const { return prog_->strings.count(s) != 0; }

std::string local_strftime(const std::string& format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[256];
  const size_t n = format.size() < 100 ? std::strftime(buf, sizeof buf, format.c_str(), &tm) : 0;
  return std::string(buf, n);
}

}  // namespace tinfer::jinja
