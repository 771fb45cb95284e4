// Vocab: validation of tokenizer metadata, piece lookup, end-of-generation set, special-token split.
#include "text/tokenizer/vocab.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "tinfer/error.h"
#include "text/tokenizer/unicode_util.h"

namespace tinfer {

void VocabData::validate() const {
  std::ostringstream err;
  const size_t n = tokens.size();
  if (n == 0) err << "; tokenizer.ggml.tokens is empty";
  if (!normalizer.empty() && normalizer != "nfc" && normalizer != "nfkc" && normalizer != "nfd" && normalizer != "nfkd")
    err << "; tinfer.tokenizer.normalizer '" << normalizer << "' is not nfc, nfkc, nfd or nfkd";
  if (n > static_cast<size_t>(INT32_MAX)) err << "; too many tokens (" << n << ")";
  if (!scores.empty() && scores.size() != n)
    err << "; tokenizer.ggml.scores has " << scores.size() << " entries, tokens has " << n;
  if (!types.empty() && types.size() != n)
    err << "; tokenizer.ggml.token_type has " << types.size() << " entries, tokens has " << n;
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] < 0 || types[i] > 6) {
      err << "; token " << i << " has invalid token_type " << types[i];
      break;
    }
  }
  const std::pair<const char*, int32_t> ids[] = {{"bos_token_id", bos}, {"eos_token_id", eos},
                                                 {"unknown_token_id", unk}, {"eot_token_id", eot},
                                                 {"eom_token_id", eom}, {"padding_token_id", pad}};
  for (const auto& [name, id] : ids)
    if (id < -1 || (id >= 0 && static_cast<size_t>(id) >= n))
      err << "; tokenizer.ggml." << name << " = " << id << " is out of range [0, " << n << ")";
  for (int32_t id : eog_ids)
    if (id < 0 || static_cast<size_t>(id) >= n) err << "; end-of-generation id " << id << " is out of range [0, " << n << ")";
  if (model == "gpt2" && merges.empty()) err << "; gpt2 tokenizer has no tokenizer.ggml.merges";
  const std::string e = err.str();
  if (!e.empty()) fail("invalid tokenizer metadata: " + e.substr(2));
}

Vocab::Vocab(VocabData d) : d_(std::move(d)) {
  d_.validate();
  const int32_t n = size();
  attrs_.assign(n, TokenAttr::normal);
  for (int32_t i = 0; i < n && !d_.types.empty(); ++i)
    attrs_[i] = d_.types[i] == 0 ? TokenAttr::normal : static_cast<TokenAttr>(d_.types[i]);
  index_.reserve(n);
  for (int32_t i = 0; i < n; ++i) index_.emplace(d_.tokens[i], i);  // first occurrence wins
  eog_.assign(n, false);
  for (int32_t id : {d_.eos, d_.eot, d_.eom})
    if (id >= 0) eog_[id] = true;
  for (int32_t id : d_.eog_ids) eog_[id] = true;
  for (int32_t i = 0; i < n; ++i) {
    const TokenAttr a = attrs_[i];
    if ((a == TokenAttr::control || a == TokenAttr::user_defined) && !d_.tokens[i].empty()) {
      specials_.push_back(i);
      has_user_defined_ = has_user_defined_ || a == TokenAttr::user_defined;
    }
    // Chat/end-of-turn control tokens of common families end generation too.
    static const char* kEogTexts[] = {"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|eom_id|>",
                                      "<end_of_turn>", "<|end|>", "</s>"};
    if (a == TokenAttr::control)
      for (const char* t : kEogTexts)
        if (d_.tokens[i] == t) eog_[i] = true;
  }
  std::stable_sort(specials_.begin(), specials_.end(),
                   [&](int32_t a, int32_t b) { return d_.tokens[a].size() > d_.tokens[b].size(); });
}

int32_t Vocab::find(std::string_view piece) const {
  auto it = index_.find(piece);
  return it == index_.end() ? -1 : it->second;
}

bool Vocab::is_eog(int32_t id) const { return in_range(id) && eog_[id]; }

std::string_view Vocab::normalized(std::string_view text, std::string& buf) const {
  if (d_.normalizer.empty()) return text;
  return unicode::normalize(text, d_.normalizer, buf) ? std::string_view(buf) : text;
}

