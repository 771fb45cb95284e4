// SentencePiece-style BPE (tokenizer.ggml.model = "llama"): dummy-prefix space, ' ' -> U+2581,
// greedy merging of the highest-scoring adjacent pair, byte fallback (<0xNN>) for unknown text.
#include <array>
#include <cstdio>
#include <unordered_map>

#include "text/tokenizer/merge_queue.h"
#include "text/tokenizer/unicode_util.h"
#include "text/tokenizer/vocab.h"

namespace tinfer {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

class SpmTokenizer final : public SentencePieceTokenizer {
 public:
  explicit SpmTokenizer(VocabData d) : SentencePieceTokenizer(std::move(d)) {
    byte_ids_.fill(-1);
    char buf[8];
    for (int b = 0; b < 256; ++b) {
      std::snprintf(buf, sizeof buf, "<0x%02X>", b);
      byte_ids_[b] = vocab_.find(buf);
    }
    // Merges (a tokenizer.json's BPE): a pair merges by its rank; pairs naming absent pieces can never apply.
    const auto& merges = vocab_.data().merges;
    for (size_t r = 0; r < merges.size(); ++r) {
      const size_t sp = merges[r].find(' ', 1);
      if (sp == std::string::npos) continue;
      const std::string_view m(merges[r]);
      const int32_t a = vocab_.find(m.substr(0, sp)), b = vocab_.find(m.substr(sp + 1));
      const int32_t ab = mergeable(std::string(m.substr(0, sp)) + std::string(m.substr(sp + 1)));
      if (a >= 0 && b >= 0 && ab >= 0) ranks_.emplace(key(a, b), Merge{static_cast<int32_t>(r), ab});
    }
  }

  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special,
                              std::span<const TextRange> literal) const override {
    std::vector<int32_t> out;
    const VocabData& d = vocab_.data();
    if (add_bos && d.bos >= 0) out.push_back(d.bos);
    bool after_special = true;  // the dummy prefix goes before the text and after each special token
    std::string buf, norm;
    for (const auto& frag : vocab_.split_special(text, parse_special, literal)) {
      if (frag.id >= 0) {
        out.push_back(frag.id);
        after_special = true;
        continue;
      }
      buf.clear();
      if (d.add_space_prefix && after_special) buf += kSpace;
      for (char c : vocab_.normalized(frag.text, norm)) {
        if (c == ' ') buf += kSpace;
        else buf += c;
      }
      encode_piece(buf, out);
      after_special = false;
    }
    return out;
  }

 protected:
  // A piece that does not merge becomes byte pieces or one <unk> (one character); without either it is dropped.
  bool drops_or_fuses() const override {
    if (vocab_.data().unk >= 0) return false;
    for (int32_t id : byte_ids_)
      if (id < 0) return true;
    return false;
  }

 private:
  // Pieces that take part in merging: normal and user-defined (SentencePiece never forms control,
  // byte, unknown or unused pieces by merging).
  int32_t mergeable(std::string_view s) const {
    const int32_t id = vocab_.find(s);
    if (id < 0) return -1;
    const TokenAttr a = vocab_.attr(id);
    return a == TokenAttr::normal || a == TokenAttr::user_defined ? id : -1;
  }

  void encode_piece(std::string_view s, std::vector<int32_t>& out) const {
    std::vector<MergeSymbol> syms;
    for (size_t i = 0; i < s.size();) {
      const size_t n = unicode::utf8_len(s, i);
      MergeSymbol m;
      m.prev = static_cast<int32_t>(syms.size()) - 1;
      m.next = static_cast<int32_t>(syms.size()) + 1;
      m.start = static_cast<uint32_t>(i);
      m.len = static_cast<uint32_t>(n);
      syms.push_back(m);
      i += n;
    }
    if (syms.empty()) return;
    syms.back().next = -1;
    merge_symbols(syms, [&](const MergeSymbol& l, const MergeSymbol& r, double& pr, int32_t& id) {
      if (!ranks_.empty()) {  // Hugging Face BPE: only listed pairs, lowest rank first
        auto it = ranks_.find(key(vocab_.find(s.substr(l.start, l.len)), vocab_.find(s.substr(r.start, r.len))));
        if (it == ranks_.end()) return false;
        pr = -static_cast<double>(it->second.rank);
        id = it->second.id;
        return true;
      }
      id = mergeable(s.substr(l.start, l.len + r.len));
      if (id < 0) return false;
      pr = vocab_.score(id);
      return true;
    });
    for (int32_t i = 0; i >= 0; i = syms[i].next) {
      const std::string_view piece = s.substr(syms[i].start, syms[i].len);
      const int32_t id = mergeable(piece);
      if (id >= 0) {
        out.push_back(id);
        continue;
      }
      // Byte fallback; a vocabulary without byte pieces gives one <unk> for the whole piece.
      bool have_bytes = true;
      for (char c : piece) have_bytes = have_bytes && byte_ids_[static_cast<uint8_t>(c)] >= 0;
      if (have_bytes) {
        for (char c : piece) out.push_back(byte_ids_[static_cast<uint8_t>(c)]);
      } else if (vocab_.data().unk >= 0) {
        out.push_back(vocab_.data().unk);
      }
    }
  }

  struct Merge {
    int32_t rank, id;
  };
  static uint64_t key(int32_t a, int32_t b) { return (static_cast<uint64_t>(uint32_t(a)) << 32) | static_cast<uint32_t>(b); }

  std::array<int32_t, 256> byte_ids_;
  std::unordered_map<uint64_t, Merge> ranks_;  // (left id, right id) -> rank and merged id; empty: merge by score
};

}  // namespace

std::unique_ptr<Tokenizer> make_spm_tokenizer(VocabData d) { return std::make_unique<SpmTokenizer>(std::move(d)); }

}  // namespace tinfer
