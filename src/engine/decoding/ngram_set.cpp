// The ngram Drafter: one NgramDrafter per sequence, fed each committed token once.
#include <unordered_map>

#include "engine/decoding/drafter.h"
#include "engine/decoding/ngram_drafter.h"

namespace tinfer {

namespace {

class NgramSet final : public Drafter {
 public:
  NgramSet(int min_n, int max_n) : min_n_(min_n), max_n_(max_n) {}
  const char* name() const override { return "ngram"; }

  void propose(std::span<DraftQuery> queries) override {
    for (DraftQuery& q : queries) {
      auto it = seqs_.try_emplace(q.seq, min_n_, max_n_).first;
      NgramDrafter& d = it->second;
      if (d.size() > static_cast<int64_t>(q.tokens.size())) d.reset();  // (committed tokens never shrink)
      d.append(q.tokens.subspan(static_cast<size_t>(d.size())));
      q.draft = d.propose(q.k);
    }
  }
  void release(kv::SeqId seq) override { seqs_.erase(seq); }

 private:
  int min_n_, max_n_;
  std::unordered_map<kv::SeqId, NgramDrafter> seqs_;
};

}  // namespace

std::unique_ptr<Drafter> make_ngram_drafter(int min_n, int max_n) { return std::make_unique<NgramSet>(min_n, max_n); }

}  // namespace tinfer
