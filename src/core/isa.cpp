// ISA detection via the compiler's cpu-feature builtins.
#include "core/isa.h"

#include <cpuid.h>

#include <cstdlib>

#include "tinfer/error.h"

namespace tinfer {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::generic: return "generic";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
  }
  return "?";
}

Isa parse_isa(const std::string& name) {
  if (name == "generic") return Isa::generic;
  if (name == "avx2") return Isa::avx2;
  if (name == "avx512") return Isa::avx512;
  fail("unknown ISA '" + name + "' (expected avx512, avx2 or generic)");
}

namespace {
// F16C is CPUID leaf 1, ECX bit 29 (not every compiler's __builtin_cpu_supports knows "f16c").
bool has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}
}  // namespace

bool cpu_supports(Isa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case Isa::generic: return true;
    case Isa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
    case Isa::avx512:
      return cpu_supports(Isa::avx2) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vnni");
  }
  return false;
}

bool cpu_supports_avx512_bf16() {
  // CPUID leaf 7 sub-leaf 1, EAX bit 5 (independent of the compiler's __builtin_cpu_supports names).
  unsigned a = 0, b = 0, c = 0, d = 0;
  return cpu_supports(Isa::avx512) && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5));
}

Isa best_isa() {
  if (cpu_supports(Isa::avx512)) return Isa::avx512;
  if (cpu_supports(Isa::avx2)) return Isa::avx2;
  return Isa::generic;
}

Isa active_isa() {
  // Resolved once per process: hot paths ask for it on every call.
  static const Isa isa = [] {
    const char* env = std::getenv("TINFER_ISA");
    if (!env || !*env) return best_isa();
    Isa forced = parse_isa(env);
    check(cpu_supports(forced), std::string("TINFER_ISA=") + env + " but this CPU does not support it");
    return forced;
  }();
  return isa;
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (Isa i : {Isa::generic, Isa::avx2, Isa::avx512})
    if (cpu_supports(i)) out.push_back(i);
  return out;
}

}  // namespace tinfer
