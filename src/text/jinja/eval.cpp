// Statements and expressions, with Jinja2's semantics where templates can tell the difference:
// `set` inside a for loop stays in the loop (hence namespace()), and/or return an operand, Undefined
// is falsy and prints as "" but fails on attribute access, arithmetic follows Python.
#include "text/jinja/eval.h"

#include <cmath>

#include "tinfer/error.h"

namespace tinfer::jinja {

Interp::Interp(const Limits& l, Clock c) : limits(l), clock(std::move(c)) {}

void Interp::error(const std::string& what) const { fail("chat template line " + std::to_string(line) + ": " + what); }

void Interp::check_size(size_t bytes) const {
  if (bytes > limits.max_output) error("string too long (over " + std::to_string(limits.max_output) + " bytes)");
}

void Interp::check_items(size_t n) const {
  if (n > limits.max_items) error("list too long (over " + std::to_string(limits.max_items) + " items)");
}

Value Interp::undefined_error(const Value& v) const {
  error(v.hint.empty() ? std::string("value is undefined") : v.hint);
}

void Interp::tick() {
  if (++steps_ > limits.max_steps) error("template takes too long to render (step limit reached)");
}

void Interp::emit(const Str& s) {
  check_size(out_.s.size() + s.s.size());
  out_.append(s);
}

Str Interp::render(const Body& body, std::unordered_map<std::string, Value> globals) {
  scopes_.clear();
  scopes_.push_back(std::move(globals));
  out_ = Str();
  steps_ = 0;
  exec(body);
  return std::move(out_);
}

Value Interp::lookup(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = it->find(name);
    if (f != it->end()) return f->second;
  }
  return Value::undefined("'" + name + "' is undefined");
}

void Interp::assign(const std::string& name, Value v) { scopes_.back()[name] = std::move(v); }

Interp::Flow Interp::exec(const Body& body) {
  for (const auto& s : body) {
    const Flow f = exec(*s);
    if (f != Flow::normal) return f;
  }
  return Flow::normal;
}

Interp::Flow Interp::exec(const Stmt& s) {
  tick();
  line = s.line;
  switch (s.kind) {
    case Stmt::Kind::text: emit(Str(s.text)); break;
    case Stmt::Kind::output: emit(to_str(eval(*s.expr))); break;
    case Stmt::Kind::if_:
      for (const auto& [cond, body] : s.branches)
        if (truthy(eval(*cond))) return exec(body);
      return exec(s.else_body);
    case Stmt::Kind::for_: return exec_for(s);
    case Stmt::Kind::set: exec_set(s); break;
    case Stmt::Kind::macro: assign(s.text, make_macro(s)); break;
    case Stmt::Kind::break_: return Flow::break_;
    case Stmt::Kind::continue_: return Flow::continue_;
    case Stmt::Kind::scope: return exec(s.body);
    case Stmt::Kind::call_block: error("unsupported tag 'call'");
  }
  return Flow::normal;
}

namespace {

// The items a for loop (or a filter taking an iterable) walks: list items, dict keys, characters.
std::vector<Value> iterate(Interp& in, const Value& v) {
  std::vector<Value> out;
  switch (v.kind) {
    case Value::Kind::undefined: return out;
    case Value::Kind::list: return *v.list;
    case Value::Kind::dict:
      for (const auto& kv : v.dict->items) out.push_back(kv.first);
      return out;
    case Value::Kind::string: {
      const auto at = cp_offsets(v.s());
      for (size_t k = 0; k + 1 < at.size(); ++k) out.push_back(Value::string(v.str->substr(at[k], at[k + 1])));
      return out;
    }
    default: in.error(std::string("'") + type_name(v) + "' object is not iterable");
  }
}

}  // namespace

std::vector<Value> iterate_value(Interp& in, const Value& v) { return iterate(in, v); }

