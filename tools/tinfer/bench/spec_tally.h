// Speculative decoding's counters over a span of engine work (EngineStats and the op profile, read before and
// after), and the figures `tinfer bench spec` tabulates and `tinfer run --spec` prints: acceptance, tokens
// committed per verify step, time drafting vs in the forward pass (verify).
#pragma once
#include <cstdint>
#include <string>

#include <tinfer/engine.h>

namespace tinfer::cli {

struct SpecTally {
  int64_t drafted = 0, accepted = 0, verify_steps = 0;
  double draft_s = 0, forward_s = 0;

  static SpecTally of(const Engine& e);  // since the engine started
  SpecTally operator-(const SpecTally& earlier) const;
  SpecTally& operator+=(const SpecTally& o);
  double acceptance() const { return drafted > 0 ? double(accepted) / double(drafted) : 0.0; }
  // 1 + accepted per verify step (every verify step commits one token of the target's own); 0 without steps.
  double tokens_per_verify_step() const {
    return verify_steps > 0 ? 1.0 + double(accepted) / double(verify_steps) : 0.0;
  }
  // "acceptance 71.2% (85 of 120 drafted), 2.13 tokens/verify step, draft 0.01 s, forward 0.48 s"
  std::string describe() const;
};

}  // namespace tinfer::cli
