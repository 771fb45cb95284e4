// JSON both ways. Output follows Python's json.dumps as transformers' tojson filter calls it
// (ensure_ascii=False, insertion order, ", "/": " separators, or "," plus newlines with indent), so
// tool definitions print byte-for-byte as in Python. Input: the caller's JSON (tool definitions,
// tool calls) as values whose strings are all literal.
#include <cmath>
#include <nlohmann/json.hpp>

#include "tinfer/error.h"
#include "text/jinja/eval.h"
#include "text/tokenizer/unicode_util.h"

namespace tinfer::jinja {
namespace {

void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    char buf[16];
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c == '\b') out += "\\b";
    else if (c == '\f') out += "\\f";
    else if (c < 0x20) {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else if (c >= 0x80 && ensure_ascii) {
      uint32_t cp = unicode::next_cp(s, i);
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(buf, sizeof buf, "\\ud%03x\\ud%03x", 0x800 | (cp >> 10), 0xC00 | (cp & 0x3FF));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      }
      out += buf;
      continue;
    } else {
      out += char(c);
    }
    ++i;
  }
  out += '"';
}

struct JsonWriter {
  Interp& in;
  int indent;
  bool sort_keys, ensure_ascii;
  std::string item_sep, key_sep;
  std::string out;
  bool lit = false;

  void newline(int level) {
    if (indent < 0) return;
    out += '\n';
    out.append(size_t(indent) * size_t(level), ' ');
  }

  void key(const Value& k) {
    switch (k.kind) {
      case Value::Kind::string: lit = lit || k.str->any_literal(); json_string(out, k.s(), ensure_ascii); return;
      case Value::Kind::integer: out += "\"" + std::to_string(k.i) + "\""; return;
      case Value::Kind::boolean: out += k.b ? "\"true\"" : "\"false\""; return;
      case Value::Kind::none: out += "\"null\""; return;
      case Value::Kind::floating: out += "\"" + (k.is_big_integer() ? k.hint : py_float_repr(k.f)) + "\""; return;
      default: in.error(std::string("keys must be str, int, float, bool or None, not ") + type_name(k));
    }
  }

  void write(const Value& v, int level) {
    if (level > 64) in.error("value nested too deeply for tojson");
    in.check_size(out.size());
    switch (v.kind) {
      case Value::Kind::none: out += "null"; return;
      case Value::Kind::boolean: out += v.b ? "true" : "false"; return;
      case Value::Kind::integer: out += std::to_string(v.i); return;
      case Value::Kind::floating:
        if (v.is_big_integer()) {
          out += v.hint;
          return;
        }
        out += std::isnan(v.f) ? "NaN" : std::isinf(v.f) ? (v.f < 0 ? "-Infinity" : "Infinity") : py_float_repr(v.f);
        return;
      case Value::Kind::string:
        lit = lit || v.str->any_literal();
        json_string(out, v.s(), ensure_ascii);
        return;
      case Value::Kind::list:
        if (v.list->empty()) {
          out += "[]";
          return;
        }
        out += '[';
        for (size_t k = 0; k < v.list->size(); ++k) {
          if (k) out += item_sep;
          newline(level + 1);
          write((*v.list)[k], level + 1);
        }
        newline(level);
        out += ']';
        return;
      case Value::Kind::dict: {
        if (v.dict->items.empty()) {
          out += "{}";
          return;
        }
        std::vector<const std::pair<Value, Value>*> items;
        for (const auto& kv : v.dict->items) items.push_back(&kv);
        if (sort_keys)
          std::stable_sort(items.begin(), items.end(),
                           [&](const auto* x, const auto* y) { return compare_values(in, x->first, y->first) < 0; });
        out += '{';
        for (size_t k = 0; k < items.size(); ++k) {
          if (k) out += item_sep;
          newline(level + 1);
          key(items[k]->first);
          out += key_sep;
          write(items[k]->second, level + 1);
        }
        newline(level);
        out += '}';
        return;
      }
      default: in.error(std::string("Object of type ") + type_name(v) + " is not JSON serializable");
    }
  }
};

Value convert(const nlohmann::ordered_json& j, bool literal, int depth) {
  check(depth < 64, "JSON nested too deeply");
  auto str = [&](const std::string& s) { return Value::string(literal ? Str::literal(s) : Str(s)); };
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      if (j.get<uint64_t>() > uint64_t(INT64_MAX)) return Value::big_integer(j.get<uint64_t>());
      return Value::integer(int64_t(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float: return Value::floating(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return str(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List l;
      for (const auto& x : j) l.push_back(convert(x, literal, depth + 1));
      return Value::make_list(std::move(l));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      for (const auto& [k, x] : j.items()) d.set(str(k), convert(x, literal, depth + 1));
      return Value::make_dict(std::move(d));
    }
    default: return Value::none();
  }
}

}  // namespace

Str to_json(Interp& in, const Value& v, int indent, bool sort_keys, const std::string& item_sep,
            const std::string& key_sep, bool ensure_ascii) {
  JsonWriter w{in, indent, sort_keys, ensure_ascii, item_sep, key_sep, {}, false};
  w.write(v, 0);
  in.check_size(w.out.size());
  return Str::derived(std::move(w.out), w.lit);
}

Value from_json(const std::string& text, bool literal) {
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("invalid JSON for the chat template: ") + e.what());
  }
  return convert(j, literal, 0);
}

}  // namespace tinfer::jinja
