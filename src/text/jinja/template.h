// A parsed Jinja template: parse once (errors name the construct and line), render many times.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "text/jinja/eval.h"

namespace tinfer::jinja {

struct Program;

class Template {
 public:
  explicit Template(std::string_view source);  // throws Error("chat template line N: ...")
  // Variables are the render's globals (messages, add_generation_prompt, ...); range, namespace,
  // raise_exception and strftime_now are always defined. `clock` defaults to the local time.
  Str render(std::unordered_map<std::string, Value> vars, const Limits& limits = {}, Clock clock = {}) const;
  // Whether the template uses `s` as a string constant or attribute name anywhere.
  bool mentions(const std::string& s) const;

 private:
  std::shared_ptr<const Program> prog_;
};

std::string local_strftime(const std::string& format);

}  // namespace tinfer::jinja
