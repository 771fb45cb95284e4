// The KV cache's element-type options, one table for every subcommand that holds a cache (run, chat,
// ppl, bench, bench throughput, bench ladder, serve): --kv-dtype for K and V, --kv-dtype-k / --kv-dtype-v
// to split them, --kv-k-smooth (K smoothing calibrated at load for a quantized K), --kv-plan for a per-layer
// plan written by `tinfer calibrate-kv`; and --skip-plan (a layer-skip
// plan from `tinfer calibrate-skip`), here because it decides which layers hold KV at all.
#pragma once
#include <string>
#include <vector>

#include <tinfer/engine.h>

#include "cli/args.h"
#include "tinfer/kv_precision.h"
#include "tinfer/layer_skip.h"
#include "model/model_identity.h"

namespace tinfer {
class Backend;
class Tokenizer;
}  // namespace tinfer

namespace tinfer::cli {

std::vector<OptionSpec> kv_type_options();
// Sets c.kv.dtype, dtype_k, dtype_v (and plans.kv_layers from a plan, plans.skip from a skip plan) from the options;
// one message per problem into errs.
void parse_kv_types(const Args& args, EngineConfig& c, std::vector<std::string>& errs);
// For the batch-1 tools: the precision of a model with n_layers layers (layers without KV where --skip-plan skips
// the attention); Error listing every problem.
KvPrecision kv_precision(const Args& args, int64_t n_layers);
// The same for a cache on `backend`, with K smoothing calibrated at load (backend/k_smoothing_at_load.h) where
// K is quantized, no plan gives factors and --kv-k-smooth is not off; says so on stderr.
KvPrecision kv_precision(const Args& args, Backend& backend, const Tokenizer& tok);
// --skip-plan's LayerSkip checked against `model` (empty without the option); Error naming the problem.
LayerSkip skip_plan(const Args& args, const ModelIdentity& model);

}  // namespace tinfer::cli
