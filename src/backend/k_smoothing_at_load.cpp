// K smoothing at load: one forward over a fixed built-in text, the q/k maxima, the factors.
#include "backend/k_smoothing_at_load.h"

#include <algorithm>
#include <chrono>

#include "backend/backend.h"
#include "backend/k_smoothing_stats.h"
#include "text/tokenizer/tokenizer.h"

namespace tinfer {

namespace {

constexpr double kAlpha = 0.5, kFloor = 0.05;  // calibrate-kv's defaults (BENCHMARKS §2c)
constexpr int64_t kMaxTokens = 1024;

// Written for this purpose: plain prose of several registers (narrative, description, dialogue, figures, a list),
// so that the common token kinds of English text all pass through every layer.
constexpr std::string_view kText =
    "The old lighthouse stood at the end of a narrow road that ran between the fields and the sea. Every evening "
    "the keeper climbed the one hundred and twelve steps, cleaned the glass, and lit the lamp before the sun went "
    "down. In the winter of 1887 a storm broke the windows of the village school, and the children met in his "
    "kitchen for three weeks. They learned to read the tide tables, to tie knots, and to count the ships that "
    "passed in the night.\n\n"
    "A river is a natural stream of water that flows toward an ocean, a lake, or another river. Most rivers begin "
    "in mountains or hills, where rain and melting snow gather into small channels. As the water moves downhill, "
    "it carries sand, clay, and stones, and over thousands of years it cuts valleys into the land. Large rivers "
    "such as the Nile, the Amazon, and the Danube have shaped the history of the people who live along their "
    "banks, providing water for farms, routes for trade, and power for mills.\n\n"
    "\"Are you coming with us tomorrow?\" asked Maria.\n"
    "\"I would like to,\" said Tom, \"but I have to finish my report first. It is due on Monday at nine.\"\n"
    "\"Then bring it along. We can work on the train, and you can read it to me on the way back.\"\n\n"
    "The committee reviewed the budget for the new year. Spending on roads rose by 4.5 percent, to about 2.3 "
    "million dollars, while the cost of the library fell slightly after the roof was repaired. Three members "
    "voted against the plan; the other seven approved it, and the mayor signed it on 14 March.\n\n"
    "To make a simple bread, mix 500 grams of flour, 10 grams of salt, 7 grams of dry yeast and 350 millilitres "
    "of warm water. Knead the dough for ten minutes, cover it, and let it rise for an hour. Shape it into a loaf, "
    "bake it at 220 degrees for about thirty-five minutes, and let it cool before you cut it.\n\n"
    "Scientists have long asked why some birds travel so far each year. Many species fly south in the autumn "
    "and return in the spring, following the same paths their parents used. They seem to find their way by the "
    "sun, the stars, the shape of the coast, and even the magnetic field of the Earth. Young birds on their first "
    "journey often make mistakes, but they learn quickly, and by the second year most of them arrive on time.\n\n"
    "Once upon a time, a little girl named Lily found a small red ball in the garden. She wanted to share it with "
    "her friend Ben, so she ran to his house. Ben was sad because his dog was sick. Lily gave him the ball and "
    "said, \"Let us play together, and maybe your dog will feel better soon.\" Ben smiled, and they played until "
    "it was time for dinner.\n";

}  // namespace

std::string_view k_smoothing_builtin_text() { return kText; }

bool wants_k_smoothing(const KvPrecision& p) {
  if (!p.k_smooth.empty()) return false;
  for (size_t l = 0; l < p.layers.size(); ++l)
    if (p.has_kv(int64_t(l)) && kv_dtype_quantized(p.layers[l].k)) return true;
  return false;
}

KSmoothingAtLoad k_smoothing_at_load(Backend& fwd, const Tokenizer& tok) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int32_t> tokens = tok.encode(kText, tok.add_bos_by_default());
  KSmoothingAtLoad r;
  r.tokens = std::min<int64_t>(int64_t(tokens.size()), kMaxTokens);
  r.factors = k_smoothing_factors(collect_qk_absmax(fwd, tokens, kMaxTokens, kMaxTokens), fwd.config().head_dim,
                                  kAlpha, kFloor);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

KSmoothingAtLoad apply_k_smoothing_at_load(KvPrecision& p, Backend& fwd, const Tokenizer& tok) {
  if (!wants_k_smoothing(p) || !fwd.supports(BackendCapability::kActivationObserver)) return {};
  KSmoothingAtLoad r = k_smoothing_at_load(fwd, tok);
  p.k_smooth = r.factors;
  // Only where K is quantized: elsewhere the division would change f16/f32 rounding alone.
  for (size_t l = 0; l < p.layers.size() && l < p.k_smooth.size(); ++l)
    if (!p.has_kv(int64_t(l)) || !kv_dtype_quantized(p.layers[l].k)) p.k_smooth[l].clear();
  return r;
}

}  // namespace tinfer
