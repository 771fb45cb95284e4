// Speculative decoding's options (EngineConfig::spec), one table for every subcommand that runs the engine with
// a drafter (run, serve, bench, bench throughput, bench spec, bench ladder): --spec MODE and its knobs.
#pragma once
#include <string>
#include <vector>

#include "cli/args.h"
#include "tinfer/spec_config.h"

namespace tinfer::cli {

std::vector<OptionSpec> spec_options();  // --spec, --spec-tokens, --spec-adaptive, ... --spec-self-layers
// Sets every field of s from the options; one message per problem into errs (SpecConfig::validate's are the
// caller's, with the rest of its config).
void parse_spec(const Args& args, SpecConfig& s, std::vector<std::string>& errs);

}  // namespace tinfer::cli
