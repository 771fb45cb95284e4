// Recursive descent with Jinja2's precedence (lowest first): `a if c else b`, or, and, not,
// comparisons and `in`, + -, ~, * / // %, **, unary - +, then primaries with their postfixes
// (.attr, [item], [a:b:c], (call)) and filters/tests (| f, is t). Nesting depth is bounded so that
// hostile input cannot exhaust the stack.
#include "text/jinja/parser.h"

#include "text/jinja/lexer.h"

namespace tinfer::jinja {
namespace {

constexpr int kMaxDepth = 64;       // nested blocks, and recursion of the expression parser
constexpr int kMaxExprDepth = 100;  // depth of one expression tree

ExprPtr make(Expr::Kind k, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = k;
  e->line = line;
  return e;
}

// Computes a node's depth from its (already sealed) children; refuses trees deeper than the limit
// before they grow further (even destroying a very deep tree would recurse too far).
ExprPtr seal(ExprPtr e) {
  int d = 0;
  for (const auto& a : e->args)
    if (a) d = std::max(d, a->depth);
  for (const auto& kv : e->kwargs) d = std::max(d, kv.second->depth);
  e->depth = d + 1;
  if (e->depth > kMaxExprDepth) syntax_error(e->line, "expression nested too deeply");
  return e;
}

class Parser {
 public:
  explicit Parser(std::vector<Chunk> chunks, Program& prog) : chunks_(std::move(chunks)), prog_(prog) {}

  Body parse_all() {
    std::string end;
    Body b = parse_body({}, end);
    return b;
  }

 private:
  // Statements until one of `ends` (returned in `end`); at the top level (no ends) until the input ends.
  Body parse_body(const std::vector<std::string>& ends, std::string& end, int open_line = 0,
                  const char* open = nullptr) {
    if (++nesting_ > kMaxDepth) syntax_error(line(), "blocks nested too deeply");
    Body body;
    while (pos_ < chunks_.size()) {
      Chunk& c = chunks_[pos_];
      if (c.kind == Chunk::Kind::text) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::text;
        s->line = c.line;
        s->text = std::move(c.text);
        body.push_back(std::move(s));
        ++pos_;
        continue;
      }
      toks_ = &c.tokens;
      tp_ = 0;
      if (c.kind == Chunk::Kind::output) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::output;
        s->line = c.line;
        s->expr = tuple_or_expr();
        expect_end();
        body.push_back(std::move(s));
        ++pos_;
        continue;
      }
      const Token& kw = cur();
      if (kw.kind != Token::Kind::name) syntax_error(c.line, "expected a tag name after '{%'");
      for (const std::string& e : ends)
        if (kw.text == e) {
          end = e;
          ++tp_;
          --nesting_;
          return body;  // the caller reads the rest of the tag (elif condition, ...)
        }
      ++pos_;
      body.push_back(statement(c.line));
    }
    if (!ends.empty())
      syntax_error(open_line, std::string("'") + open + "' is never closed (expected '" + ends.back() + "')");
    --nesting_;
    return body;
  }

  std::unique_ptr<Stmt> statement(int ln) {
    const std::string kw = next().text;
    auto s = std::make_unique<Stmt>();
    s->line = ln;
    std::string end;
    if (kw == "if") {
      if_stmt(*s, ln);
    } else if (kw == "for") {
      for_stmt(*s, ln);
    } else if (kw == "set") {
      set_stmt(*s, ln);
    } else if (kw == "macro") {
      macro_stmt(*s, ln);
    } else if (kw == "break" || kw == "continue") {
      s->kind = kw == "break" ? Stmt::Kind::break_ : Stmt::Kind::continue_;
      if (loops_ == 0) syntax_error(ln, "'" + kw + "' outside a for loop");
      expect_end();
    } else if (kw == "generation") {  // Hugging Face's assistant-mask tag: renders its body
      s->kind = Stmt::Kind::scope;
      expect_end();
      s->body = parse_body({"endgeneration"}, end, ln, "generation");
      expect_end();
      ++pos_;
    } else if (kw == "call" || kw == "filter" || kw == "with" || kw == "include" || kw == "import" || kw == "from" ||
               kw == "extends" || kw == "block" || kw == "do" || kw == "autoescape" || kw == "trans") {
      syntax_error(ln, "unsupported tag '" + kw + "'");
    } else if (kw.rfind("end", 0) == 0 || kw == "elif" || kw == "else") {
      syntax_error(ln, "unexpected '" + kw + "'");
    } else {
      syntax_error(ln, "unknown tag '" + kw + "'");
    }
    return s;
  }

