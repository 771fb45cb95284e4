// The pythonic structural tag: an EBNF grammar (xgrammar's "grammar" format) for "[f(a=1, b='x'), g()]". Each
// function takes its schema's top-level properties as keyword arguments, in declared order, the required ones
// always, the others optionally; a value follows its property's "type" (str, int, float, True/False, None, list,
// dict) or "enum"; nested lists and dicts are any Python literal (their inner schema is not enforced).
#include <algorithm>

#include "text/tool_calls/structural_tags.h"

namespace tinfer::toolcall::stag {
namespace {

// An EBNF string literal.
std::string lit(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else
      out += c;
  }
  return out + "\"";
}

constexpr const char* kCommon =
    "sep ::= \",\" \" \"?\n"
    "pystr ::= \"\\\"\" ([^\"\\\\\\n] | \"\\\\\" [^\\n])* \"\\\"\" | \"'\" ([^'\\\\\\n] | \"\\\\\" [^\\n])* \"'\"\n"
    "pyint ::= \"-\"? ([0-9] | [1-9] [0-9]+)\n"
    "pynum ::= pyint (\".\" [0-9]+)? ([eE] [-+]? [0-9]+)?\n"
    "pybool ::= \"True\" | \"False\"\n"
    "pyval ::= pystr | pynum | pybool | \"None\" | pylist | pydict\n"
    "pylist ::= \"[\" (pyval (sep pyval)*)? \"]\"\n"
    "pydict ::= \"{\" (pystr \": \" pyval (sep pystr \": \" pyval)*)? \"}\"\n";

std::string python_repr(const Json& v) {
  if (v.is_string()) return lit('"' + v.get<std::string>() + '"') + " | " + lit('\'' + v.get<std::string>() + '\'');
  if (v.is_boolean()) return lit(v.get<bool>() ? "True" : "False");
  if (v.is_null()) return lit("None");
  return lit(v.dump());
}

std::string type_rule(const std::string& type) {
  if (type == "string") return "pystr";
  if (type == "integer") return "pyint";
  if (type == "number") return "pynum";
  if (type == "boolean") return "pybool";
  if (type == "null") return "\"None\"";
  if (type == "array") return "pylist";
  if (type == "object") return "pydict";
  return "pyval";
}

// The value expression for one property's schema.
std::string value_expr(const Json& schema) {
  if (!schema.is_object()) return "pyval";
  std::vector<std::string> alts;
  if (schema.contains("enum") && schema["enum"].is_array() && !schema["enum"].empty()) {
    for (const auto& v : schema["enum"]) alts.push_back(python_repr(v));
  } else if (schema.contains("const")) {
    alts.push_back(python_repr(schema["const"]));
  } else if (schema.contains("type") && schema["type"].is_string()) {
    alts.push_back(type_rule(schema["type"].get<std::string>()));
  } else if (schema.contains("type") && schema["type"].is_array()) {
    for (const auto& t : schema["type"])
      if (t.is_string()) alts.push_back(type_rule(t.get<std::string>()));
  }
  if (alts.empty()) return "pyval";
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

// Rules for call k: ck ::= "name(" keyword arguments ")". ck_aI: the arguments from property I on after one has
// been written (each with its separator); ck_bI: the same before any (the first one written takes none).
std::string call_rules(const Function& f, size_t k) {
  std::string c = "c" + std::to_string(k);
  std::vector<std::pair<std::string, bool>> props;  // key, required
  std::vector<std::string> values;
  const Json& p = f.parameters;
  if (p.contains("properties") && p["properties"].is_object()) {
    Json required = p.value("required", Json::array());
    for (const auto& [key, schema] : p["properties"].items()) {
      bool req = required.is_array() && std::find(required.begin(), required.end(), key) != required.end();
      props.emplace_back(key, req);
      values.push_back(value_expr(schema));
    }
  }
  size_t n = props.size();
  auto ref = [&](char which, size_t i) { return i == n ? std::string() : " " + c + "_" + which + std::to_string(i); };
  // Built from the last property back (each rule refers to the next); written out in property order.
  std::string rules;
  for (size_t i = n; i-- > 0;) {
    std::string item = lit(props[i].first + "=") + " " + values[i];
    std::string a = ref('a', i + 1), b = ref('b', i + 1), id = std::to_string(i), rule;
    if (props[i].second) {
      rule = c + "_a" + id + " ::= sep " + item + a + "\n" + c + "_b" + id + " ::= " + item + a + "\n";
    } else {
      rule = c + "_a" + id + " ::= (sep " + item + ")?" + a + "\n" + c + "_b" + id +
             " ::= " + (b.empty() ? "(" + item + a + ")?" : "(" + item + a + ") |" + b) + "\n";
    }
    rules = rule + rules;
  }
  rules = c + " ::= " + lit(f.name + "(") + ref('b', 0) + " " + lit(")") + "\n" + rules;
  return rules;
}

}  // namespace

std::string pythonic(const Json& tools, const ToolChoice& choice) {
  if (choice.mode == ToolChoice::Mode::kNone || choice.mode == ToolChoice::Mode::kAuto) return "";
  auto fns = functions(tools, choice);
  if (fns.empty()) return "";
  std::string ebnf = choice.parallel && choice.mode == ToolChoice::Mode::kRequired
                         ? "root ::= \"[\" call (sep call)* \"]\"\n"
                         : "root ::= \"[\" call \"]\"\n";
  ebnf += "call ::= ";
  for (size_t k = 0; k < fns.size(); ++k) ebnf += (k ? " | c" : "c") + std::to_string(k);
  ebnf += "\n";
  for (size_t k = 0; k < fns.size(); ++k) ebnf += call_rules(fns[k], k);
  ebnf += kCommon;
  return wrap(Json{{"type", "grammar"}, {"grammar", ebnf}});
}

}  // namespace tinfer::toolcall::stag