Interp::Flow Interp::exec_for(const Stmt& s) {
  std::vector<Value> items = iterate(*this, eval(*s.expr));
  // Each iteration is a fresh scope over the enclosing one: a `set` in the body is seen by the rest
  // of that iteration only (Jinja2's rule, hence namespace() for anything carried across).
  scopes_.emplace_back();
  auto bind = [&](const Value& item) {
    if (s.targets.size() == 1) {
      assign(s.targets[0], item);
      return;
    }
    if (!item.is_list() || item.list->size() != s.targets.size())
      error("cannot unpack " + std::string(type_name(item)) + " into " + std::to_string(s.targets.size()) + " names");
    for (size_t k = 0; k < s.targets.size(); ++k) assign(s.targets[k], (*item.list)[k]);
  };
  if (s.filter) {  // {% for x in xs if cond %}: filtered before loop.* is computed
    std::vector<Value> kept;
    for (const Value& it : items) {
      scopes_.back().clear();
      bind(it);
      if (truthy(eval(*s.filter))) kept.push_back(it);
    }
    items = std::move(kept);
  }
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t k = 0; k < n; ++k) {
    tick();
    scopes_.back().clear();
    bind(items[size_t(k)]);
    Dict loop;
    loop.set(Value::text("index"), Value::integer(k + 1));
    loop.set(Value::text("index0"), Value::integer(k));
    loop.set(Value::text("revindex"), Value::integer(n - k));
    loop.set(Value::text("revindex0"), Value::integer(n - k - 1));
    loop.set(Value::text("first"), Value::boolean(k == 0));
    loop.set(Value::text("last"), Value::boolean(k == n - 1));
    loop.set(Value::text("length"), Value::integer(n));
    loop.set(Value::text("depth"), Value::integer(1));
    loop.set(Value::text("depth0"), Value::integer(0));
    loop.set(Value::text("previtem"), k > 0 ? items[size_t(k - 1)] : Value::undefined("there is no previous item"));
    loop.set(Value::text("nextitem"), k + 1 < n ? items[size_t(k + 1)] : Value::undefined("there is no next item"));
    loop.set(Value::text("cycle"), Value::function([k](Interp& in, Args& a) {
               if (a.pos.empty()) in.error("loop.cycle() needs at least one argument");
               return a.pos[size_t(k) % a.pos.size()];
             }));
    assign("loop", Value::make_dict(std::move(loop)));
    const Flow f = exec(s.body);
    if (f == Flow::break_) break;
  }
  scopes_.pop_back();
  if (n == 0) exec(s.else_body);
  return Flow::normal;
}

namespace {

bool holds_namespace(const Value& v) {
  if (v.kind == Value::Kind::ns) return true;
  if (v.is_list()) {
    for (const Value& x : *v.list)
      if (holds_namespace(x)) return true;
  }
  if (v.kind == Value::Kind::dict) {
    for (const auto& [k, x] : v.dict->items)
      if (holds_namespace(x)) return true;
  }
  return false;
}

}  // namespace

void Interp::exec_set(const Stmt& s) {
  Value v;
  if (s.expr) {
    v = eval(*s.expr);
  } else {  // block set: the rendered body, provenance kept
    Str saved = std::move(out_);
    out_ = Str();
    exec(s.body);
    v = Value::string(std::move(out_));
    out_ = std::move(saved);
  }
  if (!s.attr_of.empty()) {
    const Value ns = lookup(s.attr_of);
    if (ns.kind != Value::Kind::ns) error("cannot assign attribute on non-namespace object '" + s.attr_of + "'");
    // Namespaces are the only mutable values: keeping them out of each other keeps values acyclic.
    if (holds_namespace(v)) error("a namespace cannot be stored in a namespace attribute");
    ns.dict->set(Value::text(s.targets[0]), std::move(v));
    return;
  }
  if (s.targets.size() == 1) {
    assign(s.targets[0], std::move(v));
    return;
  }
  if (!v.is_list() || v.list->size() != s.targets.size()) error("cannot unpack value in 'set'");
  for (size_t k = 0; k < s.targets.size(); ++k) assign(s.targets[k], (*v.list)[k]);
}

Value Interp::make_macro(const Stmt& s) {
  const Stmt* m = &s;  // the program outlives every render
  return Value::function([m](Interp& in, Args& a) {
    if (a.pos.size() > m->params.size()) in.error("macro '" + m->text + "' takes " + std::to_string(m->params.size()) + " arguments");
    if (++in.call_depth_ > in.limits.max_call_depth) in.error("macro calls nested too deeply");
    std::unordered_map<std::string, Value> frame;
    for (size_t k = 0; k < m->params.size(); ++k) {
      const auto& [name, def] = m->params[k];
      Value v = k < a.pos.size() ? a.pos[k] : Value::undefined("'" + name + "' is undefined");
      bool given = k < a.pos.size();
      for (auto& [kn, kv] : a.kw)
        if (kn == name) {
          v = kv;
          given = true;
        }
      if (!given && def) v = in.eval(*def);
      frame[name] = std::move(v);
    }
    for (auto& [kn, kv] : a.kw) {
      bool known = false;
      for (const auto& p : m->params) known = known || p.first == kn;
      if (!known) in.error("macro '" + m->text + "' has no parameter '" + kn + "'");
    }
    in.scopes_.push_back(std::move(frame));
    Str saved = std::move(in.out_);
    in.out_ = Str();
    in.exec(m->body);
    Value r = Value::string(std::move(in.out_));
    in.out_ = std::move(saved);
    in.scopes_.pop_back();
    --in.call_depth_;
    return r;
  });
}

