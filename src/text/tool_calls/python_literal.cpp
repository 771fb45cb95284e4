#include "text/tool_calls/python_literal.h"

#include <charconv>
#include <cstdint>
#include <nlohmann/json.hpp>

namespace tinfer::toolcall {
namespace {

using Json = nlohmann::ordered_json;

bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

void put_utf8(std::string& s, uint32_t cp) {
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6)), s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12)), s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18)), s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), s += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Recursive descent over one Python expression subset; every method returns false on anything else.
class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}

  bool calls(std::vector<PythonCall>& out) {
    space();
    if (!eat('[')) return false;
    do {
      space();
      PythonCall call;
      Json args = Json::object();
      if (!name(call.name) || !(space(), eat('(')) || !kwargs(args)) return false;
      call.arguments = args.dump(-1, ' ', false, Json::error_handler_t::replace);
      out.push_back(std::move(call));
      space();
    } while (eat(','));
    space();
    if (!eat(']')) return false;
    space();
    return pos_ == s_.size() && !out.empty();
  }

 private:
  bool kwargs(Json& args) {  // after '(' up to and including ')'
    space();
    while (!eat(')')) {
      std::string key;
      Json v;
      if (!ident(key) || !(space(), eat('=')) || !(space(), value(v, 0))) return false;
      args[key] = std::move(v);
      space();
      if (eat(',')) {
        space();
      } else if (peek() != ')') {
        return false;
      }
    }
    return true;
  }

  bool value(Json& v, int depth) {
    if (depth > 64) return false;
    char c = peek();
    if (c == '"' || c == '\'') return string(v);
    if (c == '[' || c == '(') return sequence(v, c == '[' ? ']' : ')', depth);
    if (c == '{') return dict(v, depth);
    if (c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9')) return number(v);
    std::string word;
    if (!ident(word)) return false;
    if (word == "True" || word == "true")
      v = true;
    else if (word == "False" || word == "false")
      v = false;
    else if (word == "None" || word == "null")
      v = nullptr;
    else
      return false;
    return true;
  }

  bool sequence(Json& v, char close, int depth) {
    ++pos_;
    v = Json::array();
    for (space(); !eat(close);) {
      Json item;
      if (!value(item, depth + 1)) return false;
      v.push_back(std::move(item));
      space();
      if (eat(','))
        space();
      else if (peek() != close)
        return false;
    }
    return true;
  }

  bool dict(Json& v, int depth) {
    ++pos_;
    v = Json::object();
    for (space(); !eat('}');) {
      Json key, item;
      if (!value(key, depth + 1) || !(space(), eat(':')) || !(space(), value(item, depth + 1))) return false;
      v[key.is_string() ? key.get<std::string>() : key.dump()] = std::move(item);
      space();
      if (eat(','))
        space();
      else if (peek() != '}')
        return false;
    }
    return true;
  }

  bool number(Json& v) {
    size_t start = pos_;
    if (peek() == '+' || peek() == '-') ++pos_;
    bool is_float = false;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '.' || c == 'e' || c == 'E')
        is_float = true;
      else if ((c == '+' || c == '-') && (s_[pos_ - 1] == 'e' || s_[pos_ - 1] == 'E')) {
      } else if (c < '0' || c > '9')
        break;
      ++pos_;
    }
    std::string text(s_.substr(start, pos_ - start));
    if (!text.empty() && text[0] == '+') text.erase(0, 1);
    const char* b = text.data();
    const char* e = b + text.size();
    if (!is_float) {
      int64_t i = 0;
      if (auto r = std::from_chars(b, e, i); r.ec == std::errc() && r.ptr == e) {
        v = i;
        return true;
      }
    }
    double d = 0;
    auto r = std::from_chars(b, e, d);
    if (r.ec != std::errc() || r.ptr != e) return false;
    v = d;
    return true;
  }

  bool string(Json& v) {
    char q = s_[pos_];
    bool triple = s_.substr(pos_, 3) == std::string(3, q);
    pos_ += triple ? 3 : 1;
    std::string out;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == q && (!triple || s_.substr(pos_, 3) == std::string(3, q))) {
        pos_ += triple ? 3 : 1;
        v = std::move(out);
        return true;
      }
      if (c == '\n' && !triple) return false;
      ++pos_;
      if (c != '\\') {
        out += c;
      } else if (!escape(out)) {
        return false;
      }
    }
    return false;
  }

  bool escape(std::string& out) {  // after the backslash
    if (pos_ >= s_.size()) return false;
    char c = s_[pos_++];
    switch (c) {
      case 'n':
        out += '\n';
        return true;
      case 't':
        out += '\t';
        return true;
      case 'r':
        out += '\r';
        return true;
      case '0':
        out += '\0';
        return true;
      case '\\':
      case '\'':
      case '"':
        out += c;
        return true;
      case '\n':
        return true;
      case 'x':
        return hex(out, 2);
      case 'u':
        return hex(out, 4);
      case 'U':
        return hex(out, 8);
      default:
        out += '\\', out += c;
        return true;
    }
  }

  bool hex(std::string& out, int n) {
    if (pos_ + n > s_.size()) return false;
    uint32_t cp = 0;
    auto r = std::from_chars(s_.data() + pos_, s_.data() + pos_ + n, cp, 16);
    if (r.ptr != s_.data() + pos_ + n || cp > 0x10FFFF) return false;
    pos_ += n;
    put_utf8(out, cp);
    return true;
  }

  bool name(std::string& out) {  // dotted identifier
    if (!ident(out)) return false;
    while (peek() == '.') {
      ++pos_;
      std::string part;
      if (!ident(part)) return false;
      out += '.' + part;
    }
    return true;
  }
  bool ident(std::string& out) {
    if (!ident_start(peek())) return false;
    size_t start = pos_;
    while (pos_ < s_.size() && ident_char(s_[pos_])) ++pos_;
    out = std::string(s_.substr(start, pos_ - start));
    return true;
  }

  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool eat(char c) {
    if (peek() != c || pos_ >= s_.size()) return false;
    ++pos_;
    return true;
  }
  void space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

std::optional<std::vector<PythonCall>> parse_python_calls(std::string_view text) {
  std::vector<PythonCall> out;
  if (!Reader(text).calls(out)) return std::nullopt;
  return out;
}

}  // namespace tinfer::toolcall
