// Quality budget options (see quality_budget.h).
#include "quality/quality_budget.h"

#include <cmath>
#include <cstdlib>

#include "tinfer/error.h"

namespace tinfer::cli {

std::vector<OptionSpec> quality_budget_options(const std::string& base) {
  return {{"--budget-kld", "quality budget: mean KL divergence (nats) against " + base},
          {"--budget-ppl", "quality budget: ΔPPL against " + base + ", absolute (0.05) or relative (0.5%)"}};
}

QualityBudget parse_quality_budget(const Args& args) {
  const bool k = args.has("--budget-kld"), p = args.has("--budget-ppl");
  check(k != p, "give exactly one of --budget-kld X (mean KL divergence, nats) and --budget-ppl X (ΔPPL, or X%)");
  QualityBudget b;
  b.kld = k;
  b.text = args.str(k ? "--budget-kld" : "--budget-ppl");
  std::string num = b.text;
  if (!k && !num.empty() && num.back() == '%') b.relative = true, num.pop_back();
  char* end = nullptr;
  b.value = std::strtod(num.c_str(), &end);
  check(!num.empty() && end && *end == '\0' && std::isfinite(b.value) && b.value >= 0,
        std::string(k ? "--budget-kld" : "--budget-ppl") + " must be a number >= 0" + (k ? "" : " (or a percentage)") +
            ", got '" + b.text + "'");
  return b;
}

nlohmann::json quality_json(const QualitySummary& s) {
  return {{"kld_mean", s.kl_mean}, {"dppl", s.dppl}, {"ppl", s.ppl_this}, {"top1", s.top1}};
}

}  // namespace tinfer::cli
