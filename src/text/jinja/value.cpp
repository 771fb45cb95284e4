// Value semantics copied from Python (behaviour, not code): truthiness, equality, str() and repr().
#include "text/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "tinfer/error.h"
#include "text/jinja/strings.h"
#include "text/tokenizer/unicode_util.h"

namespace tinfer::jinja {

Str Str::literal(std::string text) {
  Str r(std::move(text));
  if (!r.s.empty()) r.lit.push_back({0, r.s.size()});
  return r;
}

Str Str::derived(std::string text, bool literal) { return literal ? Str::literal(std::move(text)) : Str(std::move(text)); }

void Str::append(const Str& o) {
  const size_t base = s.size();
  s += o.s;
  for (const TextRange& r : o.lit) {
    if (!lit.empty() && lit.back().end == base + r.begin) lit.back().end = base + r.end;  // merge touching
    else lit.push_back({base + r.begin, base + r.end});
  }
}

Str Str::substr(size_t begin, size_t end) const {
  Str r(s.substr(begin, end - begin));
  for (const TextRange& x : lit) {
    const size_t b = std::max(x.begin, begin), e = std::min(x.end, end);
    if (b < e) r.lit.push_back({b - begin, e - begin});
  }
  return r;
}

namespace {

uint16_t nested_depth(const List& items) {
  int d = 0;
  for (const Value& x : items) d = std::max<int>(d, x.depth);
  if (d + 1 > kMaxValueDepth) fail("chat template: value nested too deeply");
  return uint16_t(d + 1);
}

uint16_t nested_depth(const Dict& dict) {
  int d = 0;
  for (const auto& [k, x] : dict.items) d = std::max<int>(d, x.depth);
  if (d + 1 > kMaxValueDepth) fail("chat template: value nested too deeply");
  return uint16_t(d + 1);
}

}  // namespace

Value Value::make_list(List items) {
  Value v = make(Kind::list);
  v.depth = nested_depth(items);
  v.list = std::make_shared<const List>(std::move(items));
  return v;
}

Value Value::make_dict(Dict d) {
  Value v = make(Kind::dict);
  v.depth = nested_depth(d);
  v.dict = std::make_shared<Dict>(std::move(d));
  return v;
}

Value Value::make_namespace(Dict d) {
  Value v = make(Kind::ns);
  v.depth = nested_depth(d);
  v.dict = std::make_shared<Dict>(std::move(d));
  return v;
}

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : items)
    if (equals(k, key)) return &v;
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k.is_string() && k.s() == key) return &v;
  return nullptr;
}

void Dict::set(Value key, Value v) {
  for (auto& [k, old] : items)
    if (equals(k, key)) {
      old = std::move(v);
      return;
    }
  items.emplace_back(std::move(key), std::move(v));
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Value::Kind::undefined:
    case Value::Kind::none: return false;
    case Value::Kind::boolean: return v.b;
    case Value::Kind::integer: return v.i != 0;
    case Value::Kind::floating: return v.f != 0;
    case Value::Kind::string: return !v.s().empty();
    case Value::Kind::list: return !v.list->empty();
    case Value::Kind::dict: return !v.dict->items.empty();
    case Value::Kind::ns:
    case Value::Kind::function: return true;
  }
  return false;
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind == Value::Kind::floating || b.kind == Value::Kind::floating) return a.as_double() == b.as_double();
    return (a.kind == Value::Kind::boolean ? a.b : a.i) == (b.kind == Value::Kind::boolean ? b.b : b.i);
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::undefined:
    case Value::Kind::none: return true;
    case Value::Kind::string: return a.s() == b.s();
    case Value::Kind::list:
      if (a.list->size() != b.list->size()) return false;
      for (size_t i = 0; i < a.list->size(); ++i)
        if (!equals((*a.list)[i], (*b.list)[i])) return false;
      return true;
    case Value::Kind::dict:
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [k, v] : a.dict->items) {
        const Value* o = b.dict->find(k);
        if (!o || !equals(v, *o)) return false;
      }
      return true;
    default: return a.dict == b.dict && a.fn == b.fn;  // identity
  }
}

