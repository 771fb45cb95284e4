// Jinja lexer: splits a template into text, {{ output }} and {% statement %} chunks, applying the
// whitespace rules of Hugging Face's environment (trim_blocks, lstrip_blocks, `-`/`+` modifiers,
// one trailing newline dropped), and tokenizes the expressions inside tags.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tinfer::jinja {

struct Token {
  enum class Kind : uint8_t { name, integer, floating, string, op, end };
  Kind kind = Kind::end;
  std::string text;  // name, operator, or the decoded string literal
  int64_t i = 0;
  double f = 0;
  int line = 0;
};

struct Chunk {
  enum class Kind : uint8_t { text, output, statement };
  Kind kind = Kind::text;
  int line = 0;
  std::string text;           // text chunks
  std::vector<Token> tokens;  // tags, terminated by an `end` token
};

// Throws Error("chat template line N: ...") on unterminated tags or strings, bad characters.
std::vector<Chunk> lex(std::string_view source);

[[noreturn]] void syntax_error(int line, const std::string& what);

}  // namespace tinfer::jinja
