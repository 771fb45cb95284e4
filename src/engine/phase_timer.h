// PhaseTimer: one engine step's time by operator category (tinfer/op_profile.h), one category at a time. to()
// closes the running phase and opens the next, so a step extension can book its own work (drafting) in the
// middle of the engine's scheduling phase without double counting.
#pragma once
#include <optional>

#include "tinfer/op_profile.h"

namespace tinfer {

class PhaseTimer {
 public:
  explicit PhaseTimer(OpProfile* profile) : profile_(profile) {}
  void to(Op op) { timer_.emplace(profile_, op); }
  void stop() { timer_.reset(); }

 private:
  OpProfile* profile_;
  std::optional<OpTimer> timer_;
};

}  // namespace tinfer
