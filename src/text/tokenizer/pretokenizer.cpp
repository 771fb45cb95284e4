// Hand-written equivalents of the pre-tokenizer regexes:
//   gpt2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   smollm: every \p{N} isolated first (HF Digits(individual_digits)), then gpt2 on the rest
//   llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   qwen2:  the llama3 regex with \p{N} one at a time (Qwen 2, 2.5 and 3)
#include "text/tokenizer/pretokenizer.h"

#include <cstdint>

#include "tinfer/error.h"
#include "text/tokenizer/unicode_util.h"

namespace tinfer {
namespace {

enum Cls : uint8_t { kL, kN, kS, kO };  // letter, number, whitespace, other

// The text as code points with their byte offsets (off has n + 1 entries).
struct Cps {
  std::vector<uint32_t> cp;
  std::vector<uint8_t> cls;
  std::vector<size_t> off;
  explicit Cps(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
      off.push_back(i);
      const uint32_t c = unicode::next_cp(s, i);
      cp.push_back(c);
      cls.push_back(unicode::is_letter(c) ? kL : unicode::is_number(c) ? kN : unicode::is_whitespace(c) ? kS : kO);
    }
    off.push_back(s.size());
  }
  size_t n() const { return cp.size(); }
  size_t run(size_t j, Cls c) const {
    while (j < n() && cls[j] == c) ++j;
    return j;
  }
};

uint32_t lower_ascii(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

// Length (in code points) of a contraction 's 't 're 've 'm 'll 'd at i, or 0.
size_t contraction(const Cps& t, size_t i, bool ignore_case) {
  if (t.cp[i] != '\'' || i + 1 >= t.n()) return 0;
  auto at = [&](size_t k) { return ignore_case ? lower_ascii(t.cp[k]) : t.cp[k]; };
  const uint32_t a = at(i + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 < t.n()) {
    const uint32_t b = at(i + 2);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  }
  return 0;
}

// \s+(?!\S)|\s+ at a whitespace position i: the run, less its last char when a non-space follows
// and the run is longer than one.
size_t whitespace_end(const Cps& t, size_t i) {
  const size_t k = t.run(i, kS);
  return (k < t.n() && k - i > 1) ? k - 1 : k;
}

size_t gpt2_match(const Cps& t, size_t i) {
  if (size_t c = contraction(t, i, false)) return i + c;
  const size_t j = (t.cp[i] == ' ' && i + 1 < t.n()) ? i + 1 : i;  // optional leading space
  if (t.cls[j] == kL) return t.run(j, kL);
  if (t.cls[j] == kN) return t.run(j, kN);
  if (t.cls[j] == kO) return t.run(j, kO);
  return whitespace_end(t, i);
}

bool is_crlf(uint32_t c) { return c == '\r' || c == '\n'; }

template <size_t MaxDigits>
size_t llama3_match(const Cps& t, size_t i) {
  if (size_t c = contraction(t, i, true)) return i + c;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (t.cls[i] == kL) return t.run(i, kL);
  if (t.cls[i] != kN && !is_crlf(t.cp[i]) && i + 1 < t.n() && t.cls[i + 1] == kL) return t.run(i + 1, kL);
  // \p{N}{1,3} (llama3), \p{N} (qwen2)
  if (t.cls[i] == kN) {
    size_t j = i;
    while (j < t.n() && j - i < MaxDigits && t.cls[j] == kN) ++j;
    return j;
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  const size_t j = (t.cp[i] == ' ' && i + 1 < t.n()) ? i + 1 : i;
  if (t.cls[j] == kO) {
    size_t k = t.run(j, kO);
    while (k < t.n() && is_crlf(t.cp[k])) ++k;
    return k;
  }
  // \s*[\r\n]+ : the longest whitespace prefix ending in a newline run.
  const size_t end = t.run(i, kS);
  size_t last_nl = i;
  for (size_t k = i; k < end; ++k)
    if (is_crlf(t.cp[k])) last_nl = k + 1;
  if (last_nl > i) return last_nl;
  return whitespace_end(t, i);
}

void split_with(std::string_view text, size_t (*match)(const Cps&, size_t), std::vector<std::string_view>& out) {
  const Cps t(text);
  for (size_t i = 0; i < t.n();) {
    size_t e = match(t, i);
    if (e <= i) e = i + 1;  // defensive: always advance
    out.push_back(text.substr(t.off[i], t.off[e] - t.off[i]));
    i = e;
  }
}

}  // namespace

PreTokenizer pre_tokenizer_from_name(const std::string& name) {
  static const std::pair<const char*, PreTokenizer> kTable[] = {
      {"default", PreTokenizer::gpt2}, {"gpt2", PreTokenizer::gpt2},   {"gpt-2", PreTokenizer::gpt2},
      {"smollm", PreTokenizer::smollm}, {"llama3", PreTokenizer::llama3}, {"llama-bpe", PreTokenizer::llama3},
      {"qwen2", PreTokenizer::qwen2},
  };
  for (const auto& [n, k] : kTable)
    if (name == n) return k;
  fail("unsupported pre-tokenizer '" + name + "' (tokenizer.ggml.pre; supported: default, gpt2, smollm, llama3, qwen2)");
}

void pre_tokenize(PreTokenizer kind, std::string_view text, std::vector<std::string_view>& out) {
  switch (kind) {
    case PreTokenizer::gpt2:
      return split_with(text, gpt2_match, out);
    case PreTokenizer::llama3:
      return split_with(text, llama3_match<3>, out);
    case PreTokenizer::qwen2:
      return split_with(text, llama3_match<1>, out);
    case PreTokenizer::smollm: {
      // Isolate every \p{N} code point, then apply the gpt2 rules to the stretches between.
      size_t start = 0;
      for (size_t i = 0; i < text.size();) {
        const size_t at = i;
        const uint32_t c = unicode::next_cp(text, i);
        if (!unicode::is_number(c)) continue;
        if (at > start) split_with(text.substr(start, at - start), gpt2_match, out);
        out.push_back(text.substr(at, i - at));
        start = i;
      }
      if (start < text.size()) split_with(text.substr(start), gpt2_match, out);
      return;
    }
  }
}

}  // namespace tinfer