const char* type_name(const Value& v) {
  switch (v.kind) {
    case Value::Kind::undefined: return "Undefined";
    case Value::Kind::none: return "NoneType";
    case Value::Kind::boolean: return "bool";
    case Value::Kind::integer: return "int";
    case Value::Kind::floating: return v.is_big_integer() ? "int" : "float";
    case Value::Kind::string: return "str";
    case Value::Kind::list: return "list";
    case Value::Kind::dict: return "dict";
    case Value::Kind::ns: return "Namespace";
    case Value::Kind::function: return "function";
  }
  return "?";
}

std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: fixed for 1e-4 <= |d| < 1e16, else d.ddde+XX.
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e = sci.find('e');
  const int exp = std::stoi(sci.substr(e + 1));
  std::string mant = sci.substr(0, e);
  const bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out;
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out = "0." + std::string(size_t(-exp - 1), '0') + digits;
    } else if (size_t(exp + 1) >= digits.size()) {
      out = digits + std::string(size_t(exp + 1) - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, size_t(exp + 1)) + "." + digits.substr(size_t(exp + 1));
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += eb;
  }
  return neg ? "-" + out : out;
}

namespace {

// Python's str.__repr__: single quotes unless the text has ' and no ", escapes for what
// str.isprintable() rejects (controls, separators other than ' ', format characters...).
std::string repr_string(const std::string& s) {
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  std::string out(1, q);
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    const uint32_t c = unicode::next_cp(s, i);
    char b[16];
    if (c == '\\') out += "\\\\";
    else if (c == uint32_t(q)) out += std::string("\\") + char(q);
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x80 ? (c < 0x20 || c == 0x7f) : !py_printable(c)) {
      std::snprintf(b, sizeof b, c < 0x100 ? "\\x%02x" : c < 0x10000 ? "\\u%04x" : "\\U%08x", c);
      out += b;
    } else {
      out.append(s, at, i - at);
    }
  }
  return out + q;
}

void repr_into(const Value& v, std::string& out, bool& lit, int depth) {
  check(depth < 64, "template error: value nested too deeply to print");
  switch (v.kind) {
    case Value::Kind::string:
      lit = lit || v.str->any_literal();
      out += repr_string(v.s());
      return;
    case Value::Kind::list:
      out += v.tuple ? '(' : '[';
      for (size_t i = 0; i < v.list->size(); ++i) {
        if (i) out += ", ";
        repr_into((*v.list)[i], out, lit, depth + 1);
        if (out.size() > (size_t(1) << 26)) fail("template error: value too large to print");
      }
      if (v.tuple && v.list->size() == 1) out += ',';
      out += v.tuple ? ')' : ']';
      return;
    case Value::Kind::dict:
    case Value::Kind::ns:
      if (v.kind == Value::Kind::ns) out += "<Namespace ";
      out += '{';
      for (size_t i = 0; i < v.dict->items.size(); ++i) {
        if (i) out += ", ";
        repr_into(v.dict->items[i].first, out, lit, depth + 1);
        out += ": ";
        repr_into(v.dict->items[i].second, out, lit, depth + 1);
      }
      out += '}';
      if (v.kind == Value::Kind::ns) out += '>';
      return;
    case Value::Kind::undefined: return;  // str(Undefined) is ""
    default: out += to_str(v).s;
  }
}

}  // namespace

Str to_str(const Value& v) {
  switch (v.kind) {
    case Value::Kind::undefined: return Str();
    case Value::Kind::none: return Str("None");
    case Value::Kind::boolean: return Str(v.b ? "True" : "False");
    case Value::Kind::integer: return Str(std::to_string(v.i));
    case Value::Kind::floating: return Str(v.is_big_integer() ? v.hint : py_float_repr(v.f));
    case Value::Kind::string: return *v.str;
    case Value::Kind::function: return Str("<function>");
    default: return repr(v);
  }
}

Str repr(const Value& v) {
  std::string out;
  bool lit = false;
  if (v.is_undefined()) return Str("Undefined");  // only inside containers in practice
  repr_into(v, out, lit, 0);
  return Str::derived(std::move(out), lit);
}

std::vector<size_t> cp_offsets(std::string_view s) {
  std::vector<size_t> at;
  at.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size();) {
    at.push_back(i);
    unicode::next_cp(s, i);
  }
  at.push_back(s.size());
  return at;
}

}  // namespace tinfer::jinja
