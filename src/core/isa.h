// ISA detection and selection. The kernel table for the active ISA is chosen once at run time;
// TINFER_ISA=avx512|avx2|generic forces one (refused with a clear error if the CPU lacks it),
// so one machine can test every path.
#pragma once
#include <string>
#include <vector>

namespace tinfer {

enum class Isa { generic = 0, avx2 = 1, avx512 = 2 };

const char* isa_name(Isa isa);
Isa parse_isa(const std::string& name);  // throws Error on unknown names
bool cpu_supports(Isa isa);              // avx512 here means F+BW+VL+DQ+VNNI(+BF16 optional)
bool cpu_supports_avx512_bf16();          // AVX512-BF16 (vdpbf16ps, vcvtne2ps2bf16) on top of avx512
Isa best_isa();                          // best ISA this CPU supports
Isa active_isa();                        // TINFER_ISA if set (validated), else best_isa()
std::vector<Isa> supported_isas();       // every ISA this CPU can run, generic first

}  // namespace tinfer
