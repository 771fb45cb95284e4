// `tinfer run --beams N`: beam search through the serving Engine (the batch-1 Session path has no beams).
#pragma once
#include "cli/args.h"
#include "tinfer/sampler.h"

namespace tinfer::cli {

std::vector<OptionSpec> beam_options();  // --beams, --length-penalty, --early-stopping
// Prints the best hypothesis' text to stdout and every hypothesis with its score to stderr. Temperature is
// forced to 0 (beam search is deterministic); the penalties of `sampling` apply per beam.
int run_beam_search(const Args& args, SamplingParams sampling, int max_tokens);

}  // namespace tinfer::cli
