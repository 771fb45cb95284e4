// str methods with Python's results on the inputs chat templates see. Strip and split keep the
// provenance of what remains (they only remove bytes); the others return derived strings.
#include "text/jinja/strings.h"

#include <unicode/uchar.h>
#include <unicode/ustring.h>

#include "text/tokenizer/unicode_util.h"

namespace tinfer::jinja {

bool is_py_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

namespace {

uint32_t cp_at(const std::string& s, size_t at) {
  size_t i = at;
  return unicode::next_cp(s, i);
}

bool in_chars(uint32_t cp, const std::string* chars) {
  if (!chars) return is_py_space(cp);
  for (size_t i = 0; i < chars->size();)
    if (unicode::next_cp(*chars, i) == cp) return true;
  return false;
}

}  // namespace

Str py_strip(const Str& s, const std::string* chars, bool left, bool right) {
  const auto at = cp_offsets(s.s);
  size_t b = 0, e = at.size() - 1;  // code point indices
  if (left)
    while (b < e && in_chars(cp_at(s.s, at[b]), chars)) ++b;
  if (right)
    while (e > b && in_chars(cp_at(s.s, at[e - 1]), chars)) --e;
  return s.substr(at[b], at[e]);
}

std::vector<Str> py_split(const Str& s, const std::string* sep, int64_t maxsplit) {
  std::vector<Str> out;
  if (sep) {
    size_t from = 0;
    for (size_t p; (maxsplit < 0 || int64_t(out.size()) < maxsplit) && (p = s.s.find(*sep, from)) != std::string::npos;) {
      out.push_back(s.substr(from, p));
      from = p + sep->size();
    }
    out.push_back(s.substr(from, s.s.size()));
    return out;
  }
  const auto at = cp_offsets(s.s);
  const size_t n = at.size() - 1;
  size_t k = 0;
  while (true) {
    while (k < n && is_py_space(cp_at(s.s, at[k]))) ++k;
    if (k == n) break;
    if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) {
      // The rest, with trailing whitespace removed only... Python keeps it as is: strip only the left.
      out.push_back(s.substr(at[k], s.s.size()));
      break;
    }
    size_t j = k;
    while (j < n && !is_py_space(cp_at(s.s, at[j]))) ++j;
    out.push_back(s.substr(at[k], at[j]));
    k = j;
  }
  return out;
}

namespace {

// Full Unicode case mapping (ICU's root locale, as Python's str.upper/lower: "ß" -> "SS").
std::string map_case(const std::string& s, bool upper) {
  bool ascii = true;
  for (unsigned char c : s) ascii = ascii && c < 0x80;
  if (ascii) {
    std::string out = s;
    for (char& c : out) {
      if (upper && c >= 'a' && c <= 'z') c = char(c - 'a' + 'A');
      if (!upper && c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    }
    return out;
  }
  std::u16string in;
  for (size_t i = 0; i < s.size();) {
    const uint32_t cp = unicode::next_cp(s, i);
    if (cp >= 0x10000) {
      in += char16_t(0xD800 + ((cp - 0x10000) >> 10));
      in += char16_t(0xDC00 + ((cp - 0x10000) & 0x3FF));
    } else {
      in += char16_t(cp);
    }
  }
  std::u16string out(in.size() * 3 + 4, u'\0');
  UErrorCode err = U_ZERO_ERROR;
  const int32_t n = upper ? u_strToUpper(out.data(), int32_t(out.size()), in.data(), int32_t(in.size()), "", &err)
                          : u_strToLower(out.data(), int32_t(out.size()), in.data(), int32_t(in.size()), "", &err);
  if (U_FAILURE(err)) return s;
  std::string r;
  for (int32_t k = 0; k < n; ++k) {
    uint32_t cp = out[size_t(k)];
    if (cp >= 0xD800 && cp < 0xDC00 && k + 1 < n) cp = 0x10000 + ((cp - 0xD800) << 10) + (out[size_t(++k)] - 0xDC00);
    unicode::append_utf8(r, cp);
  }
  return r;
}

bool is_cased_letter(uint32_t cp) { return u_hasBinaryProperty(UChar32(cp), UCHAR_CASED); }

std::string cp_string(uint32_t cp) {
  std::string r;
  unicode::append_utf8(r, cp);
  return r;
}

}  // namespace

std::string py_lower(std::string s) { return map_case(s, false); }
std::string py_upper(std::string s) { return map_case(s, true); }

// str.title(): a cased letter is title-cased after an uncased character, lower-cased after a cased one.
std::string py_title(const std::string& s) {
  std::string out;
  bool prev_cased = false;
  for (size_t i = 0; i < s.size();) {
    const uint32_t cp = unicode::next_cp(s, i);
    const bool cased = is_cased_letter(cp);
    if (cased && !prev_cased) unicode::append_utf8(out, uint32_t(u_totitle(UChar32(cp))));
    else if (cased) out += map_case(cp_string(cp), false);
    else unicode::append_utf8(out, cp);
    prev_cased = cased;
  }
  return out;
}

// Jinja's |title: each word (split after whitespace, '-', '(', '{', '[', '<') gets its first
// character upper-cased and the rest lower-cased.
std::string jinja_title(const std::string& s) {
  std::string out, word;
  auto flush = [&] {
    if (word.empty()) return;
    size_t i = 0;
    const uint32_t first = unicode::next_cp(word, i);
    out += map_case(cp_string(first), true) + map_case(word.substr(i), false);
    word.clear();
  };
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    const uint32_t cp = unicode::next_cp(s, i);
    const bool sep = cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || is_py_space(cp);
    if (sep) {
      flush();
      out.append(s, at, i - at);
    } else {
      word.append(s, at, i - at);
    }
  }
  flush();
  return out;
}

// str.capitalize(): the first character title-cased, the rest lower-cased.
std::string py_capitalize(const std::string& s) {
  if (s.empty()) return s;
  size_t i = 0;
  const uint32_t first = unicode::next_cp(s, i);
  std::string out;
  unicode::append_utf8(out, uint32_t(u_totitle(UChar32(first))));
  return out + map_case(s.substr(i), false);
}

bool py_printable(uint32_t cp) {
  if (cp == ' ') return true;
  switch (u_charType(UChar32(cp))) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_SURROGATE:
    case U_PRIVATE_USE_CHAR:
    case U_UNASSIGNED:
    case U_LINE_SEPARATOR:
    case U_PARAGRAPH_SEPARATOR:
    case U_SPACE_SEPARATOR: return false;
    default: return true;
  }
}

std::string py_replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` between every code point (and at both ends)
    const auto at = cp_offsets(s);
    int64_t n = 0;
    for (size_t k = 0; k + 1 < at.size(); ++k) {
      if (count < 0 || n < count) {
        out += to;
        ++n;
      }
      out.append(s, at[k], at[k + 1] - at[k]);
    }
    if (count < 0 || n < count) out += to;
    return out;
  }
  size_t from_pos = 0;
  int64_t n = 0;
  for (size_t p; (count < 0 || n < count) && (p = s.find(from, from_pos)) != std::string::npos; ++n) {
    out.append(s, from_pos, p - from_pos);
    out += to;
    from_pos = p + from.size();
  }
  out.append(s, from_pos, std::string::npos);
  return out;
}

}  // namespace tinfer::jinja
