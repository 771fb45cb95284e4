// The per-operator profile as a table (and JSON) for `tinfer bench --profile` and `bench throughput --profile`:
// each category's time per step, share, and achieved GB/s and GOP/s against the roofline measured in the same
// process. Also writes the trace file for `--trace FILE`.
#pragma once
#include <cstdio>
#include <string>

#include "tinfer/op_profile.h"

namespace tinfer::cli {

struct Roofline3 {
  double read_gbps = 0, int8_gops = 0, fp32_gflops = 0;
  bool int8_gemms = true;  // GEMMs on quantized weights run on int8 (their peak); float weights on fp32
  bool bf16_gemms = false;  // float GEMMs on bf16 dot products (bf16_dot_weights): 2 x the fp32 peak
};

// steps: how many steps the profile covers; wall_s: their measured wall time (the table says how much of it
// the categories account for).
void print_profile(std::FILE* out, const char* title, const OpProfile& p, int64_t steps, double wall_s,
                   const Roofline3& roof);
std::string profile_json(const OpProfile& p, int64_t steps, double wall_s);  // {"op": {"ms_per_step":...}, ...}
void write_trace(const OpProfile& p, const std::string& path);                 // Error if it cannot be written

}  // namespace tinfer::cli
