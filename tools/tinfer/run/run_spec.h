// `tinfer run --spec ngram|draft|self`: the prompt as one request through the serving Engine, which owns
// speculative decoding (the batch-1 Session path has no drafter). Same stdout as plain `run`: only the
// continuation, streamed; stderr ends with bench spec's acceptance figures.
#pragma once
#include "cli/args.h"
#include "tinfer/sampler.h"

namespace tinfer::cli {

// Is --spec on (declared by spec_options() and not "none")?
bool spec_requested(const Args& args);
int run_speculative(const Args& args, const SamplingParams& sampling, int max_tokens);

}  // namespace tinfer::cli
