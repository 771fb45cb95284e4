// Greedy per-slot KV type choice and back-off (see plans/kv_plan_search.h).
#include "plans/kv_plan_search.h"

#include <limits>

#include "tinfer/error.h"

namespace tinfer {

double predicted_cost(const std::vector<KvSlot>& slots, const SlotChoice& choice) {
  double c = 0;
  for (size_t s = 0; s < slots.size(); ++s) c += slots[s].options[size_t(choice[s])].cost;
  return c;
}

int64_t plan_bytes(const std::vector<KvSlot>& slots, const SlotChoice& choice) {
  int64_t b = 0;
  for (size_t s = 0; s < slots.size(); ++s) b += slots[s].options[size_t(choice[s])].bytes;
  return b;
}

SlotChoice choose_within_budget(const std::vector<KvSlot>& slots, double budget) {
  for (const KvSlot& s : slots) {
    check(!s.options.empty(), "a KV slot without options");
    for (size_t o = 1; o < s.options.size(); ++o)
      check(s.options[o].bytes < s.options[o - 1].bytes, "KV slot options must take fewer bytes each");
  }
  SlotChoice choice(slots.size(), 0);
  double total = 0;
  for (;;) {
    // Best move: (free, bytes saved) for cost-free moves, else bytes saved per unit cost.
    int best_s = -1, best_o = -1;
    bool best_free = false;
    double best_score = -1;
    for (size_t s = 0; s < slots.size(); ++s) {
      const SlotOption& cur = slots[s].options[size_t(choice[s])];
      for (size_t o = size_t(choice[s]) + 1; o < slots[s].options.size(); ++o) {
        const SlotOption& opt = slots[s].options[o];
        const double added = opt.cost - cur.cost;
        if (total + added > budget) continue;
        const double saved = double(cur.bytes - opt.bytes);
        const bool free = added <= 0;
        const double score = free ? saved : saved / added;
        if ((free && !best_free) || (free == best_free && score > best_score)) {
          best_s = int(s), best_o = int(o), best_free = free, best_score = score;
        }
      }
    }
    if (best_s < 0) return choice;
    total += slots[size_t(best_s)].options[size_t(best_o)].cost - slots[size_t(best_s)].options[size_t(choice[size_t(best_s)])].cost;
    choice[size_t(best_s)] = best_o;
  }
}

bool back_off(const std::vector<KvSlot>& slots, SlotChoice& choice, double target) {
  bool stepped = false;
  for (;;) {
    int worst = -1;
    double worst_step = -std::numeric_limits<double>::infinity();
    for (size_t s = 0; s < slots.size(); ++s) {
      if (choice[s] == 0) continue;
      const auto& o = slots[s].options;
      const double step = o[size_t(choice[s])].cost - o[size_t(choice[s]) - 1].cost;
      if (step > worst_step) worst = int(s), worst_step = step;
    }
    if (worst < 0) return stepped;
    --choice[size_t(worst)];
    stepped = true;
    if (predicted_cost(slots, choice) <= target) return true;
  }
}

}  // namespace tinfer
