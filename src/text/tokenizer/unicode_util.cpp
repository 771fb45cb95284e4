// UTF-8 helpers, ICU-backed character classes and the GPT-2 byte <-> unicode table.
#include "text/tokenizer/unicode_util.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <array>

#include "tinfer/error.h"

namespace tinfer::unicode {

size_t utf8_len(std::string_view s, size_t i) {
  size_t k = 0;
  uint32_t c = static_cast<uint8_t>(s[i]);
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) k = 2;
  else if ((c & 0xF0) == 0xE0) k = 3;
  else if ((c & 0xF8) == 0xF0) k = 4;
  else return 1;
  if (i + k > s.size()) return 1;
  for (size_t j = 1; j < k; ++j)
    if ((static_cast<uint8_t>(s[i + j]) & 0xC0) != 0x80) return 1;
  return k;
}

uint32_t next_cp(std::string_view s, size_t& i) {
  const uint8_t c = static_cast<uint8_t>(s[i]);
  const size_t n = utf8_len(s, i);
  if (n == 1) {
    ++i;
    return c < 0x80 ? c : 0xFFFD;
  }
  uint32_t cp = c & (0x7F >> n);
  for (size_t j = 1; j < n; ++j) cp = (cp << 6) | (static_cast<uint8_t>(s[i + j]) & 0x3F);
  // Reject overlong forms, surrogates and values past U+10FFFF.
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++i;
    return 0xFFFD;
  }
  i += n;
  return cp;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

size_t incomplete_tail(std::string_view s) {
  // Walk back over at most 3 continuation bytes to the last lead byte.
  const size_t n = s.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const uint8_t c = static_cast<uint8_t>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation: keep looking for the lead
    size_t need = 0;
    if ((c & 0xE0) == 0xC0) need = 2;
    else if ((c & 0xF0) == 0xE0) need = 3;
    else if ((c & 0xF8) == 0xF0) need = 4;
    return need > back ? back : 0;
  }
  return 0;
}

bool normalize(std::string_view s, const std::string& form, std::string& out) {
  bool ascii = true;
  for (char c : s) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return false;
  for (size_t i = 0; i < s.size();) {  // invalid UTF-8 stays bytes (the tokenizers' byte fallback takes it)
    const size_t n = utf8_len(s, i);
    size_t j = i;
    if (next_cp(s, j) == 0xFFFD && !(n == 3 && s.compare(i, 3, "\xEF\xBF\xBD") == 0)) return false;
    i = j;
  }
  UErrorCode err = U_ZERO_ERROR;
  const icu::Normalizer2* nz = form == "nfc"    ? icu::Normalizer2::getNFCInstance(err)
                               : form == "nfkc" ? icu::Normalizer2::getNFKCInstance(err)
                               : form == "nfd"  ? icu::Normalizer2::getNFDInstance(err)
                               : form == "nfkd" ? icu::Normalizer2::getNFKDInstance(err)
                                                : nullptr;
  check(nz != nullptr, "unknown Unicode normalizer '" + form + "' (nfc, nfkc, nfd, nfkd)");
  check(U_SUCCESS(err), "ICU: cannot load the " + form + " normalizer");
  const icu::UnicodeString u = icu::UnicodeString::fromUTF8(icu::StringPiece(s.data(), int32_t(s.size())));
  const icu::UnicodeString n = nz->normalize(u, err);
  check(U_SUCCESS(err), "ICU: " + form + " normalization failed");
  out.clear();
  n.toUTF8String(out);
  return true;
}

bool is_letter(uint32_t cp) { return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & U_GC_L_MASK) != 0; }
bool is_number(uint32_t cp) { return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & U_GC_N_MASK) != 0; }
bool is_whitespace(uint32_t cp) { return u_isUWhiteSpace(static_cast<UChar32>(cp)); }

namespace {
struct ByteMap {
  std::array<std::string, 256> to_utf8;
  std::array<int16_t, 512> from_cp;  // code points used are all < 0x144
  ByteMap() {
    from_cp.fill(-1);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const uint32_t cp = printable ? static_cast<uint32_t>(b) : static_cast<uint32_t>(256 + extra++);
      append_utf8(to_utf8[b], cp);
      from_cp[cp] = static_cast<int16_t>(b);
    }
  }
};
const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}
}  // namespace

const std::string& byte_to_utf8(uint8_t b) { return byte_map().to_utf8[b]; }
int utf8_to_byte(uint32_t cp) { return cp < 512 ? byte_map().from_cp[cp] : -1; }

}  // namespace tinfer::unicode