Value Interp::call(const Value& fn, Args& args) {
  if (fn.kind != Value::Kind::function) {
    if (fn.is_undefined()) undefined_error(fn);
    error(std::string("'") + type_name(fn) + "' object is not callable");
  }
  return (*fn.fn)(*this, args);
}

namespace {

// obj[key]: dict lookup, list / string index (negative from the end; strings by code point); Undefined when absent.
Value subscript(const Interp& in, const Value& obj, const Value& key) {
  if (obj.is_undefined()) in.undefined_error(obj);
  if (obj.is_dict()) {
    if (const Value* v = obj.dict->find(key)) return *v;
  } else if ((obj.is_list() || obj.is_string()) && (key.kind == Value::Kind::integer || key.kind == Value::Kind::boolean)) {
    int64_t k = key.kind == Value::Kind::boolean ? key.b : key.i;
    if (obj.is_list()) {
      const int64_t n = int64_t(obj.list->size());
      if (k < 0) k += n;
      if (k >= 0 && k < n) return (*obj.list)[size_t(k)];
    } else {
      const auto at = cp_offsets(obj.s());
      const int64_t n = int64_t(at.size()) - 1;
      if (k < 0) k += n;
      if (k >= 0 && k < n) return Value::string(obj.str->substr(at[size_t(k)], at[size_t(k) + 1]));
    }
  } else if (key.is_string() && obj.kind != Value::Kind::function) {
    return Value::undefined("'" + std::string(type_name(obj)) + " object' has no attribute '" + key.s() + "'");
  }
  return Value::undefined("'" + std::string(type_name(obj)) + " object' has no item " + repr(key).s);
}

// not x, +x, -x (booleans count as 0 / 1; -INT64_MIN overflows).
Value unary(const Interp& in, const std::string& op, const Value& v) {
  if (op == "not") return Value::boolean(!truthy(v));
  if (v.is_undefined()) in.undefined_error(v);
  if (!v.is_number()) in.error(std::string("bad operand type for unary ") + op + ": '" + type_name(v) + "'");
  if (op == "+") return v.kind == Value::Kind::boolean ? Value::integer(v.b) : v;
  if (v.kind == Value::Kind::floating) return Value::floating(-v.f);
  const int64_t x = v.kind == Value::Kind::boolean ? v.b : v.i;
  if (x == INT64_MIN) in.error("integer overflow");
  return Value::integer(-x);
}

}  // namespace

Value Interp::eval(const Expr& e) {
  tick();
  line = e.line;
  switch (e.kind) {
    case Expr::Kind::constant: return e.value;
    case Expr::Kind::name: return lookup(e.name);
    case Expr::Kind::attr: {
      const Value obj = eval(*e.args[0]);
      if (obj.is_undefined()) undefined_error(obj);
      if (obj.is_dict()) {
        if (const Value* v = obj.dict->find(e.name)) return *v;
        return Value::undefined("'" + std::string(type_name(obj)) + " object' has no attribute '" + e.name + "'");
      }
      return Value::undefined("'" + std::string(type_name(obj)) + " object' has no attribute '" + e.name + "'");
    }
    case Expr::Kind::item: {
      const Value obj = eval(*e.args[0]);
      const Value key = eval(*e.args[1]);
      line = e.line;
      return subscript(*this, obj, key);
    }
    case Expr::Kind::slice: {
      const Value obj = eval(*e.args[0]);
      Value parts[3];
      for (int k = 0; k < 3; ++k)
        if (e.args[size_t(k) + 1]) parts[k] = eval(*e.args[size_t(k) + 1]);
      line = e.line;
      return slice(*this, obj, e.args[1] ? &parts[0] : nullptr, e.args[2] ? &parts[1] : nullptr,
                   e.args[3] ? &parts[2] : nullptr);
    }
    case Expr::Kind::call: return eval_call(e);
    case Expr::Kind::filter:
    case Expr::Kind::test: {
      const Value v = eval(*e.args[0]);
      Args a;
      for (size_t k = 1; k < e.args.size(); ++k) a.pos.push_back(eval(*e.args[k]));
      for (const auto& [n, x] : e.kwargs) a.kw.emplace_back(n, eval(*x));
      line = e.line;
      if (e.kind == Expr::Kind::filter) return apply_filter(*this, e.name, v, a);
      return Value::boolean(apply_test(*this, e.name, v, a) != e.negated);
    }
    case Expr::Kind::unary: {
      const Value v = eval(*e.args[0]);
      line = e.line;
      return unary(*this, e.name, v);
    }
    case Expr::Kind::binary: return binary(e);
    case Expr::Kind::compare: {
      Value left = eval(*e.args[0]);
      for (size_t k = 0; k < e.ops.size(); ++k) {
        Value right = eval(*e.args[k + 1]);
        line = e.line;
        if (!compare(e.ops[k], left, right)) return Value::boolean(false);
        left = std::move(right);
      }
      return Value::boolean(true);
    }
    case Expr::Kind::cond:
      if (truthy(eval(*e.args[0]))) return eval(*e.args[1]);
      return e.args[2] ? eval(*e.args[2]) : Value::undefined("the conditional expression has no else branch");
    case Expr::Kind::list: {
      List l;
      for (const auto& a : e.args) l.push_back(eval(*a));
      return e.name == "tuple" ? Value::make_tuple(std::move(l)) : Value::make_list(std::move(l));
    }
    case Expr::Kind::dict: {
      Dict d;
      for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
        Value key = eval(*e.args[k]);
        d.set(std::move(key), eval(*e.args[k + 1]));
      }
      return Value::make_dict(std::move(d));
    }
  }
  return Value();
}