  // {% if %} ... {% elif %} ... {% else %} ... {% endif %}
  void if_stmt(Stmt& s, int ln) {
    std::string end;
    s.kind = Stmt::Kind::if_;
    ExprPtr cond = tuple_or_expr();
    expect_end();
    while (true) {
      Body b = parse_body({"elif", "else", "endif"}, end, ln, "if");
      s.branches.emplace_back(std::move(cond), std::move(b));
      if (end == "elif") {
        cond = tuple_or_expr();
        expect_end();
        ++pos_;
        continue;
      }
      expect_end();
      ++pos_;
      if (end == "else") {
        s.else_body = parse_body({"endif"}, end, ln, "if");
        expect_end();
        ++pos_;
      }
      break;
    }
  }

  // {% for targets in iterable [if filter] %} ... {% else %} ... {% endfor %}
  void for_stmt(Stmt& s, int ln) {
    std::string end;
    s.kind = Stmt::Kind::for_;
    s.targets = targets();
    if (!accept_name("in")) syntax_error(ln, "expected 'in' in for loop");
    s.expr = tuple_or_expr(/*no_cond=*/true);
    if (accept_name("if")) s.filter = expression();
    if (cur().kind == Token::Kind::name && cur().text == "recursive") syntax_error(ln, "unsupported: recursive for loops");
    expect_end();
    s.body = parse_body({"else", "endfor"}, end, ln, "for");
    expect_end();
    ++pos_;
    if (end == "else") {
      s.else_body = parse_body({"endfor"}, end, ln, "for");
      expect_end();
      ++pos_;
    }
  }

  // {% set a = x %}, {% set a, b = x %}, {% set ns.attr = x %}, {% set a %}...{% endset %}
  void set_stmt(Stmt& s, int ln) {
    std::string end;
    s.kind = Stmt::Kind::set;
    const Token& t = next();
    if (t.kind != Token::Kind::name) syntax_error(ln, "expected a name after 'set'");
    if (accept_op(".")) {
      const Token& a = next();
      if (a.kind != Token::Kind::name) syntax_error(ln, "expected an attribute name in 'set'");
      s.attr_of = t.text;
      s.targets = {a.text};
    } else {
      s.targets = {t.text};
      while (accept_op(",")) {
        const Token& n = next();
        if (n.kind != Token::Kind::name) syntax_error(ln, "expected a name in 'set'");
        s.targets.push_back(n.text);
      }
    }
    if (accept_op("=")) {
      s.expr = tuple_or_expr();
      expect_end();
    } else {
      if (cur().kind != Token::Kind::end) syntax_error(ln, "unsupported 'set' form (filters on block set)");
      if (!s.attr_of.empty() || s.targets.size() != 1) syntax_error(ln, "block 'set' takes one plain name");
      s.body = parse_body({"endset"}, end, ln, "set");
      expect_end();
      ++pos_;
    }
  }

  // {% macro name(p, q=default) %} ... {% endmacro %}
  void macro_stmt(Stmt& s, int ln) {
    std::string end;
    s.kind = Stmt::Kind::macro;
    const Token& n = next();
    if (n.kind != Token::Kind::name) syntax_error(ln, "expected a macro name");
    s.text = n.text;
    if (!accept_op("(")) syntax_error(ln, "expected '(' after the macro name");
    while (!accept_op(")")) {
      const Token& p = next();
      if (p.kind != Token::Kind::name) syntax_error(ln, "expected a parameter name in macro '" + s.text + "'");
      ExprPtr def = accept_op("=") ? expression() : nullptr;
      s.params.emplace_back(p.text, std::move(def));
      if (!accept_op(",")) {
        if (!accept_op(")")) syntax_error(ln, "expected ',' or ')' in macro parameters");
        break;
      }
    }
    expect_end();
    s.body = parse_body({"endmacro"}, end, ln, "macro");
    if (cur().kind == Token::Kind::name) ++tp_;  // {% endmacro name %}
    expect_end();
    ++pos_;
  }

  // for/set targets: one name or a comma-separated list (optionally parenthesised).
  std::vector<std::string> targets() {
    std::vector<std::string> out;
    const bool paren = accept_op("(");
    do {
      const Token& t = next();
      if (t.kind != Token::Kind::name) syntax_error(t.line, "expected a loop variable name");
      out.push_back(t.text);
    } while (accept_op(","));
    if (paren && !accept_op(")")) syntax_error(line(), "expected ')'");
    return out;
  }

