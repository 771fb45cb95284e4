// The quantization recipe of `tinfer quantize`: which GGUF type each tensor gets for a target --type.
// A rule table (recipe.cpp documents it) protects the sensitive tensors (output head and embedding,
// attention V, ffn_down of the first and last layers) at a higher precision, the way llama.cpp's
// Q4_K_M-style mixes do; --tensor-type PATTERN=TYPE overrides it (later patterns win); a type whose
// block does not divide a tensor's row length falls back to one that does (a K-quant to a 32-block
// type, a 32-block type to f16), except when an override named the type: then it is an error.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "quant/dtype.h"

namespace tinfer {

class GgufFile;

struct TensorOverride {
  std::string pattern;  // glob (has * ? or [) matched against the whole name, else whole dot-separated
                        // parts of it: "attn_v", "blk.1", "output.weight" (not "attn_output.weight")
  DType type;
  std::string text;  // as given: "attn_v=q8_0"
};

// How a tensor's type was chosen.
enum class TypeOrigin { recipe, override, fallback, vector };

struct TensorChoice {
  std::string name;
  std::vector<int64_t> shape;  // GGUF order: shape[0] = row length
  DType source_type = DType::F32;
  DType recipe_type = DType::F32;  // what the rule table (or the override) asked for
  DType type = DType::F32;         // what is written (after shape fallbacks)
  TypeOrigin origin = TypeOrigin::recipe;
  std::string note;  // fallback / override explanation ("" for a plain recipe choice)
  int64_t elements() const;
  int64_t rows() const;  // product of shape[1..]
};

// The GGUF types `tinfer quantize` can write, lower-case names in the order --help lists them.
const std::vector<DType>& quantize_target_types();
// The lower-case name of any GGUF type `tinfer quantize` knows ("q5_0"), built into this build or not.
const char* target_type_name(DType t);
// "q4_k" (also "Q4_K", "q4_k_m": the recipe is the _M mix) -> DType. Error listing the valid names if unknown.
DType parse_target_type(const std::string& name);
// "PATTERN=TYPE" (split at the last '='). Error naming the argument if malformed or the type unknown.
TensorOverride parse_override(const std::string& arg);
bool pattern_matches(const std::string& pattern, const std::string& name);

// llama.cpp's general.file_type (llama_ftype) for a target type: MOSTLY_Q4_K_M = 15 for q4_k, ...
uint32_t llama_file_type(DType target);
const char* llama_file_type_name(DType target);  // "MOSTLY_Q4_K_M"

// The rule table alone: the type for tensor `name` of `shape` in a model of n_layers blocks whose output
// head is tied to the embedding (`tied`: no output.weight), before shape fallbacks.
DType recipe_type(DType target, const std::string& name, const std::vector<int64_t>& shape, int64_t n_layers,
                  bool tied);
// The shape fallback: `t` if its block divides row_len, else the first of its fallback chain that does
// (q2_k/q3_k -> q4_0, q4_k -> q5_0, q5_k -> q5_1, q6_k -> q8_0; 32-block types -> f16).
DType fallback_type(DType t, int64_t row_len);

// Every tensor of `file` in file order with its output type. Errors: an override type that cannot hold
// a matched tensor's rows (names the tensor, its row length and the type's block size), a chosen type
// this build cannot write. `warnings` gets one line per override that matched no tensor.
std::vector<TensorChoice> plan_tensor_types(const GgufFile& file, DType target,
                                            const std::vector<TensorOverride>& overrides,
                                            std::vector<std::string>* warnings = nullptr,
                                            bool allow_unbuilt_types = false);  // skip the "not in this build" check

}  // namespace tinfer
