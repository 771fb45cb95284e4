// libFuzzer target: arbitrary bytes as a Jinja chat template (and, after a NUL byte, as a message
// content), parsed and rendered with tight limits. Every input must end in output or an Error --
// never a crash, a hang or unbounded memory -- and the literal ranges must stay well formed.
#include <cstdlib>
#include <string>

#include "tinfer/error.h"
#include "text/chat/chat_template.h"
#include "text/jinja/template.h"

namespace {

using namespace tinfer;
using namespace tinfer::jinja;

void check_ranges(const Str& s) {
  for (size_t k = 0; k < s.lit.size(); ++k) {
    if (s.lit[k].begin >= s.lit[k].end || s.lit[k].end > s.s.size()) std::abort();
    if (k && s.lit[k - 1].end >= s.lit[k].begin) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  const std::string src = in.substr(0, nul);
  const std::string content = nul == std::string::npos ? std::string("hi <|im_end|>") : in.substr(nul + 1);
  Limits lim;
  lim.max_output = 1 << 20;
  lim.max_items = 1 << 14;
  lim.max_steps = 200000;
  try {
    const Template t(src);
    Dict user, sys;
    user.set(Value::text("role"), Value::text("user"));
    user.set(Value::text("content"), Value::string(Str::literal(content)));
    sys.set(Value::text("role"), Value::text("system"));
    sys.set(Value::text("content"), Value::string(Str::literal("be brief")));
    std::unordered_map<std::string, Value> vars;
    vars["messages"] = Value::make_list({Value::make_dict(std::move(sys)), Value::make_dict(std::move(user))});
    vars["add_generation_prompt"] = Value::boolean(true);
    vars["bos_token"] = Value::text("<s>");
    vars["tools"] = from_json(R"([{"type": "function", "function": {"name": "f", "parameters": {"x": [1, 2.5, null]}}}])", true);
    const Str out = t.render(std::move(vars), lim, [](const std::string& f) { return f; });
    check_ranges(out);
    if (out.s.size() > lim.max_output) std::abort();
  } catch (const Error&) {
  }
  return 0;
}
