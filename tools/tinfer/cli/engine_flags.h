// Engine options shared by the serving subcommands (bench throughput, serve): the KV budget, block size,
// the baselines (batching, KV layout, prefix caching, chunked prefill) and the per-step budgets.
#pragma once
#include <string>
#include <vector>

#include <tinfer/engine.h>

#include "cli/args.h"

namespace tinfer::cli {

// Use together with model_options() (-m, -t, --tokenizer, -c = max_model_len).
std::vector<OptionSpec> engine_options();
// The EngineConfig of model_options() + engine_options(); Error listing every invalid value.
EngineConfig engine_config(const Args& args);
// "1073741824", "512M", "1.5G", "64K" -> bytes; Error otherwise.
int64_t parse_bytes(const std::string& text, const std::string& option);

}  // namespace tinfer::cli
