// FusedStep: which of the CPU step's GEMM inputs are quantized in the pass that computes them (act_panel.h's
// prologues) instead of being written out as floats and quantized by the GEMM. Both are bit-identical to the
// unfused step; the switch exists to measure each fusion alone (TINFER_FUSED_STEP=none|norm|glu|all, read
// when a CpuForward is made; default all) and to test the fused step against the unfused one.
#pragma once
#include <cstdlib>
#include <cstring>

namespace tinfer {

struct FusedStep {
  bool norm = true;  // RMSNorm (and the attention residual before the MLP's) -> the QKV / gate-up panel
  bool glu = true;   // SwiGLU / GeGLU product -> the down projection's panel

  static FusedStep all() { return {}; }
  static FusedStep none() { return {false, false}; }
  // TINFER_FUSED_STEP, or all() when unset; an unknown value means all() too (a benchmark knob, not a setting).
  static FusedStep from_env() {
    const char* v = std::getenv("TINFER_FUSED_STEP");
    if (!v) return all();
    if (!std::strcmp(v, "none")) return none();
    if (!std::strcmp(v, "norm")) return {true, false};
    if (!std::strcmp(v, "glu")) return {false, true};
    return all();
  }
};

}  // namespace tinfer
