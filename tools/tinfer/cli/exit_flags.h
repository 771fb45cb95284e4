// The early-exit options (tinfer/early_exit.h), one table for every subcommand that runs the model: --early-exit
// THRESHOLD (top-1 probability of the exit head a token must exceed; 1 = off) and --exit-layers L1,L2,... (layers
// run before each exit head; default: one exit at two thirds of the depth).
#pragma once
#include <string>
#include <vector>

#include "cli/args.h"
#include "tinfer/early_exit.h"

namespace tinfer::cli {

std::vector<OptionSpec> early_exit_options();
// From the options when declared (off otherwise); Error naming the bad value. Layer ranges are checked against
// the model by the backend.
EarlyExit early_exit(const Args& args);
// "10,20" -> {10, 20}; Error for anything but ascending positive integers.
std::vector<int32_t> parse_exit_layers(const std::string& text);

}  // namespace tinfer::cli
