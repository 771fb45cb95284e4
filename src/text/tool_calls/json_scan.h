// An incremental JSON syntax checker, fed one byte at a time: it says whether the bytes so far are a prefix of a
// valid JSON value, when that value has ended, and where it stands (depth, what it expects next), which is what the
// call readers need to find the members of a call object and stream one of them while it is still being written.
#pragma once
#include <cstdint>
#include <string>

namespace tinfer::toolcall {

class JsonScanner {
 public:
  enum class State : uint8_t {
    kValue,       // a value must come (top level, after ':' or after ',' in an array)
    kValueOrEnd,  // just after '['
    kKeyOrEnd,    // just after '{'
    kKey,         // after ',' in an object
    kColon,       // after a key
    kCommaOrEnd,  // after a value inside a container
    kString,      // inside a string (key() says whether it is a key)
    kEscape,      // after a backslash in a string
    kHex,         // inside \uXXXX
    kNumber,
    kLiteral,  // inside true / false / null
    kDone,     // the top-level value has ended
    kError,
  };
  enum class Status : uint8_t { kMore, kDone, kError };

  Status feed(char c);
  State state() const { return state_; }
  int depth() const { return static_cast<int>(stack_.size()); }  // open objects and arrays
  bool key() const { return key_; }                              // the string being scanned is an object key
  // The number that was being scanned ended just before the last byte fed (which then was scanned as what follows).
  bool number_ended() const { return number_ended_; }

  static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

 private:
  enum class Num : uint8_t { kMinus, kZero, kInt, kDot, kFrac, kExp, kExpSign, kExpDigits };
  Status value_start(char c);
  Status after_value();
  Status number(char c);
  Status after_number(char c);
  Status structural(char c);
  Status utf8(unsigned char u);
  Status fail() {
    state_ = State::kError;
    return Status::kError;
  }

  std::string stack_;  // '{' and '['
  State state_ = State::kValue;
  bool key_ = false, number_ended_ = false;
  Num num_ = Num::kInt;
  int hex_left_ = 0;
  // UTF-8 inside strings (JSON text is UTF-8): continuation bytes still due, and the range of the next one (the
  // second byte of E0/ED/F0/F4 sequences is narrower: no overlong forms, surrogates or code points past U+10FFFF).
  int utf8_left_ = 0;
  unsigned char utf8_lo_ = 0x80, utf8_hi_ = 0xBF;
  const char* literal_ = nullptr;  // the rest of the literal to match
};

}  // namespace tinfer::toolcall
