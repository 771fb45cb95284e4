// Values of the Jinja interpreter: Python's None/bool/int/float/str/list/dict plus Jinja's Undefined,
// namespace() objects and callables (macros, globals). Strings carry provenance: the byte spans that
// came from the caller's data (message contents, tool definitions), so the rendered prompt still
// knows which bytes must be tokenized as plain text and never as special tokens.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/tokenizer/tokenizer.h"

namespace tinfer::jinja {

// A string and the byte ranges of it that are literal (caller data): sorted, disjoint, never adjacent.
struct Str {
  std::string s;
  std::vector<TextRange> lit;

  Str() = default;
  Str(std::string text) : s(std::move(text)) {}  // NOLINT: template text converts implicitly
  static Str literal(std::string text);          // all of it caller data
  bool any_literal() const { return !lit.empty(); }
  void append(const Str& o);
  void append(std::string_view template_text) { s.append(template_text); }
  Str substr(size_t begin, size_t end) const;  // bytes [begin, end), ranges clipped
  // A string computed from `src` by a transformation that does not keep positions (upper, replace,
  // tojson...): literal as a whole when any of the sources was.
  static Str derived(std::string text, bool literal);
};

constexpr int kMaxValueDepth = 200;

struct Value;
using List = std::vector<Value>;
struct Dict;
struct Interp;

struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};
using Function = std::function<Value(Interp&, Args&)>;

struct Value {
  enum class Kind : uint8_t { undefined, none, boolean, integer, floating, string, list, dict, ns, function };
  Kind kind = Kind::undefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::shared_ptr<const Str> str;
  std::shared_ptr<const List> list;
  std::shared_ptr<Dict> dict;  // dicts and namespaces (the only mutable objects: `set ns.x = ...`)
  std::shared_ptr<const Function> fn;
  // undefined: what was missing, for error messages. floating: the digits of a JSON integer beyond int64
  // (big_integer), printed instead of the float.
  std::string hint;
  bool tuple = false;  // a list that Python would print as a tuple: (a, b)
  uint16_t depth = 0;  // nesting of lists/dicts; bounded (kMaxValueDepth) so recursion over values is too

  static Value undefined(std::string what = {}) {
    Value v;
    v.hint = std::move(what);
    return v;
  }
  static Value none() { return make(Kind::none); }
  static Value boolean(bool x) {
    Value v = make(Kind::boolean);
    v.b = x;
    return v;
  }
  static Value integer(int64_t x) {
    Value v = make(Kind::integer);
    v.i = x;
    return v;
  }
  static Value floating(double x) {
    Value v = make(Kind::floating);
    v.f = x;
    return v;
  }
  // A JSON integer in (2^63, 2^64) -- a tool schema's "maximum": 18446744073709551615 -- which Python keeps an int:
  // str, repr, tojson and `is integer` see the integer as written; arithmetic sees the nearest float.
  static Value big_integer(uint64_t x) {
    Value v = floating(static_cast<double>(x));
    v.hint = std::to_string(x);
    return v;
  }
  static Value string(Str s) {
    Value v = make(Kind::string);
    v.str = std::make_shared<const Str>(std::move(s));
    return v;
  }
  static Value text(std::string s) { return string(Str(std::move(s))); }
  static Value make_list(List items);
  static Value make_tuple(List items) {
    Value v = make_list(std::move(items));
    v.tuple = true;
    return v;
  }
  static Value make_dict(Dict d);
  static Value make_namespace(Dict d);
  static Value function(Function f) {
    Value v = make(Kind::function);
    v.fn = std::make_shared<const Function>(std::move(f));
    return v;
  }

  bool is_undefined() const { return kind == Kind::undefined; }
  bool is_none() const { return kind == Kind::none; }
  bool is_string() const { return kind == Kind::string; }
  bool is_list() const { return kind == Kind::list; }
  bool is_dict() const { return kind == Kind::dict || kind == Kind::ns; }
  bool is_big_integer() const { return kind == Kind::floating && !hint.empty(); }
  bool is_number() const { return kind == Kind::integer || kind == Kind::floating || kind == Kind::boolean; }
  const std::string& s() const { return str->s; }
  double as_double() const { return kind == Kind::floating ? f : kind == Kind::boolean ? (b ? 1 : 0) : double(i); }

 private:
  static Value make(Kind k) {
    Value v;
    v.kind = k;
    return v;
  }
};

// Insertion-ordered, like Python dicts (tojson and items() keep the caller's order).
struct Dict {
  std::vector<std::pair<Value, Value>> items;
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value v);
};

// Python semantics.
bool truthy(const Value& v);
bool equals(const Value& a, const Value& b);
const char* type_name(const Value& v);  // Python's type names, for error messages
std::string py_float_repr(double d);    // float.__repr__ (shortest round-trip)
// str(v) with provenance: strings as they are, containers as Python repr (literal as a whole when
// any string inside was), undefined as "".
Str to_str(const Value& v);
// repr(v) as Python prints it inside a list or dict.
Str repr(const Value& v);

// Code points: Python indexes and measures strings by code point, not byte.
std::vector<size_t> cp_offsets(std::string_view s);  // byte offset of every code point, plus s.size()

}  // namespace tinfer::jinja
