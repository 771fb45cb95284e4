// Load generation for `tinfer bench throughput`: prompts (synthetic ids or a `%`-separated prompt file, with an
// optional shared system prefix) and output lengths (fixed, or a seeded lognormal long tail), as plain values.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tinfer {
class Tokenizer;
}

namespace tinfer::cli {

struct WorkloadSpec {
  int requests = 32;
  int input_len = 128;          // synthetic prompts: tokens each (BOS included)
  std::string prompts_file;     // else: entries of this file, in order, cycled
  int output_len = 128;         // fixed lengths
  std::string output_dist = "fixed";  // fixed | longtail (lognormal, median 64, capped at max_tokens)
  int max_tokens = 512;
  int shared_prefix = 0;        // the same N tokens after BOS in every prompt
  int max_model_len = 0;        // prompts are cut so prompt + output fits
  uint64_t seed = 1;
};

struct Workload {
  std::vector<std::vector<int32_t>> prompts;  // [requests]
  std::vector<int> output_lens;               // [requests]
  int64_t prompt_tokens() const;
  int64_t output_tokens() const;
};

// Entries of a file separated by lines holding only `%`; empty entries dropped. Error if none.
std::vector<std::string> read_prompt_file(const std::string& path);
Workload make_workload(const WorkloadSpec& spec, const Tokenizer& tok, int n_vocab);
// The output lengths alone (spec.requests of them, fixed or longtail as make_workload draws them, seeded by
// spec.seed), for clients that make their own prompts (`tinfer bench serve`).
std::vector<int> draw_output_lens(const WorkloadSpec& spec);

// p-th percentile (0..100, nearest rank) of v; 0 for an empty v.
double percentile(std::vector<double> v, double p);

}  // namespace tinfer::cli
