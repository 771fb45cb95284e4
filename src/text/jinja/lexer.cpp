// The whitespace rules follow Jinja2's documented behaviour: `{%-`/`-%}` strip all whitespace on that
// side; trim_blocks removes the first newline after a block or comment tag; lstrip_blocks removes
// spaces and tabs between the start of a line and a block or comment tag (not an output tag); `+`
// disables either for one tag. Newlines are normalised to \n first, as Jinja does.
#include "text/jinja/lexer.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "tinfer/error.h"
#include "text/tokenizer/unicode_util.h"

namespace tinfer::jinja {

void syntax_error(int line, const std::string& what) { fail("chat template line " + std::to_string(line) + ": " + what); }

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

int count_lines(std::string_view s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// Python's unicode-escape decoding of a string literal body (unknown escapes keep their backslash).
std::string unescape(std::string_view body, int line) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      out += body[i];
      continue;
    }
    const char c = body[++i];
    auto hex = [&](int n) {
      uint32_t cp = 0;
      for (int k = 1; k <= n; ++k) {
        if (i + k >= body.size() || !std::isxdigit(static_cast<unsigned char>(body[i + k])))
          syntax_error(line, "truncated escape in string literal");
        const char h = body[i + k];
        cp = cp * 16 + uint32_t(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
      }
      i += n;
      if (cp > 0x10FFFF) syntax_error(line, "invalid code point in string literal");
      unicode::append_utf8(out, cp);
    };
    switch (c) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case '\n': break;  // line continuation
      case 'x': hex(2); break;
      case 'u': hex(4); break;
      case 'U': hex(8); break;
      default:
        if (c >= '0' && c <= '7') {
          uint32_t cp = 0;
          int n = 0;
          for (; n < 3 && i < body.size() && body[i] >= '0' && body[i] <= '7'; ++n, ++i) cp = cp * 8 + uint32_t(body[i] - '0');
          --i;
          unicode::append_utf8(out, cp);
        } else {
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string src) : s_(std::move(src)) {}

  std::vector<Chunk> run() {
    size_t text_start = 0;
    while (true) {
      size_t p = text_start;
      while ((p = s_.find('{', p)) != std::string::npos && !(p + 1 < s_.size() && (s_[p + 1] == '{' || s_[p + 1] == '%' || s_[p + 1] == '#')))
        ++p;
      if (p == std::string::npos) {
        emit_text(s_.substr(text_start), line_at(text_start));
        return std::move(out_);
      }
      const char kind = s_[p + 1];
      const char sign = p + 2 < s_.size() && (s_[p + 2] == '-' || s_[p + 2] == '+') ? s_[p + 2] : 0;
      std::string text = s_.substr(text_start, p - text_start);
      if (sign == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (sign != '+' && kind != '{') {  // lstrip_blocks
        const size_t l = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        const bool line_start = l > 0 || text_start == 0 || s_[text_start - 1] == '\n';
        bool blank = true;
        for (size_t k = l; k < text.size(); ++k) blank = blank && is_space(text[k]);
        if (line_start && blank) text.resize(l);
      }
      emit_text(std::move(text), line_at(text_start));
      const int line = line_at(p);
      size_t q = p + 2 + (sign ? 1 : 0);
      char close_sign = 0;
      if (kind == '#') {
        const size_t e = s_.find("#}", q);
        if (e == std::string::npos) syntax_error(line, "unterminated comment");
        if (e > q && s_[e - 1] == '-') close_sign = '-';
        q = e + 2;
      } else {
        Chunk c;
        c.kind = kind == '{' ? Chunk::Kind::output : Chunk::Kind::statement;
        c.line = line;
        q = tokenize(q, kind == '{' ? "}}" : "%}", c.tokens, close_sign);
        if (c.kind == Chunk::Kind::statement && c.tokens.size() == 2 && c.tokens[0].kind == Token::Kind::name &&
            c.tokens[0].text == "raw") {
          q = raw_block(q, close_sign, line);
          close_sign = raw_close_sign_;
        } else {
          out_.push_back(std::move(c));
        }
      }
      if (close_sign == '-') {
        while (q < s_.size() && is_space(s_[q])) ++q;
      } else if (close_sign != '+' && kind != '{' && q < s_.size() && s_[q] == '\n') {  // trim_blocks
        ++q;
      }
      text_start = q;
    }
  }

 private:
  int line_at(size_t pos) {
    // Lines are counted incrementally: positions only move forward.
    line_ += count_lines(std::string_view(s_).substr(line_pos_, pos - line_pos_));
    line_pos_ = pos;
    return line_;
  }

  void emit_text(std::string text, int line) {
    if (text.empty()) return;
    Chunk c;
    c.kind = Chunk::Kind::text;
    c.line = line;
    c.text = std::move(text);
    out_.push_back(std::move(c));
  }

  // {% raw %}...{% endraw %}: the body is text, verbatim.
  size_t raw_block(size_t q, char open_close_sign, int line) {
    if (open_close_sign == '-') {
      while (q < s_.size() && is_space(s_[q])) ++q;
    } else if (open_close_sign != '+' && q < s_.size() && s_[q] == '\n') {
      ++q;
    }
    for (size_t p = s_.find("{%", q); p != std::string::npos; p = s_.find("{%", p + 2)) {
      size_t k = p + 2;
      const char sign = k < s_.size() && (s_[k] == '-' || s_[k] == '+') ? s_[k] : 0;
      if (sign) ++k;
      while (k < s_.size() && is_space(s_[k])) ++k;
      if (s_.compare(k, 6, "endraw") != 0) continue;
      k += 6;
      while (k < s_.size() && is_space(s_[k])) ++k;
      raw_close_sign_ = k < s_.size() && (s_[k] == '-' || s_[k] == '+') ? s_[k] : 0;
      if (raw_close_sign_) ++k;
      if (s_.compare(k, 2, "%}") != 0) continue;
      std::string body = s_.substr(q, p - q);
      if (sign == '-') {
        while (!body.empty() && is_space(body.back())) body.pop_back();
      }
      emit_text(std::move(body), line_at(q));
      return k + 2;
    }
    syntax_error(line, "unterminated {% raw %} block (missing {% endraw %})");
  }

  // Expression tokens from `q` up to the closing delimiter (outside brackets); returns the position after it.
  size_t tokenize(size_t q, const char* close, std::vector<Token>& toks, char& close_sign) {
    int depth = 0;
    int line = line_at(q);
    while (true) {
      while (q < s_.size() && is_space(s_[q])) {
        line += s_[q] == '\n';
        ++q;
      }
      if (q >= s_.size()) syntax_error(line, std::string("unterminated tag (missing '") + close + "')");
      if (depth == 0) {
        if (s_.compare(q, 2, close) == 0) {
          close_sign = 0;
          break;
        }
        if ((s_[q] == '-' || (s_[q] == '+' && close[0] == '%')) && s_.compare(q + 1, 2, close) == 0) {
          close_sign = s_[q];
          ++q;
          break;
        }
      }
      Token t;
      t.line = line;
      const char c = s_[q];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t e = q;
        while (e < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[e])) || s_[e] == '_')) ++e;
        t.kind = Token::Kind::name;
        t.text = s_.substr(q, e - q);
        q = e;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        q = number(q, t);
      } else if (c == '\'' || c == '"') {
        size_t e = q + 1;
        while (e < s_.size() && s_[e] != c) e += s_[e] == '\\' ? 2 : 1;
        if (e >= s_.size()) syntax_error(line, "unterminated string literal");
        t.kind = Token::Kind::string;
        t.text = unescape(std::string_view(s_).substr(q + 1, e - q - 1), line);
        line += count_lines(std::string_view(s_).substr(q, e - q));
        q = e + 1;
      } else {
        static const char* const kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "*", "/", "%", "~", "<", ">",
                                           "=",  "(",  ")",  "[",  "]",  "{",  "}", ",", ".", ":", "|"};
        const char* op = nullptr;
        for (const char* o : kOps)
          if (s_.compare(q, std::char_traits<char>::length(o), o) == 0) {
            op = o;
            break;
          }
        if (!op) syntax_error(line, std::string("unexpected character '") + c + "' in tag");
        t.kind = Token::Kind::op;
        t.text = op;
        q += t.text.size();
        if (c == '(' || c == '[' || c == '{') ++depth;
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
      }
      toks.push_back(std::move(t));
    }
    Token end;
    end.line = line;
    toks.push_back(end);
    return q + 2;
  }

  // Integers and floats, with Python's `_` digit separators.
  size_t number(size_t q, Token& t) {
    auto digits = [&](size_t& e, std::string& out) {
      while (e < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[e])) ||
                               (s_[e] == '_' && e + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[e + 1]))))) {
        if (s_[e] != '_') out += s_[e];
        ++e;
      }
    };
    size_t e = q;
    std::string num;
    digits(e, num);
    bool is_float = false;
    if (e + 1 < s_.size() && s_[e] == '.' && std::isdigit(static_cast<unsigned char>(s_[e + 1]))) {
      num += '.';
      ++e;
      digits(e, num);
      is_float = true;
    }
    if (e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
      size_t k = e + 1;
      if (k < s_.size() && (s_[k] == '+' || s_[k] == '-')) ++k;
      if (k < s_.size() && std::isdigit(static_cast<unsigned char>(s_[k]))) {
        num += 'e';
        num += s_.substr(e + 1, k - e - 1);
        e = k;
        digits(e, num);
        is_float = true;
      }
    }
    if (is_float) {
      t.kind = Token::Kind::floating;
      t.f = std::strtod(num.c_str(), nullptr);
    } else {
      t.kind = Token::Kind::integer;
      errno = 0;
      t.i = std::strtoll(num.c_str(), nullptr, 10);
      if (errno == ERANGE) syntax_error(t.line, "integer literal out of range: " + num);
    }
    t.text = num;
    return e;
  }

  std::string s_;
  std::vector<Chunk> out_;
  int line_ = 1;
  size_t line_pos_ = 0;
  char raw_close_sign_ = 0;
};

}  // namespace

std::vector<Chunk> lex(std::string_view source) {
  std::string s;
  s.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      s += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      s += source[i];
    }
  }
  if (!s.empty() && s.back() == '\n') s.pop_back();  // keep_trailing_newline=False
  return Lexer(std::move(s)).run();
}

}  // namespace tinfer::jinja
