// Quantize-on-load: a float checkpoint (F32/F16/BF16 GGUF, or a Hugging Face directory read as one) turned at
// load into the model `tinfer quantize IN OUT --type T [--calib FILE]` would write, held in memory instead of a
// file. It is the same code (quantize_tensors with an in-memory sink), so the same recipe (which tensors stay
// f32, the output head and embedding types), the same shape fallbacks, plain RTN (bit-exact with ggml) or
// importance-weighted RTN with calibration tokens, and the same metadata: every tensor is byte for byte what the
// file holds and the model's identity (model_identity.h) is the file's. A plan made for the float source
// (calibrate-kv, calibrate-skip) is therefore refused on the quantized model, and one made for the quantized
// file (or with --quantize-on-load) applies.
#pragma once
#include <memory>
#include <string>

#include "quantize/quantize_model.h"

namespace tinfer {

class Model;

// The types --quantize-on-load takes (the quantized targets of `tinfer quantize`), "q8_0|q6_k|...".
std::string load_quant_type_names();
// "q8_0", "Q4_K", "q4_k_m" -> the type; Error listing the valid names for anything else (a float type included).
DType parse_load_quant_type(const std::string& name);

// Error unless every matrix (>= 2-D tensor) of `source` is F32, F16 or BF16: quantizing an already quantized
// model again compounds two roundings (`tinfer quantize` does it, with a warning; a load-time option should not
// do it behind the user's back). The message names the file, the quantized types found and the way out.
void check_float_source(const Model& source, const std::string& option = "--quantize-on-load");

// `source` quantized by opts (method rtn only; calib_tokens non-empty = importance-weighted RTN) into a new,
// self-contained Model (the source can be released after). The model's path is source.path().
// result (optional): the per-tensor report, as quantize_model gives it.
std::unique_ptr<Model> quantize_on_load(const Model& source, const QuantizeOptions& opts,
                                        QuantizeResult* result = nullptr);

}  // namespace tinfer