Value Interp::eval_call(const Expr& e) {
  const Expr& callee = *e.args[0];
  Args a;
  auto eval_args = [&] {
    for (size_t k = 1; k < e.args.size(); ++k) a.pos.push_back(eval(*e.args[k]));
    for (const auto& [n, x] : e.kwargs) a.kw.emplace_back(n, eval(*x));
    line = e.line;
  };
  if (callee.kind == Expr::Kind::attr) {  // obj.method(...): str/dict/list methods first
    const Value obj = eval(*callee.args[0]);
    if (obj.is_undefined()) undefined_error(obj);
    if (!obj.is_dict() || !obj.dict->find(callee.name)) {
      eval_args();
      Value out;
      if (call_method(*this, obj, callee.name, a, out)) return out;
      error(std::string("'") + type_name(obj) + " object' has no method '" + callee.name + "'");
    }
    const Value fn = *obj.dict->find(callee.name);
    eval_args();
    return call(fn, a);
  }
  const Value fn = eval(callee);
  eval_args();
  return call(fn, a);
}

Value Interp::binary(const Expr& e) {
  const std::string& op = e.name;
  Value a = eval(*e.args[0]);
  if (op == "and") return truthy(a) ? eval(*e.args[1]) : a;
  if (op == "or") return truthy(a) ? a : eval(*e.args[1]);
  Value b = eval(*e.args[1]);
  line = e.line;
  if (op == "~") {
    Str s = to_str(a);
    const Str t = to_str(b);
    check_size(s.s.size() + t.s.size());
    s.append(t);
    return Value::string(std::move(s));
  }
  return arith(op, a, b);
}

