// Byte-level BPE (tokenizer.ggml.model = "gpt2"): pre-tokenize into words, map each byte to its
// GPT-2 code point, then merge adjacent pairs by rank (tokenizer.ggml.merges order).
#include <array>
#include <unordered_map>

#include "tinfer/error.h"
#include "text/tokenizer/merge_queue.h"
#include "text/tokenizer/pretokenizer.h"
#include "text/tokenizer/unicode_util.h"
#include "text/tokenizer/vocab.h"

namespace tinfer {
namespace {

class BpeTokenizer final : public VocabTokenizer {
 public:
  explicit BpeTokenizer(VocabData d) : VocabTokenizer(std::move(d)), pre_(pre_tokenizer_from_name(vocab_.data().pre)) {
    for (int b = 0; b < 256; ++b) byte_ids_[b] = vocab_.find(unicode::byte_to_utf8(static_cast<uint8_t>(b)));
    const auto& merges = vocab_.data().merges;
    ranks_.reserve(merges.size());
    std::string joined;
    for (size_t r = 0; r < merges.size(); ++r) {
      const std::string& m = merges[r];
      const size_t sp = m.find(' ', 1);  // the left part is never empty; a lone " " cannot split
      check(sp != std::string::npos, "invalid tokenizer.ggml.merges entry " + std::to_string(r) + ": '" + m + "'");
      const std::string_view left(m.data(), sp), right(m.data() + sp + 1, m.size() - sp - 1);
      const int32_t a = vocab_.find(left), b = vocab_.find(right);
      joined.assign(left);
      joined += right;
      const int32_t ab = vocab_.find(joined);
      if (a < 0 || b < 0 || ab < 0) continue;  // merges naming absent pieces can never apply
      ranks_.emplace(key(a, b), Merge{static_cast<int32_t>(r), ab});  // first (lowest) rank wins
    }
  }

  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special,
                              std::span<const TextRange> literal) const override {
    std::vector<int32_t> out;
    const VocabData& d = vocab_.data();
    if (add_bos && d.bos >= 0) out.push_back(d.bos);
    std::vector<std::string_view> words;
    std::vector<MergeSymbol> syms;
    std::string norm;  // (words are views into it until the next fragment)
    for (const auto& frag : vocab_.split_special(text, parse_special, literal)) {
      if (frag.id >= 0) {
        out.push_back(frag.id);
        continue;
      }
      words.clear();
      pre_tokenize(pre_, vocab_.normalized(frag.text, norm), words);
      for (std::string_view w : words) encode_word(w, syms, out);
    }
    return out;
  }

  std::string token_bytes(int32_t id, bool render_special) const override {
    if (!vocab_.in_range(id)) return {};
    const std::string& p = vocab_.data().tokens[id];
    const TokenAttr a = vocab_.attr(id);
    if (a == TokenAttr::control || a == TokenAttr::unknown || a == TokenAttr::unused)
      return render_special ? p : std::string();
    if (a == TokenAttr::user_defined) return p;  // added tokens are stored as plain text
    // Undo the byte mapping; code points outside it (not produced by our encoder) pass through.
    std::string s;
    for (size_t i = 0; i < p.size();) {
      const size_t at = i;
      const int b = unicode::utf8_to_byte(unicode::next_cp(p, i));
      if (b >= 0) s += static_cast<char>(b);
      else s.append(p, at, i - at);
    }
    return s;
  }

 protected:
  // Every byte is a token, or <unk>; without either a byte is dropped.
  bool drops_or_fuses() const override {
    for (int32_t id : byte_ids_)
      if (id < 0 && vocab_.data().unk < 0) return true;
    return false;
  }

 private:
  struct Merge {
    int32_t rank, id;
  };
  static uint64_t key(int32_t a, int32_t b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b); }

  void encode_word(std::string_view w, std::vector<MergeSymbol>& syms, std::vector<int32_t>& out) const {
    syms.clear();
    for (size_t i = 0; i < w.size(); ++i) {
      // A byte the vocabulary lacks becomes <unk> in place (never merged), or is dropped without one.
      int32_t id = byte_ids_[static_cast<uint8_t>(w[i])];
      if (id < 0) id = vocab_.data().unk;
      if (id < 0) continue;
      MergeSymbol m;
      m.prev = static_cast<int32_t>(syms.size()) - 1;
      m.next = static_cast<int32_t>(syms.size()) + 1;
      m.start = static_cast<uint32_t>(i);
      m.len = 1;
      m.id = id;
      syms.push_back(m);
    }
    if (syms.empty()) return;
    syms.back().next = -1;
    merge_symbols(syms, [&](const MergeSymbol& l, const MergeSymbol& r, double& pr, int32_t& id) {
      auto it = ranks_.find(key(l.id, r.id));
      if (it == ranks_.end()) return false;
      pr = -static_cast<double>(it->second.rank);
      id = it->second.id;
      return true;
    });
    for (int32_t i = 0; i >= 0; i = syms[i].next) out.push_back(syms[i].id);
  }

  PreTokenizer pre_;
  std::array<int32_t, 256> byte_ids_{};
  std::unordered_map<uint64_t, Merge> ranks_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_bpe_tokenizer(VocabData d) { return std::make_unique<BpeTokenizer>(std::move(d)); }

}  // namespace tinfer
