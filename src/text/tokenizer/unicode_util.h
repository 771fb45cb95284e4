// UTF-8 decoding/encoding, Unicode character classes (via ICU) and the GPT-2 byte <-> unicode map
// shared by the tokenizers and pre-tokenizers.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace tinfer::unicode {

// Length in bytes of the (possibly invalid) UTF-8 sequence starting at s[i]: 1..4, never past
// the end and never 0, so loops over arbitrary bytes always advance.
size_t utf8_len(std::string_view s, size_t i);
// Decodes the code point at s[i] (advancing i); invalid or truncated sequences give U+FFFD and
// consume one byte.
uint32_t next_cp(std::string_view s, size_t& i);
void append_utf8(std::string& out, uint32_t cp);
// How many bytes at the end of `s` form an unfinished multi-byte sequence (a lead byte and fewer
// continuation bytes than it announces); 0 when `s` ends on a character boundary.
size_t incomplete_tail(std::string_view s);

// Unicode normal form `form` ("nfc", "nfkc", "nfd", "nfkd") of valid UTF-8 `s` into out; false (out untouched) when
// s is ASCII (every form leaves it as is) or not valid UTF-8. Error for an unknown form.
bool normalize(std::string_view s, const std::string& form, std::string& out);

bool is_letter(uint32_t cp);      // \p{L}
bool is_number(uint32_t cp);      // \p{N}
bool is_whitespace(uint32_t cp);  // \s (Unicode White_Space)

// GPT-2 byte-level mapping: every byte gets a printable code point (printable Latin-1 bytes map
// to themselves, the rest to U+0100..). byte_to_utf8(b) is that code point's UTF-8;
// utf8_to_byte returns -1 for a code point outside the map.
const std::string& byte_to_utf8(uint8_t b);
int utf8_to_byte(uint32_t cp);

}  // namespace tinfer::unicode