std::vector<Vocab::Fragment> Vocab::split_special(std::string_view text, bool parse_special,
                                                  std::span<const TextRange> literal) const {
  std::vector<Fragment> out;
  // User-defined pieces (Gemma's "\n" runs, literal space and tab runs, "<table>" ...) are plain text
  // that is always matched whole, as llama.cpp and Hugging Face's added tokens do; control pieces only
  // with parse_special and outside `literal` ranges.
  const bool any_user = has_user_defined_;
  if ((!parse_special && !any_user) || specials_.empty()) {
    if (!text.empty()) out.push_back({-1, text});
    return out;
  }
  // Scan left to right; at each position try specials longest first. Special texts start with a
  // small set of bytes ('<', '[', '\n' ...), so a first-byte filter keeps this near linear.
  bool first_byte[256] = {};
  for (int32_t id : specials_)
    if (parse_special || attrs_[id] == TokenAttr::user_defined) first_byte[static_cast<uint8_t>(d_.tokens[id][0])] = true;
  size_t raw_start = 0, i = 0, lit = 0;  // literal[lit] is the first range not wholly before i
  while (i < text.size()) {
    int32_t hit = -1;
    while (lit < literal.size() && literal[lit].end <= i) ++lit;
    if (first_byte[static_cast<uint8_t>(text[i])]) {
      const bool in_literal = lit < literal.size() && literal[lit].begin <= i;
      for (int32_t id : specials_) {
        const bool user = attrs_[id] == TokenAttr::user_defined;
        if (!user && (!parse_special || in_literal)) continue;
        const std::string& t = d_.tokens[id];
        // A control match running into a literal range is no match (a content may not complete a special).
        if (text.compare(i, t.size(), t) == 0 &&
            (user || !(lit < literal.size() && literal[lit].begin < i + t.size()))) {
          hit = id;
          break;
        }
      }
    }
    if (hit < 0) {
      ++i;
      continue;
    }
    if (i > raw_start) out.push_back({-1, text.substr(raw_start, i - raw_start)});
    out.push_back({hit, {}});
    i += d_.tokens[hit].size();
    raw_start = i;
  }
  if (raw_start < text.size()) out.push_back({-1, text.substr(raw_start)});
  return out;
}

std::unique_ptr<Tokenizer> make_tokenizer(VocabData d) {
  using Maker = std::unique_ptr<Tokenizer> (*)(VocabData);
  static const std::pair<const char*, Maker> kTable[] = {
      {"llama", make_spm_tokenizer}, {"gpt2", make_bpe_tokenizer}, {"t5", make_unigram_tokenizer}};
  for (const auto& [name, make] : kTable)
    if (d.model == name) return make(std::move(d));
  fail("unsupported tokenizer model '" + d.model + "' (supported: llama, gpt2, t5)");
}

std::string sentencepiece_token_bytes(const Vocab& vocab, int32_t id, bool render_special) {
  static const std::string kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space
  if (!vocab.in_range(id)) return {};
  const std::string& p = vocab.data().tokens[size_t(id)];
  switch (vocab.attr(id)) {
    case TokenAttr::byte: {
      unsigned v = 0;
      if (p.size() == 6 && std::sscanf(p.c_str(), "<0x%2X>", &v) == 1) return std::string(1, static_cast<char>(v));
      return p;
    }
    case TokenAttr::control:
    case TokenAttr::unknown:
    case TokenAttr::unused:
      return render_special ? p : std::string();
    default: {
      std::string s;
      s.reserve(p.size());
      for (size_t i = 0; i < p.size();) {
        if (p.compare(i, kSpace.size(), kSpace) == 0) {
          s += ' ';
          i += kSpace.size();
        } else {
          s += p[i++];
        }
      }
      return s;
    }
  }
}

const TokenLengths& VocabTokenizer::lengths() const {
  std::call_once(lengths_once_, [&] {
    std::vector<std::string> texts(size_t(vocab_.size()));
    for (int32_t id = 0; id < vocab_.size(); ++id) texts[size_t(id)] = matched_text(id);
    lengths_ = std::make_unique<TokenLengths>(texts);
  });
  return *lengths_;
}

// Normal forms shrink text at most 4:1: NFKC/NFKD map a 4-byte character to one byte (U+1D400 -> "A"), NFC composes
// at most 3:1 (Hangul L+V+T jamo, 9 bytes -> 3), none deletes a character. Normalised text may hold bytes the input
// lacks, so a text's own bytes bound nothing then.
size_t VocabTokenizer::max_bytes_per_token() const {
  if (drops_or_fuses()) return 0;
  return lengths().longest() * (vocab_.data().normalizer.empty() ? 1 : 4);
}

size_t VocabTokenizer::max_bytes_per_token_in(std::string_view text) const {
  if (drops_or_fuses()) return 0;
  if (!vocab_.data().normalizer.empty()) return max_bytes_per_token();
  return lengths().longest_within(TokenLengths::bytes_of(text) | TokenLengths::bytes_of(added_text()));
}

}  // namespace tinfer
