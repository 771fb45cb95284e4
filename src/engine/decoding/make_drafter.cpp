// make_drafter: SpecConfig -> Drafter.
#include "core/error.h"
#include "engine/decoding/drafter.h"

namespace tinfer {

std::unique_ptr<Drafter> make_drafter(const SpecConfig& config, const Model& target, const DrafterEnv& env) {
  (void)target, (void)env;
  switch (config.mode) {
    case SpecMode::kNgram:
      return make_ngram_drafter(config.ngram_min, config.ngram_max);
    case SpecMode::kDraft:
    case SpecMode::kSelf:
      break;
    case SpecMode::kNone:
      fail("make_drafter: speculative decoding is off");
  }
  fail(std::string("speculative mode ") + spec_mode_name(config.mode) + " is not built yet");
}

}  // namespace tinfer
