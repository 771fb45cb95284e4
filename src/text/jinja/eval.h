// The tree-walking evaluator. Every step, output byte, list item and macro call is counted against
// `Limits`, so any template (including hostile ones: huge ranges, doubling strings, recursion) ends
// with output or an error, never a hang or a crash.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/jinja/ast.h"

namespace tinfer::jinja {

struct Limits {
  size_t max_output = size_t(16) << 20;  // bytes of any string, the output included
  size_t max_items = size_t(1) << 20;    // elements of any list (range(), list * n, ...)
  uint64_t max_steps = 20'000'000;       // statements + expressions evaluated
  int max_call_depth = 16;               // nested macro calls
};

// strftime_now(fmt): the local time formatted; injectable so tests are deterministic.
using Clock = std::function<std::string(const std::string& format)>;

struct Interp {
  Interp(const Limits& limits, Clock clock);

  Str render(const Body& body, std::unordered_map<std::string, Value> globals);

  // Used by the builtins.
  const Limits& limits;
  Clock clock;
  int line = 0;  // of the expression being evaluated, for error messages
  [[noreturn]] void error(const std::string& what) const;
  void check_size(size_t bytes) const;  // a string about to be built
  void check_items(size_t n) const;     // a list about to be built
  Value call(const Value& fn, Args& args);
  Value undefined_error(const Value& v) const;  // throws "'x' is undefined"

 private:
  enum class Flow { normal, break_, continue_ };
  Flow exec(const Body& body);
  Flow exec(const Stmt& s);
  Flow exec_for(const Stmt& s);
  void exec_set(const Stmt& s);
  Value eval(const Expr& e);
  Value eval_call(const Expr& e);
  Value binary(const Expr& e);
  Value arith(const std::string& op, const Value& a, const Value& b);
  bool compare(const std::string& op, const Value& a, const Value& b);
  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value v);
  void tick();
  void emit(const Str& s);
  Value make_macro(const Stmt& s);

  std::vector<std::unordered_map<std::string, Value>> scopes_;
  Str out_;
  uint64_t steps_ = 0;
  int call_depth_ = 0;
};

// Builtins (builtins.cpp): filters, tests, methods of str/dict/list, and the global functions.
Value apply_filter(Interp& in, const std::string& name, const Value& v, Args& args);
bool apply_test(Interp& in, const std::string& name, const Value& v, Args& args);
// Argument k of a builtin's call, given positionally (k counts from the first after the filtered value or the
// method's object) or by `name`; nullptr when absent.
const Value* call_arg(const Args& a, size_t k, const char* name);

// The builtins' name tables (filters, tests, str methods): one row per name, sorted by name so that a lookup is a
// binary search; each table states static_assert(sorted_by_name(table)).
template <class Fn>
struct NamedFn {
  std::string_view name;
  Fn fn;
};
template <class Fn, size_t N>
constexpr bool sorted_by_name(const NamedFn<Fn> (&t)[N]) {
  for (size_t k = 1; k < N; ++k)
    if (!(t[k - 1].name < t[k].name)) return false;
  return true;
}
template <class Fn, size_t N>
Fn find_named(const NamedFn<Fn> (&t)[N], std::string_view name) {  // nullptr when absent
  const auto* e = std::lower_bound(t, t + N, name, [](const NamedFn<Fn>& x, std::string_view n) { return x.name < n; });
  return e != t + N && e->name == name ? e->fn : nullptr;
}

// obj.name(args): true and `out` set when obj has such a method.
bool call_method(Interp& in, const Value& obj, const std::string& name, Args& args, Value& out);
void add_globals(std::unordered_map<std::string, Value>& g);
// Python slicing obj[start:stop:step] of a list or string (null Value pointers: absent parts).
Value slice(Interp& in, const Value& obj, const Value* start, const Value* stop, const Value* step);

std::vector<Value> iterate_value(Interp& in, const Value& v);  // list items, dict keys, characters
int compare_values(Interp& in, const Value& a, const Value& b);  // Python ordering: -1, 0, 1

// JSON (json.cpp): json.dumps as transformers' tojson calls it, and JSON text -> values.
Str to_json(Interp& in, const Value& v, int indent, bool sort_keys, const std::string& item_sep,
            const std::string& key_sep, bool ensure_ascii);
Value from_json(const std::string& text, bool literal);

}  // namespace tinfer::jinja
