// EarlyExit: per-token early exit (--early-exit THRESHOLD --exit-layers L1,L2,...). After the first `layers[k]`
// decoder layers, the final norm and the output head score each token that may exit; when the top-1 probability
// of that distribution is above the threshold (strictly: 1 never exits, 0 always does at the first exit layer),
// the token's logits are those and it leaves the rest of the step. Its KV in the deeper layers is filled from
// the exit layer's hidden state (state copying: each deeper layer's K and V projections of that same state), so
// later tokens attend to something. A token may exit only when the caller marks it a decode row
// (ForwardBatch::may_exit) and it is its sequence's only row in the step: prompt tokens (even one left alone by
// the token budget) and speculative verify rows run every layer. Blocks of exited tokens are not what a prefill
// computes, so the engine keeps output blocks out of the prefix cache while early exit is on; a preempted request
// recomputes its outputs at full depth, so its continuation may differ from an uninterrupted run. Plain data.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace tinfer {

struct EarlyExit {
  std::vector<int32_t> layers;  // ascending, each in [1, n_layers - 1]: layers run before that exit's head;
                                // empty: the default, one exit at two thirds of the depth
  float threshold = 1.0f;       // top-1 probability a token must exceed to exit (1: off)
  bool enabled() const { return threshold < 1.0f; }
  // `layers`, or the default for a model of n_layers.
  std::vector<int32_t> layers_for(int64_t n_layers) const {
    if (!layers.empty() || n_layers < 2) return layers;
    return {int32_t(std::max<int64_t>(1, (2 * n_layers) / 3))};
  }
  // "off" or "p>0.9 after 20" / "p>0.9 after 10,20".
  std::string describe(int64_t n_layers) const {
    if (!enabled()) return "off";
    std::string s;
    for (int32_t l : layers_for(n_layers)) s += (s.empty() ? "" : ",") + std::to_string(l);
    char t[32];
    std::snprintf(t, sizeof t, "p>%g after ", double(threshold));
    return t + s;
  }
  bool operator==(const EarlyExit&) const = default;
};

// What early exit did so far: rows scored by an exit head, rows that exited, and where.
struct EarlyExitCounters {
  int64_t eligible = 0;              // rows that could exit (the only row of their sequence, logits wanted)
  int64_t exited = 0;
  std::vector<int64_t> exited_after;  // [n_layers]: rows that exited after that many layers
  double share() const { return eligible > 0 ? double(exited) / double(eligible) : 0.0; }
  // Mean layers run per eligible row (n_layers for a row that did not exit).
  double mean_layers(int64_t n_layers) const {
    if (eligible == 0) return double(n_layers);
    double s = double(eligible - exited) * double(n_layers);
    for (size_t l = 0; l < exited_after.size(); ++l) s += double(l) * double(exited_after[l]);
    return s / double(eligible);
  }
};

}  // namespace tinfer
