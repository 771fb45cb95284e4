#include "text/tool_calls/json_scan.h"

namespace tinfer::toolcall {
namespace {
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
}  // namespace

JsonScanner::Status JsonScanner::after_value() {
  if (stack_.empty()) {
    state_ = State::kDone;
    return Status::kDone;
  }
  state_ = State::kCommaOrEnd;
  return Status::kMore;
}

JsonScanner::Status JsonScanner::value_start(char c) {
  switch (c) {
    case '{':
      stack_ += '{';
      state_ = State::kKeyOrEnd;
      return Status::kMore;
    case '[':
      stack_ += '[';
      state_ = State::kValueOrEnd;
      return Status::kMore;
    case '"':
      key_ = false;
      state_ = State::kString;
      return Status::kMore;
    case 't':
      literal_ = "rue";
      state_ = State::kLiteral;
      return Status::kMore;
    case 'f':
      literal_ = "alse";
      state_ = State::kLiteral;
      return Status::kMore;
    case 'n':
      literal_ = "ull";
      state_ = State::kLiteral;
      return Status::kMore;
    default:
      break;
  }
  if (c == '-' || is_digit(c)) {
    num_ = c == '-' ? Num::kMinus : c == '0' ? Num::kZero : Num::kInt;
    state_ = State::kNumber;
    return Status::kMore;
  }
  return fail();
}

// One byte of a number, or the byte that ends it (then scanned as what follows the number).
JsonScanner::Status JsonScanner::number(char c) {
  bool d = is_digit(c);
  switch (num_) {
    case Num::kMinus:
      if (d) {
        num_ = c == '0' ? Num::kZero : Num::kInt;
        return Status::kMore;
      }
      return fail();
    case Num::kZero:
      if (d) return fail();
      break;
    case Num::kInt:
      if (d) return Status::kMore;
      break;
    case Num::kDot:
      if (d) {
        num_ = Num::kFrac;
        return Status::kMore;
      }
      return fail();
    case Num::kFrac:
      if (d) return Status::kMore;
      break;
    case Num::kExp:
      if (c == '+' || c == '-') {
        num_ = Num::kExpSign;
        return Status::kMore;
      }
      if (d) {
        num_ = Num::kExpDigits;
        return Status::kMore;
      }
      return fail();
    case Num::kExpSign:
      if (d) {
        num_ = Num::kExpDigits;
        return Status::kMore;
      }
      return fail();
    case Num::kExpDigits:
      if (d) return Status::kMore;
      return after_number(c);
  }
  if (c == '.' && (num_ == Num::kZero || num_ == Num::kInt)) {
    num_ = Num::kDot;
    return Status::kMore;
  }
  if ((c == 'e' || c == 'E') && (num_ == Num::kZero || num_ == Num::kInt || num_ == Num::kFrac)) {
    num_ = Num::kExp;
    return Status::kMore;
  }
  return after_number(c);
}

JsonScanner::Status JsonScanner::after_number(char c) {
  number_ended_ = true;
  if (stack_.empty()) return fail();  // a bare top-level number never ends: the readers scan objects
  state_ = State::kCommaOrEnd;
  return structural(c);
}

// Bytes outside strings, numbers and literals.
JsonScanner::Status JsonScanner::structural(char c) {
  if (is_space(c)) return Status::kMore;
  switch (state_) {
    case State::kValue:
      return value_start(c);
    case State::kValueOrEnd:
      if (c == ']') {
        stack_.pop_back();
        return after_value();
      }
      return value_start(c);
    case State::kKeyOrEnd:
      if (c == '}') {
        stack_.pop_back();
        return after_value();
      }
      [[fallthrough]];
    case State::kKey:
      if (c != '"') return fail();
      key_ = true;
      state_ = State::kString;
      return Status::kMore;
    case State::kColon:
      if (c != ':') return fail();
      state_ = State::kValue;
      return Status::kMore;
    case State::kCommaOrEnd: {
      char open = stack_.back();
      if (c == ',') {
        state_ = open == '{' ? State::kKey : State::kValue;
        return Status::kMore;
      }
      if ((c == '}' && open == '{') || (c == ']' && open == '[')) {
        stack_.pop_back();
        return after_value();
      }
      return fail();
    }
    default:
      return fail();
  }
}

// One byte >= 0x80 inside a string.
JsonScanner::Status JsonScanner::utf8(unsigned char u) {
  if (utf8_left_ > 0) {
    if (u < utf8_lo_ || u > utf8_hi_) return fail();
    --utf8_left_;
    utf8_lo_ = 0x80, utf8_hi_ = 0xBF;
    return Status::kMore;
  }
  if (u >= 0xC2 && u <= 0xDF) {
    utf8_left_ = 1;
  } else if (u >= 0xE0 && u <= 0xEF) {
    utf8_left_ = 2;
    if (u == 0xE0) utf8_lo_ = 0xA0;
    if (u == 0xED) utf8_hi_ = 0x9F;
  } else if (u >= 0xF0 && u <= 0xF4) {
    utf8_left_ = 3;
    if (u == 0xF0) utf8_lo_ = 0x90;
    if (u == 0xF4) utf8_hi_ = 0x8F;
  } else {
    return fail();
  }
  return Status::kMore;
}

JsonScanner::Status JsonScanner::feed(char c) {
  number_ended_ = false;
  auto u = static_cast<unsigned char>(c);
  switch (state_) {
    case State::kDone:
    case State::kError:
      return fail();
    case State::kString:
      if (u >= 0x80 || utf8_left_ > 0) return utf8(u);
      if (c == '"') {
        if (key_) {
          state_ = State::kColon;
          return Status::kMore;
        }
        return after_value();
      }
      if (c == '\\')
        state_ = State::kEscape;
      else if (u < 0x20)
        return fail();
      return Status::kMore;
    case State::kEscape:
      if (c == 'u') {
        hex_left_ = 4;
        state_ = State::kHex;
        return Status::kMore;
      }
      if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't') {
        state_ = State::kString;
        return Status::kMore;
      }
      return fail();
    case State::kHex:
      if (!is_hex(c)) return fail();
      if (--hex_left_ == 0) state_ = State::kString;
      return Status::kMore;
    case State::kLiteral:
      if (c != *literal_) return fail();
      if (*++literal_ == '\0') return after_value();
      return Status::kMore;
    case State::kNumber:
      return number(c);
    default:
      return structural(c);
  }
}

}  // namespace tinfer::toolcall