  // Tokens within the current tag.
  const Token& cur() const { return (*toks_)[tp_]; }
  const Token& peek(size_t k = 1) const { return (*toks_)[std::min(tp_ + k, toks_->size() - 1)]; }
  const Token& next() {
    const Token& t = (*toks_)[tp_];
    if (t.kind != Token::Kind::end) ++tp_;
    return t;
  }
  int line() const { return toks_ ? cur().line : 1; }
  bool is_op(const char* op) const { return cur().kind == Token::Kind::op && cur().text == op; }
  bool is_name(const char* n) const { return cur().kind == Token::Kind::name && cur().text == n; }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    ++tp_;
    return true;
  }
  bool accept_name(const char* n) {
    if (!is_name(n)) return false;
    ++tp_;
    return true;
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) syntax_error(line(), std::string("expected '") + op + "', got " + describe(cur()));
  }
  void expect_end() {
    if (cur().kind != Token::Kind::end) syntax_error(line(), "unexpected " + describe(cur()) + " (expected end of tag)");
  }
  static std::string describe(const Token& t) {
    return t.kind == Token::Kind::end ? std::string("end of tag") : "'" + t.text + "'";
  }

  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p(p) {
      if (++p.depth_ > kMaxDepth) syntax_error(p.line(), "expression nested too deeply");
    }
    ~DepthGuard() { --p.depth_; }
    Parser& p;
  };

  ExprPtr tuple_or_expr(bool no_cond = false) {
    const int ln = line();
    ExprPtr e = no_cond ? or_expr() : expression();
    if (!is_op(",")) return e;
    auto t = make(Expr::Kind::list, ln);
    t->name = "tuple";
    t->args.push_back(std::move(e));
    while (accept_op(",")) {
      if (cur().kind == Token::Kind::end || (cur().kind == Token::Kind::name && cur().text == "if")) break;
      t->args.push_back(no_cond ? or_expr() : expression());
    }
    return seal(std::move(t));
  }

  ExprPtr expression() {
    DepthGuard g(*this);
    ExprPtr e = or_expr();
    while (is_name("if")) {
      const int ln = line();
      ++tp_;
      auto c = make(Expr::Kind::cond, ln);
      c->args.push_back(or_expr());
      c->args.push_back(std::move(e));
      c->args.push_back(accept_name("else") ? expression() : nullptr);
      e = seal(std::move(c));
    }
    return e;
  }

  ExprPtr binary(const char* op, ExprPtr l, ExprPtr r, int ln) {
    auto b = make(Expr::Kind::binary, ln);
    b->name = op;
    b->args.push_back(std::move(l));
    b->args.push_back(std::move(r));
    return seal(std::move(b));
  }

  ExprPtr or_expr() {
    DepthGuard g(*this);
    ExprPtr e = and_expr();
    while (is_name("or")) {
      const int ln = line();
      ++tp_;
      e = binary("or", std::move(e), and_expr(), ln);
    }
    return e;
  }
  ExprPtr and_expr() {
    ExprPtr e = not_expr();
    while (is_name("and")) {
      const int ln = line();
      ++tp_;
      e = binary("and", std::move(e), not_expr(), ln);
    }
    return e;
  }
  ExprPtr not_expr() {
    DepthGuard g(*this);
    if (is_name("not")) {
      const int ln = line();
      ++tp_;
      auto u = make(Expr::Kind::unary, ln);
      u->name = "not";
      u->args.push_back(not_expr());
      return seal(std::move(u));
    }
    return compare();
  }
  ExprPtr compare() {
    const int ln = line();
    ExprPtr first = math1();
    ExprPtr c;
    while (true) {
      std::string op;
      if (cur().kind == Token::Kind::op &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == ">" || cur().text == "<=" ||
           cur().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        ++tp_;
        op = "in";
      } else if (is_name("not") && peek().kind == Token::Kind::name && peek().text == "in") {
        tp_ += 2;
        op = "not in";
      } else {
        break;
      }
      if (!c) {
        c = make(Expr::Kind::compare, ln);
        c->args.push_back(std::move(first));
      }
      c->ops.push_back(op);
      c->args.push_back(math1());
      c = seal(std::move(c));
    }
    return c ? std::move(c) : std::move(first);
  }
  ExprPtr math1() {
    ExprPtr e = concat();
    while (is_op("+") || is_op("-")) {
      const int ln = line();
      const std::string op = next().text;
      e = binary(op == "+" ? "+" : "-", std::move(e), concat(), ln);
    }
    return e;
  }
  ExprPtr concat() {
    ExprPtr e = math2();
    while (is_op("~")) {
      const int ln = line();
      ++tp_;
      e = binary("~", std::move(e), math2(), ln);
    }
    return e;
  }
  ExprPtr math2() {
    ExprPtr e = pow_expr();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const int ln = line();
      const std::string op = next().text;
      auto b = make(Expr::Kind::binary, ln);
      b->name = op;
      b->args.push_back(std::move(e));
      b->args.push_back(pow_expr());
      e = seal(std::move(b));
    }
    return e;
  }
  ExprPtr pow_expr() {
    ExprPtr e = unary(true);
    while (is_op("**")) {
      const int ln = line();
      ++tp_;
      e = binary("**", std::move(e), unary(true), ln);
    }
    return e;
  }
  ExprPtr unary(bool with_filter) {
    DepthGuard g(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const int ln = line();
      auto u = make(Expr::Kind::unary, ln);
      u->name = next().text;
      u->args.push_back(unary(false));
      e = seal(std::move(u));
    } else {
      e = primary();
    }
    e = postfix(std::move(e));
    if (with_filter) e = filters(std::move(e));
    return e;
  }

  ExprPtr primary() {
    DepthGuard g(*this);
    const Token& t = cur();
    const int ln = t.line;
    switch (t.kind) {
      case Token::Kind::name: {
        ++tp_;
        auto c = make(Expr::Kind::constant, ln);
        if (t.text == "true" || t.text == "True") c->value = Value::boolean(true);
        else if (t.text == "false" || t.text == "False") c->value = Value::boolean(false);
        else if (t.text == "none" || t.text == "None") c->value = Value::none();
        else {
          c->kind = Expr::Kind::name;
          c->name = t.text;
        }
        return c;
      }
      case Token::Kind::string: {
        std::string s;
        while (cur().kind == Token::Kind::string) s += next().text;  // adjacent literals concatenate
        prog_.strings.insert(s);
        auto c = make(Expr::Kind::constant, ln);
        c->value = Value::text(std::move(s));
        return c;
      }
      case Token::Kind::integer:
      case Token::Kind::floating: {
        ++tp_;
        auto c = make(Expr::Kind::constant, ln);
        c->value = t.kind == Token::Kind::integer ? Value::integer(t.i) : Value::floating(t.f);
        return c;
      }
      case Token::Kind::op:
        if (t.text == "(" || t.text == "[" || t.text == "{") {
          const char open = t.text[0];
          ++tp_;
          return open == '(' ? parenthesised(ln) : open == '[' ? list_display(ln) : dict_display(ln);
        }
        break;
      case Token::Kind::end: syntax_error(ln, "unexpected end of tag (expected an expression)");
    }
    syntax_error(ln, "unexpected " + describe(t));
  }

  // After '(': (), (x), or the tuple (x, y, ...) with an optional trailing comma.
  ExprPtr parenthesised(int ln) {
    if (accept_op(")")) {
      auto t = make(Expr::Kind::list, ln);  // empty tuple
      t->name = "tuple";
      return t;
    }
    ExprPtr e = expression();
    if (is_op(",")) {
      auto l = make(Expr::Kind::list, ln);
      l->name = "tuple";
      l->args.push_back(std::move(e));
      while (accept_op(",") && !is_op(")")) l->args.push_back(expression());
      e = seal(std::move(l));
    }
    expect_op(")");
    return e;
  }

  // After '[': [x, y, ...] (trailing comma allowed).
  ExprPtr list_display(int ln) {
    auto l = make(Expr::Kind::list, ln);
    while (!accept_op("]")) {
      l->args.push_back(expression());
      if (!accept_op(",")) {
        expect_op("]");
        break;
      }
    }
    return seal(std::move(l));
  }

  // After '{': {k: v, ...} (trailing comma allowed); args hold k0, v0, k1, v1, ...
  ExprPtr dict_display(int ln) {
    auto d = make(Expr::Kind::dict, ln);
    while (!accept_op("}")) {
      d->args.push_back(expression());
      expect_op(":");
      d->args.push_back(expression());
      if (!accept_op(",")) {
        expect_op("}");
        break;
      }
    }
    return seal(std::move(d));
  }

  ExprPtr postfix(ExprPtr e) {
    while (true) {
      const int ln = line();
      if (accept_op(".")) {
        const Token& a = next();
        if (a.kind == Token::Kind::name) {
          prog_.strings.insert(a.text);
          auto g = make(Expr::Kind::attr, ln);
          g->name = a.text;
          g->args.push_back(std::move(e));
          e = seal(std::move(g));
        } else if (a.kind == Token::Kind::integer) {
          auto g = make(Expr::Kind::item, ln);
          g->args.push_back(std::move(e));
          auto k = make(Expr::Kind::constant, ln);
          k->value = Value::integer(a.i);
          g->args.push_back(std::move(k));
          e = seal(std::move(g));
        } else {
          syntax_error(ln, "expected an attribute name after '.'");
        }
      } else if (accept_op("[")) {
        e = subscript(std::move(e), ln);
      } else if (is_op("(")) {
        e = call(std::move(e), ln);
      } else {
        return e;
      }
    }
  }

  ExprPtr subscript(ExprPtr obj, int ln) {
    ExprPtr parts[3];
    int n = 0;
    bool is_slice = false;
    while (true) {
      if (!is_op(":") && !is_op("]")) parts[n] = expression();
      if (accept_op(":")) {
        is_slice = true;
        if (++n > 2) syntax_error(ln, "too many ':' in slice");
        continue;
      }
      expect_op("]");
      break;
    }
    auto g = make(is_slice ? Expr::Kind::slice : Expr::Kind::item, ln);
    g->args.push_back(std::move(obj));
    if (!is_slice) {
      if (!parts[0]) syntax_error(ln, "empty subscript");
      g->args.push_back(std::move(parts[0]));
    } else {
      for (auto& p : parts) g->args.push_back(std::move(p));
    }
    return seal(std::move(g));
  }

  // (args, name=value): appended to `e` (whose args[0] is already set).
  void call_args(Expr& e) {
    expect_op("(");
    while (!accept_op(")")) {
      if (is_op("*") || is_op("**")) syntax_error(line(), "unsupported: *args / **kwargs in calls");
      if (cur().kind == Token::Kind::name && peek().kind == Token::Kind::op && peek().text == "=") {
        const std::string k = next().text;
        ++tp_;
        e.kwargs.emplace_back(k, expression());
      } else {
        if (!e.kwargs.empty()) syntax_error(line(), "positional argument after a keyword argument");
        e.args.push_back(expression());
      }
      if (!accept_op(",")) {
        expect_op(")");
        break;
      }
    }
  }

  ExprPtr call(ExprPtr callee, int ln) {
    auto c = make(Expr::Kind::call, ln);
    c->args.push_back(std::move(callee));
    call_args(*c);
    return seal(std::move(c));
  }

  ExprPtr filters(ExprPtr e) {
    while (true) {
      const int ln = line();
      if (accept_op("|")) {
        const Token& n = next();
        if (n.kind != Token::Kind::name) syntax_error(ln, "expected a filter name after '|'");
        if (!is_known_filter(n.text)) syntax_error(ln, "unsupported filter '" + n.text + "'");
        auto f = make(Expr::Kind::filter, ln);
        f->name = n.text;
        f->args.push_back(std::move(e));
        if (is_op("(")) call_args(*f);
        e = seal(std::move(f));
      } else if (is_name("is")) {
        ++tp_;
        auto t = make(Expr::Kind::test, ln);
        t->negated = accept_name("not");
        const Token& n = next();
        if (n.kind != Token::Kind::name) syntax_error(ln, "expected a test name after 'is'");
        if (!is_known_test(n.text)) syntax_error(ln, "unsupported test '" + n.text + "'");
        t->name = n.text;
        t->args.push_back(std::move(e));
        if (is_op("(")) {
          call_args(*t);
        } else if ((cur().kind == Token::Kind::name || cur().kind == Token::Kind::string ||
                    cur().kind == Token::Kind::integer || cur().kind == Token::Kind::floating || is_op("[") ||
                    is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and") && !is_name("if")) {
          t->args.push_back(postfix(primary()));
        }
        e = seal(std::move(t));
      } else if (is_op("(")) {
        e = call(std::move(e), ln);
      } else {
        return e;
      }
    }
  }

  std::vector<Chunk> chunks_;
  Program& prog_;
  size_t pos_ = 0;
  std::vector<Token>* toks_ = nullptr;
  size_t tp_ = 0;
  int depth_ = 0;
  int nesting_ = 0;
  int loops_ = 1;  // break/continue are checked at run time too; the parser only rejects them at top level
};

}  // namespace

Program parse(std::string_view source) {
  Program p;
  Parser parser(lex(source), p);
  p.body = parser.parse_all();
  return p;
}

}  // namespace tinfer::jinja
