// Bigram merging shared by both BPE kinds: symbols in a linked list over the input, candidate
// pairs in a priority queue, so a word of n symbols costs O(n log n) rather than O(n^2).
#pragma once
#include <cstdint>
#include <queue>
#include <vector>

namespace tinfer {

struct MergeSymbol {
  int32_t prev = -1, next = -1;  // neighbours in the list; -1 at the ends
  uint32_t start = 0, len = 0;   // byte span in the encoded input; len 0 once merged away
  int32_t id = -1;               // token id when known (byte-level BPE), else -1
};

// Lookup(const MergeSymbol& left, const MergeSymbol& right, double& priority, int32_t& merged_id)
// returns true when the pair may merge; a higher priority merges first, ties go to the leftmost
// pair (as SentencePiece and HF tokenizers do).
template <class Lookup>
void merge_symbols(std::vector<MergeSymbol>& syms, Lookup&& lookup) {
  struct Bigram {
    double priority;
    int32_t left, right, merged_id;
    uint32_t len;  // combined length when queued: a later mismatch means the pair is stale
  };
  auto worse = [](const Bigram& a, const Bigram& b) {
    return a.priority < b.priority || (a.priority == b.priority && a.left > b.left);
  };
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(worse)> queue(worse);
  auto try_add = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    double pr = 0;
    int32_t id = -1;
    if (lookup(syms[l], syms[r], pr, id)) queue.push({pr, l, r, id, syms[l].len + syms[r].len});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) try_add(i - 1, i);
  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    MergeSymbol& l = syms[b.left];
    MergeSymbol& r = syms[b.right];
    if (l.len == 0 || r.len == 0 || l.next != b.right || l.len + r.len != b.len) continue;
    l.len += r.len;
    l.id = b.merged_id;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }
}

}  // namespace tinfer
