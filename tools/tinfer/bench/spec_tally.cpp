// SpecTally: the engine's speculation counters and op-profile seconds as one value.
#include "bench/spec_tally.h"

#include <cstdio>

namespace tinfer::cli {

namespace {

double forward_seconds(const OpProfile& p) {  // every op before sampling: the forward pass
  double s = 0;
  for (int op = 0; op < static_cast<int>(Op::kSample); ++op) s += p[Op(op)].seconds;
  return s;
}

}  // namespace

SpecTally SpecTally::of(const Engine& e) {
  const EngineStats s = e.stats();
  const OpProfile p = e.op_profile();
  return {s.spec_drafted, s.spec_accepted, s.spec_steps, p[Op::kDraft].seconds, forward_seconds(p)};
}

SpecTally SpecTally::operator-(const SpecTally& b) const {
  return {drafted - b.drafted, accepted - b.accepted, verify_steps - b.verify_steps, draft_s - b.draft_s,
          forward_s - b.forward_s};
}

SpecTally& SpecTally::operator+=(const SpecTally& o) {
  drafted += o.drafted, accepted += o.accepted, verify_steps += o.verify_steps;
  draft_s += o.draft_s, forward_s += o.forward_s;
  return *this;
}

std::string SpecTally::describe() const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "acceptance %.1f%% (%lld of %lld drafted), %.2f tokens/verify step, draft %.2f s, "
                "forward %.2f s", 100 * acceptance(), (long long)accepted, (long long)drafted, tokens_per_verify_step(),
                draft_s, forward_s);
  return buf;
}

}  // namespace tinfer::cli
