// Filters and tests by name. Results that only select or join parts of their input keep its
// provenance (trim, first, join, list...); results that rewrite text (upper, replace, tojson,
// indent...) are literal as a whole when any of the input was, so caller data never becomes
// template text.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <iterator>
#include <utility>

#include "text/jinja/eval.h"
#include "text/jinja/parser.h"
#include "text/jinja/strings.h"

namespace tinfer::jinja {
namespace {

int64_t int_arg(Interp& in, const Args& a, size_t k, const char* name, int64_t def) {
  const Value* v = call_arg(a, k, name);
  if (!v || v->is_none()) return def;
  if (v->kind == Value::Kind::integer) return v->i;
  if (v->kind == Value::Kind::boolean) return v->b;
  in.error(std::string("argument '") + name + "' must be an integer");
}

bool bool_arg(const Args& a, size_t k, const char* name, bool def) {
  const Value* v = call_arg(a, k, name);
  return v ? truthy(*v) : def;
}

std::string str_arg(Interp& in, const Args& a, size_t k, const char* name, const std::string& def) {
  const Value* v = call_arg(a, k, name);
  if (!v || v->is_undefined()) return def;
  if (!v->is_string()) in.error(std::string("argument '") + name + "' must be a string");
  return v->s();
}

bool any_literal(const Value& v, int depth = 0) {
  if (depth > 64) return true;
  if (v.is_string()) return v.str->any_literal();
  if (v.is_list()) {
    for (const Value& x : *v.list)
      if (any_literal(x, depth + 1)) return true;
  }
  if (v.is_dict()) {
    for (const auto& [k, x] : v.dict->items)
      if (any_literal(k, depth + 1) || any_literal(x, depth + 1)) return true;
  }
  return false;
}

// Jinja's attribute lookup for map/selectattr/sort: "a.b" walks dicts; integers index lists.
Value get_attribute(const Value& v, const std::string& path) {
  Value cur = v;
  size_t from = 0;
  while (true) {
    const size_t dot = path.find('.', from);
    const std::string part = path.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    if (cur.is_dict()) {
      const Value* x = cur.dict->find(part);
      cur = x ? *x : Value::undefined("'dict object' has no attribute '" + part + "'");
    } else if (cur.is_list() && !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
      const size_t k = std::stoul(part);
      cur = k < cur.list->size() ? (*cur.list)[k] : Value::undefined("index out of range");
    } else {
      return Value::undefined("no attribute '" + part + "'");
    }
    if (dot == std::string::npos) return cur;
    from = dot + 1;
  }
}

int64_t length(Interp& in, const Value& v) {
  switch (v.kind) {
    case Value::Kind::undefined: return 0;
    case Value::Kind::string: return int64_t(cp_offsets(v.s()).size() - 1);
    case Value::Kind::list: return int64_t(v.list->size());
    case Value::Kind::dict:
    case Value::Kind::ns: return int64_t(v.dict->items.size());
    default: in.error(std::string("object of type '") + type_name(v) + "' has no len()");
  }
}

// Python int(str): optional sign, digits with single underscores, surrounding whitespace.
bool parse_int(std::string s, int64_t& out) {
  while (!s.empty() && is_py_space(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t b = 0;
  while (b < s.size() && is_py_space(static_cast<unsigned char>(s[b]))) ++b;
  s = s.substr(b);
  std::string digits;
  size_t k = 0;
  if (k < s.size() && (s[k] == '+' || s[k] == '-')) digits += s[k++];
  if (k == s.size()) return false;
  for (; k < s.size(); ++k) {
    if (s[k] == '_' && k > 0 && isdigit(static_cast<unsigned char>(s[k - 1])) && k + 1 < s.size() &&
        isdigit(static_cast<unsigned char>(s[k + 1])))
      continue;
    if (!isdigit(static_cast<unsigned char>(s[k]))) return false;
    digits += s[k];
  }
  errno = 0;
  out = std::strtoll(digits.c_str(), nullptr, 10);
  return errno != ERANGE;
}

bool parse_float(const std::string& s, double& out) {
  std::string t = s;
  while (!t.empty() && is_py_space(static_cast<unsigned char>(t.back()))) t.pop_back();
  size_t b = 0;
  while (b < t.size() && is_py_space(static_cast<unsigned char>(t[b]))) ++b;
  t = t.substr(b);
  if (t.empty()) return false;
  char* end = nullptr;
  out = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size() && t.find_first_of("xXpP") == std::string::npos;
}

// Sort keys: strings compared case-insensitively unless asked (Jinja's default).
Value sort_key(const Value& v, bool case_sensitive) {
  if (v.is_string() && !case_sensitive) return Value::text(py_lower(v.s()));
  return v;
}

std::vector<Value> select_items(Interp& in, const Value& seq, Args& a, bool by_attr, bool reject) {
  size_t k = 0;
  std::string attr;
  if (by_attr) attr = str_arg(in, a, k++, "attribute", "");
  const Value* test = call_arg(a, k, "");
  Args test_args;
  for (size_t j = k + 1; j < a.pos.size(); ++j) test_args.pos.push_back(a.pos[j]);
  std::vector<Value> out;
  for (const Value& item : iterate_value(in, seq)) {
    const Value x = by_attr ? get_attribute(item, attr) : item;
    bool ok;
    if (test) {
      if (!test->is_string()) in.error("the test of select/selectattr must be a test name");
      if (!is_known_test(test->s())) in.error("unsupported test '" + test->s() + "'");
      Args ta = test_args;
      ok = apply_test(in, test->s(), x, ta);
    } else {
      ok = truthy(x);
    }
    if (ok != reject) out.push_back(item);
  }
  return out;
}

Str indent(const Str& s, const std::string& pad, bool first, bool blank) {
  // Jinja: (s + "\n").splitlines(); the lines after the first get the indentation (empty ones only
  // with blank=True). Only "\n" separates lines here (Python's other line boundaries do not).
  std::vector<std::string> lines;
  const std::string t = s.s + "\n";
  size_t from = 0;
  for (size_t p; (p = t.find('\n', from)) != std::string::npos; from = p + 1) lines.push_back(t.substr(from, p - from));
  std::string out = lines[0];
  for (size_t k = 1; k < lines.size(); ++k) out += "\n" + ((blank || !lines[k].empty()) ? pad + lines[k] : lines[k]);
  if (first) out = pad + out;
  return Str::derived(std::move(out), s.any_literal());
}

// Jinja's (markupsafe's) escape: these five characters as entities, everything else unchanged.
std::string html_escape(const std::string& s) {
  static constexpr std::pair<char, const char*> kEntities[] = {
      {'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&#34;"}, {'\'', "&#39;"}};
  std::string out;
  for (char c : s) {
    const auto* e = std::find_if(std::begin(kEntities), std::end(kEntities), [c](const auto& x) { return x.first == c; });
    if (e != std::end(kEntities)) out += e->second;
    else out += c;
  }
  return out;
}


// ---- Filters: one function per filter (or per family sharing a body; `name` tells them apart). ----
// Each takes the filtered value `v` and the call's arguments `a` (positional after `v`, then by name).
using FilterFn = Value (*)(Interp& in, const std::string& name, const Value& v, Args& a);

// Jinja's string filters take str(value); undefined reads as "".
Str str_of(const Value& x) { return x.is_undefined() ? Str() : to_str(x); }

Value f_trim(Interp&, const std::string&, const Value& v, Args& a) {
  const Value* chars = call_arg(a, 0, "chars");
  const std::string c = chars && chars->is_string() ? chars->s() : std::string();
  return Value::string(py_strip(str_of(v), chars && chars->is_string() ? &c : nullptr, true, true));
}

Value f_length(Interp& in, const std::string&, const Value& v, Args&) { return Value::integer(length(in, v)); }

Value f_tojson(Interp& in, const std::string&, const Value& v, Args& a) {
  const Value* ind = call_arg(a, 0, "indent");
  const Value* seps = call_arg(a, 99, "separators");
  std::string item_sep = ind && !ind->is_none() ? "," : ", ", key_sep = ": ";
  if (seps && seps->is_list() && seps->list->size() == 2 && (*seps->list)[0].is_string() && (*seps->list)[1].is_string()) {
    item_sep = (*seps->list)[0].s();
    key_sep = (*seps->list)[1].s();
  }
  const int64_t n = ind && !ind->is_none() ? int_arg(in, a, 0, "indent", 0) : -1;
  if (n > 64) in.error("tojson indent too large");
  return Value::string(to_json(in, v, int(n), bool_arg(a, 99, "sort_keys", false), item_sep, key_sep,
                               bool_arg(a, 99, "ensure_ascii", false)));
}

Value f_string(Interp&, const std::string&, const Value& v, Args&) {
  return v.is_string() ? v : Value::string(v.is_undefined() ? Str() : to_str(v));
}

Value f_safe(Interp&, const std::string&, const Value& v, Args&) { return v; }

Value f_escape(Interp&, const std::string&, const Value& v, Args&) {
  const Str s = str_of(v);
  return Value::string(Str::derived(html_escape(s.s), s.any_literal()));
}

Value f_int(Interp&, const std::string&, const Value& v, Args& a) {
  const Value* def = call_arg(a, 0, "default");
  const Value d = def ? *def : Value::integer(0);
  if (v.kind == Value::Kind::integer || v.is_big_integer()) return v;
  if (v.kind == Value::Kind::boolean) return Value::integer(v.b);
  if (v.kind == Value::Kind::floating) {
    if (!std::isfinite(v.f) || std::fabs(v.f) >= 9.2e18) return d;
    return Value::integer(int64_t(v.f));
  }
  if (v.is_string()) {
    int64_t x;
    if (parse_int(v.s(), x)) return Value::integer(x);
    double f;
    if (parse_float(v.s(), f) && std::isfinite(f) && std::fabs(f) < 9.2e18) return Value::integer(int64_t(f));
  }
  return d;
}

Value f_float(Interp&, const std::string&, const Value& v, Args& a) {
  const Value* def = call_arg(a, 0, "default");
  const Value d = def ? *def : Value::floating(0);
  if (v.is_number()) return Value::floating(v.as_double());
  double f;
  if (v.is_string() && parse_float(v.s(), f)) return Value::floating(f);
  return d;
}

// lower, upper, capitalize, title.
Value f_case(Interp&, const std::string& name, const Value& v, Args&) {
  const Str s = str_of(v);
  std::string r = name == "lower" ? py_lower(s.s) : name == "upper" ? py_upper(s.s)
                : name == "capitalize" ? py_capitalize(s.s) : jinja_title(s.s);
  return Value::string(Str::derived(std::move(r), s.any_literal()));
}

Value f_default(Interp&, const std::string&, const Value& v, Args& a) {
  const Value* def = call_arg(a, 0, "default_value");
  const bool boolean = bool_arg(a, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !truthy(v))) return def ? *def : Value::text("");
  return v;
}

Value f_join(Interp& in, const std::string&, const Value& v, Args& a) {
  const std::string sep = str_arg(in, a, 0, "d", "");
  const Value* attr = call_arg(a, 1, "attribute");
  Str out;
  bool first = true;
  for (const Value& item : iterate_value(in, v)) {
    const Str s = to_str(attr && attr->is_string() ? get_attribute(item, attr->s()) : item);
    in.check_size(out.s.size() + sep.size() + s.s.size());
    if (!first) out.append(Str(sep));
    out.append(s);
    first = false;
  }
  return Value::string(std::move(out));
}

// first, last.
Value f_end(Interp& in, const std::string& name, const Value& v, Args&) {
  const std::vector<Value> items = iterate_value(in, v);
  if (items.empty()) return Value::undefined("no " + name + " item, sequence was empty");
  return name == "first" ? items.front() : items.back();
}

Value f_list(Interp& in, const std::string&, const Value& v, Args&) { return Value::make_list(iterate_value(in, v)); }

Value f_reverse(Interp& in, const std::string&, const Value& v, Args&) {
  std::vector<Value> items = iterate_value(in, v);
  std::reverse(items.begin(), items.end());
  if (!v.is_string()) return Value::make_list(std::move(items));
  Str s;
  for (const Value& c : items) s.append(*c.str);
  return Value::string(std::move(s));
}

Value f_map(Interp& in, const std::string&, const Value& v, Args& a) {
  List out;
  const Value* attr = call_arg(a, 99, "attribute");
  const Value* def = call_arg(a, 99, "default");
  if (attr) {
    if (!attr->is_string()) in.error("map(attribute=...) takes a string");
    for (const Value& item : iterate_value(in, v)) {
      Value x = get_attribute(item, attr->s());
      out.push_back(x.is_undefined() && def ? *def : x);
    }
  } else {
    if (a.pos.empty() || !a.pos[0].is_string()) in.error("map() needs a filter name or attribute=");
    const std::string f = a.pos[0].s();
    if (!is_known_filter(f)) in.error("unsupported filter '" + f + "'");
    for (const Value& item : iterate_value(in, v)) {
      Args fa;
      fa.pos.assign(a.pos.begin() + 1, a.pos.end());
      fa.kw = a.kw;
      out.push_back(apply_filter(in, f, item, fa));
    }
  }
  return Value::make_list(std::move(out));
}

// select, reject, selectattr, rejectattr.
Value f_select(Interp& in, const std::string& name, const Value& v, Args& a) {
  const bool by_attr = name.size() > 4 && name.compare(name.size() - 4, 4, "attr") == 0;
  return Value::make_list(select_items(in, v, a, by_attr, name.compare(0, 6, "reject") == 0));
}

Value f_replace(Interp& in, const std::string&, const Value& v, Args& a) {
  const Str s = str_of(v);
  const std::string from = str_arg(in, a, 0, "old", ""), to = str_arg(in, a, 1, "new", "");
  const int64_t count = int_arg(in, a, 2, "count", -1);
  const Value* nv = call_arg(a, 1, "new");
  const bool lit = s.any_literal() || (nv && any_literal(*nv));
  if (!from.empty() && s.s.size() / from.size() * (to.size() + 1) > in.limits.max_output) in.check_size(in.limits.max_output + 1);
  std::string r = py_replace(s.s, from, to, count);
  in.check_size(r.size());
  return Value::string(Str::derived(std::move(r), lit));
}

Value f_items(Interp& in, const std::string&, const Value& v, Args&) {
  if (v.is_undefined()) return Value::make_list({});
  if (!v.is_dict()) in.error("items() needs a mapping");
  List out;
  for (const auto& [k, x] : v.dict->items) out.push_back(Value::make_tuple({k, x}));
  return Value::make_list(std::move(out));
}

Value f_dictsort(Interp& in, const std::string&, const Value& v, Args& a) {
  if (!v.is_dict()) in.error("dictsort needs a mapping");
  const bool cs = bool_arg(a, 0, "case_sensitive", false);
  const std::string by = str_arg(in, a, 1, "by", "key");
  const bool rev = bool_arg(a, 2, "reverse", false);
  std::vector<std::pair<Value, Value>> items = v.dict->items;
  const size_t pos = by == "value" ? 1 : 0;
  std::stable_sort(items.begin(), items.end(), [&](const auto& x, const auto& y) {
    const Value kx = sort_key(pos ? x.second : x.first, cs), ky = sort_key(pos ? y.second : y.first, cs);
    return rev ? compare_values(in, ky, kx) < 0 : compare_values(in, kx, ky) < 0;
  });
  List out;
  for (auto& [k, x] : items) out.push_back(Value::make_tuple({k, x}));
  return Value::make_list(std::move(out));
}

Value f_sort(Interp& in, const std::string&, const Value& v, Args& a) {
  const bool rev = bool_arg(a, 0, "reverse", false), cs = bool_arg(a, 1, "case_sensitive", false);
  const Value* attr = call_arg(a, 2, "attribute");
  std::vector<Value> items = iterate_value(in, v);
  auto key = [&](const Value& x) { return sort_key(attr && attr->is_string() ? get_attribute(x, attr->s()) : x, cs); };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return rev ? compare_values(in, key(y), key(x)) < 0 : compare_values(in, key(x), key(y)) < 0;
  });
  return Value::make_list(std::move(items));
}

Value f_unique(Interp& in, const std::string&, const Value& v, Args& a) {
  const bool cs = bool_arg(a, 0, "case_sensitive", false);
  const Value* attr = call_arg(a, 1, "attribute");
  List out, seen;
  for (const Value& item : iterate_value(in, v)) {
    const Value k = sort_key(attr && attr->is_string() ? get_attribute(item, attr->s()) : item, cs);
    bool dup = false;
    for (const Value& s : seen) dup = dup || equals(s, k);
    if (dup) continue;
    seen.push_back(k);
    out.push_back(item);
  }
  return Value::make_list(std::move(out));
}

Value f_indent(Interp& in, const std::string&, const Value& v, Args& a) {
  const Value* w = call_arg(a, 0, "width");
  std::string pad = w && w->is_string() ? w->s() : std::string(size_t(std::clamp<int64_t>(int_arg(in, a, 0, "width", 4), 0, 256)), ' ');
  const Str s = str_of(v);
  in.check_size(s.s.size() * (pad.size() + 1) + pad.size());
  return Value::string(indent(s, pad, bool_arg(a, 1, "first", false), bool_arg(a, 2, "blank", false)));
}

// min, max.
Value f_extreme(Interp& in, const std::string& name, const Value& v, Args& a) {
  const bool cs = bool_arg(a, 0, "case_sensitive", false);
  const Value* attr = call_arg(a, 1, "attribute");
  const std::vector<Value> items = iterate_value(in, v);
  if (items.empty()) return Value::undefined("no " + name + " item, sequence was empty");
  auto key = [&](const Value& x) { return sort_key(attr && attr->is_string() ? get_attribute(x, attr->s()) : x, cs); };
  size_t best = 0;
  for (size_t k = 1; k < items.size(); ++k) {
    const int c = compare_values(in, key(items[k]), key(items[best]));
    if (name == "min" ? c < 0 : c > 0) best = k;
  }
  return items[best];
}

Value f_abs(Interp& in, const std::string&, const Value& v, Args&) {
  if (v.kind == Value::Kind::floating) return Value::floating(std::fabs(v.f));
  if (v.kind == Value::Kind::integer && v.i != INT64_MIN) return Value::integer(v.i < 0 ? -v.i : v.i);
  in.error(std::string("bad operand type for abs(): '") + type_name(v) + "'");
}

// ---- Tests: `other` is the test's argument (`x is divisibleby(3)`, `x is eq y`), nullptr if none. ----
using TestFn = bool (*)(Interp& in, const std::string& name, const Value& v, const Value* other);

const Value& need_other(Interp& in, const std::string& name, const Value* other) {
  if (!other) in.error("test '" + name + "' needs an argument");
  return *other;
}

#define TINFER_JINJA_TEST(fn, expr) \
  bool fn(Interp&, const std::string&, const Value& v, const Value*) { return expr; }
TINFER_JINJA_TEST(t_defined, !v.is_undefined())
TINFER_JINJA_TEST(t_undefined, v.is_undefined())
TINFER_JINJA_TEST(t_none, v.is_none())
TINFER_JINJA_TEST(t_string, v.is_string())
TINFER_JINJA_TEST(t_mapping, v.kind == Value::Kind::dict)
TINFER_JINJA_TEST(t_iterable, v.is_string() || v.is_list() || v.kind == Value::Kind::dict || v.is_undefined())
TINFER_JINJA_TEST(t_number, v.is_number())
TINFER_JINJA_TEST(t_integer, v.kind == Value::Kind::integer || v.is_big_integer())
TINFER_JINJA_TEST(t_float, v.kind == Value::Kind::floating && !v.is_big_integer())
TINFER_JINJA_TEST(t_boolean, v.kind == Value::Kind::boolean)
TINFER_JINJA_TEST(t_true, v.kind == Value::Kind::boolean && v.b)
TINFER_JINJA_TEST(t_false, v.kind == Value::Kind::boolean && !v.b)
TINFER_JINJA_TEST(t_callable, v.kind == Value::Kind::function)
TINFER_JINJA_TEST(t_lower, v.is_string() && py_lower(v.s()) == v.s())
TINFER_JINJA_TEST(t_upper, v.is_string() && py_upper(v.s()) == v.s())
#undef TINFER_JINJA_TEST

bool t_eq(Interp& in, const std::string& name, const Value& v, const Value* other) {
  return equals(v, need_other(in, name, other));
}

bool t_ne(Interp& in, const std::string& name, const Value& v, const Value* other) {
  return !equals(v, need_other(in, name, other));
}

bool t_sameas(Interp& in, const std::string& name, const Value& v, const Value* other) {
  const Value& o = need_other(in, name, other);
  if (v.kind != o.kind) return false;
  if (v.is_none() || v.is_undefined()) return true;
  if (v.kind == Value::Kind::boolean) return v.b == o.b;
  return v.str == o.str && v.list == o.list && v.dict == o.dict && v.fn == o.fn && v.is_string() == o.is_string() &&
         (!v.is_number() || equals(v, o));
}

bool t_in(Interp& in, const std::string& name, const Value& v, const Value* other) {
  const Value& o = need_other(in, name, other);
  if (o.is_string()) return v.is_string() && o.s().find(v.s()) != std::string::npos;
  if (o.is_list()) {
    for (const Value& x : *o.list)
      if (equals(v, x)) return true;
    return false;
  }
  if (o.is_dict()) return o.dict->find(v) != nullptr;
  in.error(std::string("argument of type '") + type_name(o) + "' is not iterable");
}

// odd, even, divisibleby.
bool t_parity(Interp& in, const std::string& name, const Value& v, const Value* other) {
  if (v.kind != Value::Kind::integer) in.error("test '" + name + "' needs an integer");
  if (name == "divisibleby") {
    const Value& o = need_other(in, name, other);
    if (o.kind != Value::Kind::integer || o.i == 0) in.error("divisibleby needs a non-zero integer");
    return v.i % o.i == 0;
  }
  return (v.i % 2 != 0) == (name == "odd");
}

// gt, >, lt, <, ge, >=, le, <=.
bool t_order(Interp& in, const std::string& name, const Value& v, const Value* other) {
  const int c = compare_values(in, v, need_other(in, name, other));
  if (name == "gt" || name == ">") return c > 0;
  if (name == "lt" || name == "<") return c < 0;
  if (name == "ge" || name == ">=") return c >= 0;
  return c <= 0;
}

// ---- The name tables: the only list of filter and test names; the parser validates against them. ----
// One row per filter: its name, its function, and (comment) the arguments it takes, positionally or by name.
constexpr NamedFn<FilterFn> kFilters[] = {
    {"abs", f_abs},            // abs(x)
    {"capitalize", f_case},    // s|capitalize
    {"count", f_length},       // the same as length
    {"d", f_default},          // the same as default
    {"default", f_default},    // default(default_value='', boolean=false)
    {"dictsort", f_dictsort},  // dictsort(case_sensitive=false, by='key', reverse=false) -> [(k, v), ...]
    {"e", f_escape},           // the same as escape
    {"escape", f_escape},      // HTML: & < > " '
    {"first", f_end},          // undefined when empty
    {"float", f_float},        // float(default=0.0)
    {"indent", f_indent},      // indent(width=4 or a string, first=false, blank=false)
    {"int", f_int},            // int(default=0): Python's int() of strings, floats truncated
    {"items", f_items},        // [(k, v), ...] of a mapping
    {"join", f_join},          // join(d='', attribute=none)
    {"last", f_end},           // undefined when empty
    {"length", f_length},      // characters, items or keys
    {"list", f_list},          // items, keys or characters
    {"lower", f_case},         // s|lower
    {"map", f_map},            // map('filter', args...) or map(attribute='a.b', default=...)
    {"max", f_extreme},        // max(case_sensitive=false, attribute=none)
    {"min", f_extreme},        // min(case_sensitive=false, attribute=none)
    {"reject", f_select},      // reject('test', args...)
    {"rejectattr", f_select},  // rejectattr('attr', 'test', args...)
    {"replace", f_replace},    // replace(old, new, count=-1)
    {"reverse", f_reverse},    // a list, or a string reversed
    {"safe", f_safe},          // the value unchanged (no autoescape here)
    {"select", f_select},      // select('test', args...); no test: truthy items
    {"selectattr", f_select},  // selectattr('attr', 'test', args...)
    {"sort", f_sort},          // sort(reverse=false, case_sensitive=false, attribute=none), stable
    {"string", f_string},      // str(x)
    {"title", f_case},         // s|title
    {"tojson", f_tojson},      // tojson(indent=none, separators=, sort_keys=false, ensure_ascii=false)
    {"trim", f_trim},          // trim(chars=whitespace)
    {"unique", f_unique},      // unique(case_sensitive=false, attribute=none)
    {"upper", f_case},         // s|upper
};

constexpr NamedFn<TestFn> kTests[] = {
    {"!=", t_ne},           {"<", t_order},          {"<=", t_order},        {"==", t_eq},
    {">", t_order},         {">=", t_order},         {"boolean", t_boolean}, {"callable", t_callable},
    {"defined", t_defined}, {"divisibleby", t_parity}, {"eq", t_eq},         {"equalto", t_eq},
    {"even", t_parity},     {"false", t_false},      {"float", t_float},     {"ge", t_order},
    {"gt", t_order},        {"in", t_in},            {"integer", t_integer}, {"iterable", t_iterable},
    {"le", t_order},        {"lower", t_lower},      {"lt", t_order},        {"mapping", t_mapping},
    {"ne", t_ne},           {"none", t_none},        {"number", t_number},   {"odd", t_parity},
    {"sameas", t_sameas},   {"sequence", t_iterable}, {"string", t_string},  {"true", t_true},
    {"undefined", t_undefined}, {"upper", t_upper},
};

static_assert(sorted_by_name(kFilters) && sorted_by_name(kTests), "keep the name tables sorted (binary search)");

}  // namespace

const Value* call_arg(const Args& a, size_t k, const char* name) {
  if (k < a.pos.size()) return &a.pos[k];
  for (const auto& [n, v] : a.kw)
    if (n == name) return &v;
  return nullptr;
}

Value apply_filter(Interp& in, const std::string& name, const Value& v, Args& a) {
  const FilterFn f = find_named(kFilters, name);
  if (!f) in.error("unsupported filter '" + name + "'");
  return f(in, name, v, a);
}

bool apply_test(Interp& in, const std::string& name, const Value& v, Args& a) {
  const TestFn t = find_named(kTests, name);
  if (!t) in.error("unsupported test '" + name + "'");
  return t(in, name, v, call_arg(a, 0, "value"));
}

bool is_known_filter(std::string_view n) { return find_named(kFilters, n) != nullptr; }

bool is_known_test(std::string_view n) { return find_named(kTests, n) != nullptr; }

}  // namespace tinfer::jinja
