// Early-exit options onto EarlyExit (see exit_flags.h).
#include "cli/exit_flags.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "tinfer/error.h"

namespace tinfer::cli {

std::vector<OptionSpec> early_exit_options() {
  return {{"--early-exit", "per-token early exit: a token whose exit-head top-1 probability exceeds this leaves the "
                           "step (0..1; 1 = off; calibrate with `tinfer calibrate-exit`)"},
          {"--exit-layers", "layers run before each exit head, ascending (default: one exit at 2/3 of the depth)"}};
}

std::vector<int32_t> parse_exit_layers(const std::string& text) {
  std::vector<int32_t> layers;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    check(!item.empty() && end && *end == '\0' && v >= 1 && v < (1 << 20),
          "--exit-layers lists layer counts >= 1, got '" + item + "'");
    check(layers.empty() || v > layers.back(), "--exit-layers must be ascending and distinct, got '" + text + "'");
    layers.push_back(int32_t(v));
  }
  check(!layers.empty(), "--exit-layers is empty");
  return layers;
}

EarlyExit early_exit(const Args& args) {
  EarlyExit e;
  if (args.has("--early-exit")) {
    const std::string v = args.str("--early-exit");
    char* end = nullptr;
    const double t = std::strtod(v.c_str(), &end);
    check(!v.empty() && end && *end == '\0' && std::isfinite(t) && t >= 0 && t <= 1,
          "--early-exit must be a probability in [0, 1], got '" + v + "'");
    e.threshold = float(t);
  }
  if (args.has("--exit-layers")) {
    check(args.has("--early-exit"), "--exit-layers needs --early-exit THRESHOLD");
    e.layers = parse_exit_layers(args.str("--exit-layers"));
  }
  return e;
}

}  // namespace tinfer::cli
