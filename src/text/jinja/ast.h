// The parsed template: expressions and statements as plain trees (owned by unique_ptr).
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/value.h"

namespace tinfer::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind : uint8_t {
    constant,   // value
    name,       // name
    attr,       // args[0].name
    item,       // args[0][args[1]]
    slice,      // args[0][args[1]:args[2]:args[3]] (null parts absent)
    call,       // args[0](args[1..], kwargs)
    filter,     // args[0] | name(args[1..], kwargs)
    test,       // args[0] is [not] name(args[1..]); negated
    unary,      // name in {"-", "+", "not"} applied to args[0]
    binary,     // args[0] name args[1]: + - * / // % ** ~ and or
    compare,    // args[0] ops[0] args[1] ops[1] args[2] ... (chained)
    cond,       // args[1] if args[0] else args[2] (args[2] may be null: undefined)
    list,       // [args...], or a tuple (a, b) when name == "tuple"
    dict,       // {args[0]: args[1], args[2]: args[3], ...}
  };
  Kind kind = Kind::constant;
  int line = 0;
  Value value;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  bool negated = false;
  int depth = 1;  // of this subtree: bounded by the parser, so evaluation cannot exhaust the stack
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct Stmt {
  enum class Kind : uint8_t {
    text,       // text
    output,     // {{ expr }}
    if_,        // branches: (cond, body)...; else_body
    for_,       // targets in expr [if filter]: body [else else_body]
    set,        // targets = expr, or attr_of.targets[0] = expr (namespace), or block set (body)
    macro,      // name(params = defaults) body
    break_,
    continue_,
    call_block, // {% call %}: not supported (rejected by the parser)
    scope,      // a body rendered as is ({% generation %})
  };
  Kind kind = Kind::text;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;
  std::vector<std::string> targets;
  std::string attr_of;  // set ns.attr: the namespace variable
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body, else_body;
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro parameters (default may be null)
};

}  // namespace tinfer::jinja
