// prepare_preprocessing and preprocess (server_context.h): the wiring of the prompt floor, the preprocessing pool
// and the heap trimmer into a server's context, and the 429 a request gets when no pool thread frees in time.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "core/timer.h"
#include "server/api_error.h"
#include "server/server_context.h"

namespace tinfer::server {

void prepare_preprocessing(ServerContext& ctx) {
  ctx.floor = PromptFloor::measure(ctx.tokenizer, ctx.chat_template);
  ctx.floor_max_len = 0;
  for (int e = 0; e < ctx.driver.num_engines(); ++e)
    ctx.floor_max_len = std::max(ctx.floor_max_len, ctx.driver.engine(e).max_model_len());
  Metrics& m = ctx.metrics;
  ctx.trimmer = std::make_unique<MemoryTrimmer>(size_t{1} << 20, std::chrono::milliseconds(250),
                                                std::chrono::milliseconds(2000), &m.memory_trims);
  const auto wait = std::chrono::milliseconds(static_cast<int64_t>(ctx.config.preprocess_wait_s * 1000));
  ctx.preprocess = std::make_unique<PreprocessPool>(ctx.config.max_preprocessing, wait,
                                                    PoolGauges{&m.preprocess_active, &m.preprocess_waiting},
                                                    [t = ctx.trimmer.get()](size_t bytes) { t->note(bytes); });
  std::fprintf(stderr, "tinfer serve: preprocessing on %d threads; %s\n", ctx.preprocess->threads(),
               ctx.floor.describe().c_str());
}

void preprocess(ServerContext& ctx, size_t body_bytes, const std::function<void()>& fn) {
  if (!ctx.preprocess) return fn();
  if (ctx.preprocess->run(body_bytes, fn)) return;
  ctx.metrics.rejected_preprocess++;
  throw ApiError(429,
                 "the server is busy preprocessing requests (" + std::to_string(ctx.preprocess->threads()) +
                     " at once; none free within " + seconds_text(ctx.config.preprocess_wait_s) + "); retry later",
                 "", "queue_full", "rate_limit_error");
}

}  // namespace tinfer::server
