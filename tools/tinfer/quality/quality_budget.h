// The quality budget of the calibrate-* commands (calibrate-kv, calibrate-skip): --budget-kld X (mean KL
// divergence, nats, against the base) or --budget-ppl X (ΔPPL, absolute, or X% of the base's PPL), and the JSON
// record of a measured quality.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "cli/args.h"
#include "quality/quality_stats.h"

namespace tinfer::cli {

struct QualityBudget {
  bool kld = true;     // mean KLD (nats) vs the base; else ΔPPL vs the base
  double value = 0;    // in the metric's units (a relative ΔPPL is turned into PPL units by resolve())
  bool relative = false;
  std::string text;    // as given
  double of(const QualitySummary& s) const { return kld ? s.kl_mean : s.dppl; }
  bool within(const QualitySummary& s) const { return of(s) <= value; }
  const char* metric() const { return kld ? "kld_mean" : "dppl"; }
  const char* unit() const { return kld ? "KLD" : "ΔPPL"; }
  void resolve(double ppl_base) {  // X% -> PPL units, once the base is known
    if (relative) value *= ppl_base / 100, relative = false;
  }
};

// The options' help lines, with `base` naming what the budget is measured against.
std::vector<OptionSpec> quality_budget_options(const std::string& base);
// Exactly one of --budget-kld and --budget-ppl; Error otherwise.
QualityBudget parse_quality_budget(const Args& args);
// {"kld_mean", "dppl", "ppl", "top1"} of a measurement.
nlohmann::json quality_json(const QualitySummary& s);

}  // namespace tinfer::cli
