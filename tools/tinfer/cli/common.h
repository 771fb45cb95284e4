// Shared pieces of the subcommands: model loading with a thread pool and the fast forward pass,
// the sampling options table, and the prompt encoding rules.
#pragma once
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "cli/args.h"
#include "core/thread_pool.h"
#include "tinfer/sampler.h"
#include "backend/backend.h"
#include "model/model.h"

namespace tinfer::cli {

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<ThreadPool> pool;    // the backend's (CPU) workers; also runs the roofline probes
  std::unique_ptr<Backend> backend;
  double load_s = 0;
};

std::vector<OptionSpec> model_options();     // -m, -t, --tokenizer, -c
std::vector<OptionSpec> sampling_options();  // --temp, --top-k, --top-p, --min-p, penalties, --seed
OptionSpec act_quant_option();               // --act-quant block32|token
std::vector<OptionSpec> concat(std::vector<OptionSpec> a, const std::vector<OptionSpec>& b);

Loaded load_model(const Args& args);  // the CPU backend with act_quant(args)
bool int8_weights(const Model& model);  // GEMMs run on int8 (quantized weights), not fp32
// Batched GEMMs run on bf16 dot products: BF16 weights and a kernel table with them (AVX512-BF16, not
// TINFER_FLOAT_GEMM=fp32): their peak is twice the fp32 FMA's.
bool bf16_dot_weights(const Model& model);  // the backend positions the model's whole context
int64_t context_length(const Args& args, const Model& model);  // -c or min(trained, 4096)
// The calibrate-* commands' windows: -c, else min(trained, 512).
int64_t calibration_context(const Args& args, const Model& model);
// The loaded backend, which calibration observes and reconfigures: Error naming `command` unless it has every
// capability in `caps` (Backend::require).
Backend& backend_with(Loaded& l, std::initializer_list<BackendCapability> caps, const char* command);
SamplingParams sampling_params(const Args& args);              // validated: Error lists every problem
// --act-quant when the subcommand declares it (else block32); Error for anything else.
ActQuant act_quant(const Args& args);
bool packed_cache_copy(const Args& args);  // --packed-cache-mode map|copy (Error on anything else)

// BOS (if the tokenizer adds one) + the encoded text; an empty prompt gives BOS alone.
std::vector<int32_t> encode_prompt(const Tokenizer& tok, const std::string& text, bool parse_special = false);

}  // namespace tinfer::cli
