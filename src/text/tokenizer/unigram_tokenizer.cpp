// SentencePiece unigram tokenizer (tokenizer.ggml.model = "t5", llama.cpp's name for UGM vocabularies; tokenizer.json
// "Unigram" models). Text is normalised (the model's precompiled character map if any, optional whitespace
// clean-up, dummy-prefix space, ' ' -> U+2581), then
// segmented by Viterbi: the split maximising the sum of the pieces' scores (log probabilities). A character no piece
// starts with is unknown (score: lowest piece score - 10, as SentencePiece and Hugging Face give it); consecutive
// unknown characters fuse into one <unk>, or become <0xNN> byte pieces when the vocabulary has them (byte fallback).
// Only normal pieces take part in segmentation: control, user-defined (matched whole by Vocab::split_special before
// this), unknown, unused and byte pieces never match text, so a literal "<0x41>" in the input stays six characters.
#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>
#include <optional>

#include "tinfer/error.h"
#include "text/tokenizer/charsmap.h"
#include "text/tokenizer/unicode_util.h"
#include "text/tokenizer/vocab.h"

namespace tinfer {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space
constexpr double kUnkPenalty = 10.0;

// A byte trie over the normal pieces, children of a node contiguous and sorted by byte (binary-searched): a
// prefix walk from each text position finds every piece starting there in O(piece length).
class PieceTrie {
 public:
  // `pieces` are (bytes, id); built iteratively (no recursion: a vocabulary may hold very long pieces).
  void build(std::vector<std::pair<std::string_view, int32_t>> pieces) {
    std::sort(pieces.begin(), pieces.end());
    // Pass 1: a linked trie. Keys arrive sorted, so a key's next byte either matches the node's last child or
    // comes after every existing child.
    struct Linked {
      uint8_t byte = 0;
      int32_t id = -1, first = -1, last = -1, sibling = -1;
    };
    std::vector<Linked> t(1);
    for (const auto& [key, id] : pieces) {
      int32_t n = 0;
      for (char ch : key) {
        const uint8_t c = static_cast<uint8_t>(ch);
        const int32_t last = t[n].last;
        if (last >= 0 && t[last].byte == c) {
          n = last;
          continue;
        }
        const int32_t child = static_cast<int32_t>(t.size());
        t.push_back({c, -1, -1, -1, -1});
        if (last >= 0) t[last].sibling = child;
        else t[n].first = child;
        t[n].last = child;
        n = child;
      }
      if (t[n].id < 0) t[n].id = id;  // duplicate pieces: the first id wins, as Vocab::find does
    }
    // Pass 2: breadth-first renumbering so each node's children sit contiguously in edges_.
    nodes_.assign(t.size(), Node{});
    edges_.clear();
    std::vector<int32_t> order{0};
    nodes_[0].id = t[0].id;
    for (size_t q = 0; q < order.size(); ++q) {
      const int32_t old = order[q];
      Node& node = nodes_[q];
      node.begin = static_cast<uint32_t>(edges_.size());
      for (int32_t c = t[old].first; c >= 0; c = t[c].sibling) {
        const int32_t fresh = static_cast<int32_t>(order.size());
        order.push_back(c);
        nodes_[fresh].id = t[c].id;
        edges_.push_back({t[c].byte, fresh});
      }
      node.end = static_cast<uint32_t>(edges_.size());
    }
  }

  // Calls f(length, id) for every piece that is a prefix of s, shortest first.
  template <class F>
  void prefixes(std::string_view s, F&& f) const {
    uint32_t n = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      const uint8_t c = static_cast<uint8_t>(s[i]);
      const Node& node = nodes_[n];
      auto it = std::lower_bound(edges_.begin() + node.begin, edges_.begin() + node.end, c,
                                 [](const Edge& e, uint8_t b) { return e.byte < b; });
      if (it == edges_.begin() + node.end || it->byte != c) return;
      n = static_cast<uint32_t>(it->child);
      if (nodes_[n].id >= 0) f(i + 1, nodes_[n].id);
    }
  }

