// Python methods the sandbox lets templates call (str, dict; lists have none that do not mutate),
// slicing, and the global functions: range, namespace, dict, raise_exception, strftime_now.
#include <algorithm>
#include <cmath>

#include "text/jinja/eval.h"
#include "text/jinja/strings.h"

namespace tinfer::jinja {
namespace {

std::vector<std::string> prefixes(Interp& in, const Value* v, const char* method) {
  if (v && v->is_string()) return {v->s()};
  if (v && v->is_list()) {
    std::vector<std::string> out;
    for (const Value& x : *v->list) {
      if (!x.is_string()) in.error(std::string(method) + "() takes strings");
      out.push_back(x.s());
    }
    return out;
  }
  in.error(std::string(method) + "() takes a string or a tuple of strings");
}

// ---- str methods: one function per method (or per family sharing a body; `name` tells them apart). ----
using StrMethod = Value (*)(Interp& in, const std::string& name, const Str& s, Args& a);

const Value* first_arg(const Args& a) { return call_arg(a, 0, ""); }

// A str-or-None argument: nullptr for None or absent.
const std::string* opt_str(Interp& in, const std::string& name, const Value* v) {
  if (!v || v->is_none()) return nullptr;
  if (!v->is_string()) in.error(name + "() argument must be a string or None");
  return &v->str->s;
}

// startswith, endswith.
Value m_affix(Interp& in, const std::string& name, const Str& s, Args& a) {
  bool r = false;
  for (const std::string& p : prefixes(in, first_arg(a), name.c_str()))
    r = r || (name == "startswith" ? s.s.compare(0, p.size(), p) == 0 && s.s.size() >= p.size()
                                   : s.s.size() >= p.size() && s.s.compare(s.s.size() - p.size(), p.size(), p) == 0);
  return Value::boolean(r);
}

// strip, lstrip, rstrip.
Value m_strip(Interp& in, const std::string& name, const Str& s, Args& a) {
  return Value::string(py_strip(s, opt_str(in, name, first_arg(a)), name != "rstrip", name != "lstrip"));
}

Value m_split(Interp& in, const std::string& name, const Str& s, Args& a) {
  const Value* sep = call_arg(a, 0, "sep");
  const Value* max = call_arg(a, 1, "maxsplit");
  const std::string* sp = opt_str(in, name, sep);
  if (sp && sp->empty()) in.error("split(): empty separator");
  List l;
  for (Str& part : py_split(s, sp, max && max->kind == Value::Kind::integer ? max->i : -1))
    l.push_back(Value::string(std::move(part)));
  in.check_items(l.size());
  return Value::make_list(std::move(l));
}

// lower, upper, title, capitalize.
Value m_case(Interp&, const std::string& name, const Str& s, Args&) {
  std::string r = name == "lower" ? py_lower(s.s) : name == "upper" ? py_upper(s.s)
                : name == "title" ? py_title(s.s) : py_capitalize(s.s);
  return Value::string(Str::derived(std::move(r), s.any_literal()));
}

Value m_replace(Interp& in, const std::string&, const Str& s, Args& a) {
  const Value* from = call_arg(a, 0, "old");
  const Value* to = call_arg(a, 1, "new");
  const Value* count = call_arg(a, 2, "count");
  if (!from || !to || !from->is_string() || !to->is_string()) in.error("replace() takes two strings");
  if (!from->s().empty() && s.s.size() / from->s().size() * (to->s().size() + 1) > in.limits.max_output)
    in.check_size(in.limits.max_output + 1);
  std::string r = py_replace(s.s, from->s(), to->s(), count && count->kind == Value::Kind::integer ? count->i : -1);
  in.check_size(r.size());
  return Value::string(Str::derived(std::move(r), s.any_literal() || to->str->any_literal()));
}

// find, rfind, count, index: positions in code points.
Value m_find(Interp& in, const std::string& name, const Str& s, Args& a) {
  const std::string* sub = opt_str(in, name, first_arg(a));
  if (!sub) in.error(name + "() takes a string");
  const auto at = cp_offsets(s.s);
  auto cp_index = [&](size_t byte) { return int64_t(std::lower_bound(at.begin(), at.end(), byte) - at.begin()); };
  if (name == "count") {
    int64_t n = 0;
    if (sub->empty()) n = int64_t(at.size());
    else
      for (size_t p = s.s.find(*sub); p != std::string::npos; p = s.s.find(*sub, p + sub->size())) ++n;
    return Value::integer(n);
  }
  const size_t p = name == "rfind" ? s.s.rfind(*sub) : s.s.find(*sub);
  if (p == std::string::npos && name == "index") in.error("substring not found");
  return Value::integer(p == std::string::npos ? -1 : cp_index(p));
}

Value m_join(Interp& in, const std::string&, const Str& s, Args& a) {
  const Value* a0 = first_arg(a);
  Str r;
  bool first = true;
  for (const Value& item : iterate_value(in, a0 ? *a0 : Value())) {
    if (!item.is_string()) in.error("join() takes strings");
    in.check_size(r.s.size() + s.s.size() + item.s().size());
    if (!first) r.append(s);
    r.append(*item.str);
    first = false;
  }
  return Value::string(std::move(r));
}

// isdigit, isalpha, isspace, isalnum (ASCII classes, as the templates use them), islower, isupper.
Value m_is(Interp&, const std::string& name, const Str& s, Args&) {
  bool r = !s.s.empty();
  for (unsigned char c : s.s) {
    if (name == "isdigit") r = r && std::isdigit(c);
    else if (name == "isalpha") r = r && std::isalpha(c);
    else if (name == "isalnum") r = r && std::isalnum(c);
    else if (name == "isspace") r = r && is_py_space(c);
  }
  if (name == "islower") r = py_lower(s.s) == s.s && py_upper(s.s) != s.s;
  if (name == "isupper") r = py_upper(s.s) == s.s && py_lower(s.s) != s.s;
  return Value::boolean(r);
}

Value m_splitlines(Interp&, const std::string&, const Str& s, Args&) {
  List l;
  size_t from = 0;
  for (size_t p; (p = s.s.find('\n', from)) != std::string::npos; from = p + 1) l.push_back(Value::string(s.substr(from, p)));
  if (from < s.s.size()) l.push_back(Value::string(s.substr(from, s.s.size())));
  return Value::make_list(std::move(l));
}

constexpr NamedFn<StrMethod> kStrMethods[] = {
    {"capitalize", m_case},        {"count", m_find},             {"endswith", m_affix},
    {"find", m_find},              {"index", m_find},             {"isalnum", m_is},
    {"isalpha", m_is},             {"isdigit", m_is},             {"islower", m_is},
    {"isspace", m_is},             {"isupper", m_is},             {"join", m_join},
    {"lower", m_case},             {"lstrip", m_strip},           {"replace", m_replace},
    {"rfind", m_find},             {"rstrip", m_strip},           {"split", m_split},
    {"splitlines", m_splitlines},  {"startswith", m_affix},       {"strip", m_strip},
    {"title", m_case},             {"upper", m_case},
};

static_assert(sorted_by_name(kStrMethods), "keep kStrMethods sorted (binary search)");

bool string_method(Interp& in, const Value& obj, const std::string& name, Args& a, Value& out) {
  const StrMethod m = find_named(kStrMethods, name);
  if (!m) return false;
  out = m(in, name, *obj.str, a);
  return true;
}

bool dict_method(Interp& in, const Value& obj, const std::string& name, Args& a, Value& out) {
  if (name == "get") {
    const Value* key = call_arg(a, 0, "key");
    if (!key) in.error("get() needs a key");
    const Value* def = call_arg(a, 1, "default");
    const Value* v = obj.dict->find(*key);
    out = v ? *v : def ? *def : Value::none();
  } else if (name == "items" || name == "keys" || name == "values") {
    List l;
    for (const auto& [k, v] : obj.dict->items)
      l.push_back(name == "items" ? Value::make_tuple({k, v}) : name == "keys" ? k : v);
    out = Value::make_list(std::move(l));
  } else {
    return false;
  }
  return true;
}

}  // namespace

bool call_method(Interp& in, const Value& obj, const std::string& name, Args& a, Value& out) {
  if (obj.is_string()) return string_method(in, obj, name, a, out);
  if (obj.kind == Value::Kind::dict) return dict_method(in, obj, name, a, out);
  if (obj.is_list() && (name == "append" || name == "pop" || name == "insert" || name == "extend" || name == "remove" ||
                        name == "clear" || name == "sort" || name == "reverse"))
    in.error("lists cannot be modified in chat templates (list." + name + ")");
  return false;
}

Value slice(Interp& in, const Value& obj, const Value* start, const Value* stop, const Value* step) {
  auto as_int = [&](const Value* v, int64_t def) {
    if (!v || v->is_none()) return def;
    if (v->kind == Value::Kind::integer) return v->i;
    if (v->kind == Value::Kind::boolean) return int64_t(v->b);
    in.error("slice indices must be integers or None");
  };
  if (!obj.is_list() && !obj.is_string()) {
    if (obj.is_undefined()) in.undefined_error(obj);
    in.error(std::string("'") + type_name(obj) + "' object is not subscriptable with a slice");
  }
  const std::vector<size_t> at = obj.is_string() ? cp_offsets(obj.s()) : std::vector<size_t>();
  const int64_t n = obj.is_string() ? int64_t(at.size()) - 1 : int64_t(obj.list->size());
  const int64_t st = as_int(step, 1);
  if (st == 0) in.error("slice step cannot be zero");
  // CPython's PySlice_AdjustIndices.
  auto adjust = [&](const Value* v, int64_t def) {
    if (!v || v->is_none()) return def;
    int64_t x = as_int(v, 0);
    if (x < 0) {
      x += n;
      if (x < 0) x = st < 0 ? -1 : 0;
    } else if (x >= n) {
      x = st < 0 ? n - 1 : n;
    }
    return x;
  };
  const int64_t b = adjust(start, st < 0 ? n - 1 : 0), e = adjust(stop, st < 0 ? -1 : n);
  if (obj.is_string() && st == 1) return Value::string(obj.str->substr(at[size_t(b)], at[size_t(std::max(b, e))]));
  List l;
  Str s;
  for (int64_t k = b; st > 0 ? k < e : k > e; k += st) {
    if (obj.is_string()) s.append(obj.str->substr(at[size_t(k)], at[size_t(k) + 1]));
    else l.push_back((*obj.list)[size_t(k)]);
  }
  return obj.is_string() ? Value::string(std::move(s)) : Value::make_list(std::move(l));
}

void add_globals(std::unordered_map<std::string, Value>& g) {
  g["range"] = Value::function([](Interp& in, Args& a) {
    if (a.pos.empty() || a.pos.size() > 3) in.error("range() takes 1 to 3 integers");
    int64_t v[3] = {0, 0, 1};
    for (size_t k = 0; k < a.pos.size(); ++k) {
      if (a.pos[k].kind != Value::Kind::integer) in.error("range() takes integers");
      v[a.pos.size() == 1 ? 1 : k] = a.pos[k].i;
    }
    if (v[2] == 0) in.error("range() step must not be zero");
    const double count = std::max(0.0, std::ceil((double(v[1]) - double(v[0])) / double(v[2])));
    in.check_items(count > double(in.limits.max_items) ? in.limits.max_items + 1 : size_t(count));
    List l;
    for (int64_t x = v[0]; v[2] > 0 ? x < v[1] : x > v[1]; x += v[2]) l.push_back(Value::integer(x));
    return Value::make_list(std::move(l));
  });
  auto kwargs_dict = [](Interp& in, Args& a, const char* fn) {
    Dict d;
    if (a.pos.size() > 1) in.error(std::string(fn) + "() takes at most one positional argument");
    if (!a.pos.empty()) {
      if (!a.pos[0].is_dict()) in.error(std::string(fn) + "() takes a mapping");
      d = *a.pos[0].dict;
    }
    for (auto& [k, v] : a.kw) d.set(Value::text(k), v);
    return d;
  };
  g["namespace"] = Value::function([kwargs_dict](Interp& in, Args& a) { return Value::make_namespace(kwargs_dict(in, a, "namespace")); });
  g["dict"] = Value::function([kwargs_dict](Interp& in, Args& a) { return Value::make_dict(kwargs_dict(in, a, "dict")); });
  g["raise_exception"] = Value::function([](Interp& in, Args& a) -> Value {
    in.error("raise_exception: " + (a.pos.empty() ? std::string() : to_str(a.pos[0]).s));
  });
  g["strftime_now"] = Value::function([](Interp& in, Args& a) {
    if (a.pos.size() != 1 || !a.pos[0].is_string()) in.error("strftime_now() takes a format string");
    return Value::text(in.clock(a.pos[0].s()));
  });
}

}  // namespace tinfer::jinja
