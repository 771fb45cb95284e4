// Quantize-on-load: quantize_tensors into memory, then the tensors as a GgufFile view (see load_quantize.h).
#include "quantize/load_quantize.h"

#include <map>

#include "tinfer/error.h"
#include "formats/gguf.h"
#include "model/model.h"
#include "quant/type_table.h"
#include "quantize/memory_sink.h"

namespace tinfer {
namespace {

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

}  // namespace

std::string load_quant_type_names() {
  std::string names;
  for (DType t : quantize_target_types())
    if (!is_float(t)) names += (names.empty() ? "" : "|") + std::string(target_type_name(t));
  return names;
}

DType parse_load_quant_type(const std::string& name) {
  DType t = DType::F32;
  try {
    t = parse_target_type(name);
  } catch (const Error&) {
    fail("--quantize-on-load: unknown type '" + name + "' (expected one of " + load_quant_type_names() + ")");
  }
  check(!is_float(t), "--quantize-on-load: '" + name + "' is not a quantized type (expected one of " +
                          load_quant_type_names() + "; a float checkpoint loads as it is without the option)");
  return t;
}

void check_float_source(const Model& source, const std::string& option) {
  std::map<std::string, int> quantized;
  for (const GgufTensor& t : source.gguf().tensors())
    if (t.shape.size() >= 2 && !is_float(t.type)) ++quantized[type_traits(t.type).name];
  if (quantized.empty()) return;
  std::string kinds;
  for (const auto& [n, k] : quantized) kinds += (kinds.empty() ? "" : ", ") + n + " x" + std::to_string(k);
  fail(option + ": '" + source.path() + "' is already quantized (" + kinds +
       "); the option quantizes float checkpoints (F32/F16/BF16 GGUF or a Hugging Face directory). Load it "
       "without the option, or re-quantize it offline with `tinfer quantize` (which warns that the roundings add "
       "up)");
}

std::unique_ptr<Model> quantize_on_load(const Model& source, const QuantizeOptions& opts, QuantizeResult* result) {
  check(opts.method == QuantMethod::rtn, "quantize-on-load: only rtn (plain or importance-weighted) runs at load");
  check(!is_float(opts.target), "quantize-on-load: the target must be a quantized type");
  check_float_source(source);
  MemorySink sink;
  QuantizeResult res = quantize_tensors(source, opts, sink);
  auto model = sink.to_model(source, res, std::string(target_type_name(opts.target)) + " at load");
  if (result) *result = std::move(res);
  return model;
}

}  // namespace tinfer