 private:
  struct Node {
    uint32_t begin = 0, end = 0;  // children: edges_[begin, end)
    int32_t id = -1;              // piece ending here, or -1
  };
  struct Edge {
    uint8_t byte;
    int32_t child;
  };
  std::vector<Node> nodes_{1};
  std::vector<Edge> edges_;
};

class UnigramTokenizer final : public SentencePieceTokenizer {
 public:
  explicit UnigramTokenizer(VocabData d) : SentencePieceTokenizer(std::move(d)) {
    const VocabData& v = vocab_.data();
    if (!v.precompiled_charsmap.empty()) charsmap_.emplace(v.precompiled_charsmap);
    if (v.pre == "metaspace") prefix_ = Prefix::metaspace;
    else if (v.pre == "metaspace-first") prefix_ = Prefix::metaspace_first;
    else check(v.pre == "default", "unigram tokenizer: unknown tokenizer.ggml.pre '" + v.pre +
                                       "' (default, metaspace, metaspace-first)");
    std::vector<std::pair<std::string_view, int32_t>> pieces;
    double min_score = std::numeric_limits<double>::infinity();
    for (int32_t id = 0; id < vocab_.size(); ++id) {
      if (vocab_.attr(id) != TokenAttr::normal || v.tokens[id].empty()) continue;
      pieces.emplace_back(v.tokens[id], id);
      min_score = std::min(min_score, double(vocab_.score(id)));
    }
    unk_score_ = (pieces.empty() ? 0.0 : min_score) - kUnkPenalty;
    trie_.build(std::move(pieces));
    byte_ids_.fill(-1);
    char buf[8];
    for (int b = 0; b < 256; ++b) {
      std::snprintf(buf, sizeof buf, "<0x%02X>", b);
      const int32_t id = vocab_.find(buf);
      if (id >= 0 && vocab_.attr(id) == TokenAttr::byte) byte_ids_[b] = id;
    }
  }

  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special,
                              std::span<const TextRange> literal) const override {
    std::vector<int32_t> out;
    const VocabData& d = vocab_.data();
    if (add_bos && d.bos >= 0) out.push_back(d.bos);
    bool after_special = true;
    std::string buf, norm, mapped;
    for (const auto& frag : vocab_.split_special(text, parse_special, literal)) {
      if (frag.id >= 0) {
        out.push_back(frag.id);
        after_special = true;
        continue;
      }
      const bool at_start = frag.text.data() == text.data();
      std::string_view plain = vocab_.normalized(frag.text, norm);
      if (charsmap_) mapped = charsmap_->normalize(plain), plain = mapped;  // before the whitespace rules, as SentencePiece
      normalize(plain, after_special, at_start, buf);
      segment(buf, out);
      after_special = false;
    }
    return out;
  }

 protected:
  // The normaliser collapses spaces or maps characters (a charsmap may delete them), or a run of unknown characters
  // fuses into one <unk> (a vocabulary without a byte piece for every byte).
  bool drops_or_fuses() const override {
    if (charsmap_ || vocab_.data().remove_extra_whitespaces) return true;
    for (int32_t id : byte_ids_)
      if (id < 0) return true;
    return false;
  }

 private:
  // Where the dummy-prefix space goes (VocabData::pre): SentencePiece ("default") before every text fragment (the
  // text's start and after each special token); Hugging Face's Metaspace pre-tokenizer only where the fragment does
  // not already start with a space, and with prepend_scheme "first" only on a fragment at the very start.
  enum class Prefix { sentencepiece, metaspace, metaspace_first };

  void normalize(std::string_view s, bool after_special, bool at_start, std::string& buf) const {
    const VocabData& d = vocab_.data();
    buf.clear();
    if (d.remove_extra_whitespaces) {  // SentencePiece: strip both ends, collapse space runs to one
      const size_t b = s.find_first_not_of(' ');
      if (b == std::string_view::npos) return;
      s = s.substr(b, s.find_last_not_of(' ') - b + 1);
    }
    if (s.empty()) return;
    bool prefix = d.add_space_prefix && after_special;
    if (prefix_ != Prefix::sentencepiece) {  // Metaspace looks at the text after ' ' -> U+2581: a literal one counts
      const bool has_space = s[0] == ' ' || s.substr(0, kSpace.size()) == kSpace;
      prefix = d.add_space_prefix && !has_space && (prefix_ == Prefix::metaspace || at_start);
    }
    if (prefix) buf += kSpace;
    bool prev_space = false;
    for (char c : s) {
      if (c != ' ') {
        buf += c;
        prev_space = false;
        continue;
      }
      if (!(d.remove_extra_whitespaces && prev_space)) buf += kSpace;
      prev_space = true;
    }
    // SentencePiece trims trailing spaces after escaping them, so literal U+2581s at the end go too.
    if (d.remove_extra_whitespaces)
      while (buf.size() >= kSpace.size() && std::string_view(buf).substr(buf.size() - kSpace.size()) == kSpace)
        buf.resize(buf.size() - kSpace.size());
  }

  // Viterbi over character boundaries: best[e] is the best-scoring segmentation of s[0, e) and its last piece.
  // Candidates are tried by ascending start, then ascending length, and only a strictly better score replaces
  // one, so ties go the way SentencePiece and Hugging Face break them.
  void segment(std::string_view s, std::vector<int32_t>& out) const {
    if (s.empty()) return;
    struct Best {
      double score = 0;
      int32_t start = -1;  // -1: unreached
      int32_t id = -1;     // -1 with start >= 0: an unknown character
    };
    std::vector<Best> best(s.size() + 1);
    best[0].start = 0;
    for (size_t at = 0; at < s.size();) {
      const size_t ch = unicode::utf8_len(s, at);
      const double base = best[at].score;
      bool whole_char = false;
      auto offer = [&](size_t end, int32_t id, double score) {
        Best& b = best[end];
        if (b.start < 0 || base + score > b.score) b = {base + score, static_cast<int32_t>(at), id};
      };
      trie_.prefixes(s.substr(at), [&](size_t len, int32_t id) {
        offer(at + len, id, vocab_.score(id));
        whole_char = whole_char || len == ch;
      });
      if (!whole_char) offer(at + ch, -1, unk_score_);
      at += ch;
    }
    // Walk back, then emit in order; a run of unknown characters is one unknown span.
    std::vector<std::pair<int32_t, int32_t>> path;  // (start, id)
    for (int32_t e = static_cast<int32_t>(s.size()); e > 0; e = best[e].start) path.emplace_back(best[e].start, best[e].id);
    size_t unk_from = std::string_view::npos;
    for (size_t i = path.size(); i-- > 0;) {
      const auto [start, id] = path[i];
      if (id < 0) {
        if (unk_from == std::string_view::npos) unk_from = static_cast<size_t>(start);
        continue;
      }
      if (unk_from != std::string_view::npos) emit_unknown(s.substr(unk_from, static_cast<size_t>(start) - unk_from), out);
      unk_from = std::string_view::npos;
      out.push_back(id);
    }
    if (unk_from != std::string_view::npos) emit_unknown(s.substr(unk_from), out);
  }

  // Byte pieces when the vocabulary has one for every byte of the span, else <unk> (nothing when it has neither).
  void emit_unknown(std::string_view span, std::vector<int32_t>& out) const {
    bool bytes = true;
    for (char c : span) bytes = bytes && byte_ids_[static_cast<uint8_t>(c)] >= 0;
    if (bytes) {
      for (char c : span) out.push_back(byte_ids_[static_cast<uint8_t>(c)]);
    } else if (vocab_.data().unk >= 0) {
      out.push_back(vocab_.data().unk);
    }
  }

  PieceTrie trie_;
  double unk_score_ = 0;
  Prefix prefix_ = Prefix::sentencepiece;
  std::array<int32_t, 256> byte_ids_;
  std::optional<CharsMap> charsmap_;  // the model's precompiled normalisation (e.g. nmt_nfkc), if it has one
};

}  // namespace

std::unique_ptr<Tokenizer> make_unigram_tokenizer(VocabData d) { return std::make_unique<UnigramTokenizer>(std::move(d)); }

}  // namespace tinfer
