// Python str semantics the filters and methods share: whitespace, strip, split, case mapping.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "text/jinja/value.h"

namespace tinfer::jinja {

bool is_py_space(uint32_t cp);  // str.isspace() for one code point
// str.strip/lstrip/rstrip: chars == nullptr strips whitespace, else any code point of *chars.
Str py_strip(const Str& s, const std::string* chars, bool left, bool right);
// str.split(sep, maxsplit): sep == nullptr splits on whitespace runs.
std::vector<Str> py_split(const Str& s, const std::string* sep, int64_t maxsplit);
// Unicode case mapping as Python's str.lower/upper (full mappings, ICU's root locale).
std::string py_lower(std::string s);
std::string py_upper(std::string s);
bool py_printable(uint32_t cp);  // str.isprintable() for one code point (repr escapes the others)
std::string py_title(const std::string& s);     // str.title()
std::string jinja_title(const std::string& s);  // the |title filter
std::string py_capitalize(const std::string& s);
std::string py_replace(const std::string& s, const std::string& from, const std::string& to, int64_t count);

}  // namespace tinfer::jinja