namespace {

[[noreturn]] void unsupported_operands(const Interp& in, const std::string& op, const Value& a, const Value& b) {
  in.error("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
}

// Python's arithmetic on numbers (booleans count as 0 / 1): integers checked for overflow, floor division and
// modulo rounding toward negative infinity.
Value number_arith(const Interp& in, const std::string& op, const Value& a, const Value& b) {
  const bool fl = a.kind == Value::Kind::floating || b.kind == Value::Kind::floating;
  const int64_t x = a.kind == Value::Kind::boolean ? a.b : a.i, y = b.kind == Value::Kind::boolean ? b.b : b.i;
  const double fx = a.as_double(), fy = b.as_double();
  int64_t r = 0;
  if (op == "+") {
    if (fl) return Value::floating(fx + fy);
    if (__builtin_add_overflow(x, y, &r)) in.error("integer overflow");
    return Value::integer(r);
  }
  if (op == "-") {
    if (fl) return Value::floating(fx - fy);
    if (__builtin_sub_overflow(x, y, &r)) in.error("integer overflow");
    return Value::integer(r);
  }
  if (op == "*") {
    if (fl) return Value::floating(fx * fy);
    if (__builtin_mul_overflow(x, y, &r)) in.error("integer overflow");
    return Value::integer(r);
  }
  if (op == "/") {
    if (fy == 0) in.error("division by zero");
    return Value::floating(fx / fy);
  }
  if (op == "//" || op == "%") {
    if (fl ? fy == 0 : y == 0) in.error(op == "%" ? "modulo by zero" : "integer division or modulo by zero");
    if (fl) {
      const double m = std::fmod(fx, fy);
      const double mod = (m != 0 && ((m < 0) != (fy < 0))) ? m + fy : m;
      return op == "%" ? Value::floating(mod) : Value::floating(std::floor(fx / fy));
    }
    if (x == INT64_MIN && y == -1) in.error("integer overflow");
    int64_t q = x / y, m = x % y;
    if (m != 0 && ((m < 0) != (y < 0))) {
      --q;
      m += y;
    }
    return Value::integer(op == "%" ? m : q);
  }
  if (op == "**") {
    if (fl || y < 0) return Value::floating(std::pow(fx, fy));
    int64_t acc = 1, base = x;  // by squaring: at most 63 steps before overflow is certain
    for (int64_t e = y; e > 0; e >>= 1) {
      if ((e & 1) && __builtin_mul_overflow(acc, base, &acc)) in.error("integer overflow");
      if (e > 1 && __builtin_mul_overflow(base, base, &base)) in.error("integer overflow");
    }
    return Value::integer(acc);
  }
  unsupported_operands(in, op, a, b);
}

// Strings and lists: + concatenates, * by an integer repeats (sizes checked against the limits first).
Value sequence_arith(const Interp& in, const std::string& op, const Value& a, const Value& b) {
  if (op == "+" && a.is_string() && b.is_string()) {
    in.check_size(a.s().size() + b.s().size());
    Str s = *a.str;
    s.append(*b.str);
    return Value::string(std::move(s));
  }
  if (op == "+" && a.is_list() && b.is_list()) {
    in.check_items(a.list->size() + b.list->size());
    List l = *a.list;
    l.insert(l.end(), b.list->begin(), b.list->end());
    return Value::make_list(std::move(l));
  }
  if (op == "*" && (a.kind == Value::Kind::integer || b.kind == Value::Kind::integer) && (a.is_string() || a.is_list() || b.is_string() || b.is_list())) {
    const Value& seq = a.kind == Value::Kind::integer ? b : a;
    const int64_t n = std::max<int64_t>(0, a.kind == Value::Kind::integer ? a.i : b.i);
    if (seq.is_string()) {
      if (n > 0) in.check_size(n > int64_t(in.limits.max_output) ? in.limits.max_output + 1 : seq.s().size() * size_t(n));
      Str s;
      for (int64_t k = 0; k < n; ++k) s.append(*seq.str);
      return Value::string(std::move(s));
    }
    if (seq.is_list()) {
      if (n > 0) in.check_items(n > int64_t(in.limits.max_items) ? in.limits.max_items + 1 : seq.list->size() * size_t(n));
      List l;
      for (int64_t k = 0; k < n; ++k) l.insert(l.end(), seq.list->begin(), seq.list->end());
      return Value::make_list(std::move(l));
    }
  }
  if (op == "%" && a.is_string()) in.error("unsupported: '%' string formatting");
  unsupported_operands(in, op, a, b);
}

}  // namespace

Value Interp::arith(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  return a.is_number() && b.is_number() ? number_arith(*this, op, a, b) : sequence_arith(*this, op, a, b);
}

namespace {

// Python's ordering for < <= > >=: numbers, strings (code point order = UTF-8 byte order), lists.
int order(Interp& in, const std::string& op, const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.as_double() < b.as_double() ? -1 : a.as_double() > b.as_double() ? 1 : 0;
  if (a.is_string() && b.is_string()) return a.s().compare(b.s()) < 0 ? -1 : a.s() == b.s() ? 0 : 1;
  if (a.is_list() && b.is_list()) {
    for (size_t k = 0; k < std::min(a.list->size(), b.list->size()); ++k) {
      if (equals((*a.list)[k], (*b.list)[k])) continue;
      return order(in, op, (*a.list)[k], (*b.list)[k]);
    }
    return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size() ? 1 : 0;
  }
  if (a.is_undefined()) in.undefined_error(a);
  if (b.is_undefined()) in.undefined_error(b);
  in.error("'" + op + "' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

}  // namespace

int compare_values(Interp& in, const Value& a, const Value& b) { return order(in, "<", a, b); }

bool Interp::compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "in" || op == "not in") {
    bool found = false;
    if (b.is_string()) {
      if (!a.is_string()) error(std::string("'in <string>' requires string as left operand, not ") + type_name(a));
      found = b.s().find(a.s()) != std::string::npos;
    } else if (b.is_list()) {
      for (const Value& x : *b.list) found = found || equals(a, x);
    } else if (b.is_dict()) {
      found = b.dict->find(a) != nullptr;
    } else if (!b.is_undefined()) {
      error(std::string("argument of type '") + type_name(b) + "' is not iterable");
    }
    return op == "in" ? found : !found;
  }
  const int c = order(*this, op, a, b);
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

}  // namespace tinfer::jinja
