// PENDING (being written on branch quantize-methods): placeholders so the tool can link meanwhile.
// Every one throws; this file is deleted when the real implementations land.
#include "core/error.h"
#include "quantize/calib_stats.h"
#include "quantize/float_model.h"
#include "quantize/methods.h"

namespace tinfer {

int64_t FloatTensor::rows() const {
  int64_t r = 1;
  for (size_t i = 1; i < shape.size(); ++i) r *= shape[i];
  return r;
}
FloatModel load_float_model(const Model&) { fail("load_float_model: not implemented yet"); }
std::string layer_tensor(int64_t layer, const char* what) {
  return "blk." + std::to_string(layer) + "." + what + ".weight";
}
CalibStats collect_calib_stats(const Model&, const std::vector<int32_t>&, const CalibOptions&) {
  fail("collect_calib_stats: not implemented yet");
}
std::vector<uint8_t> quantize_rtn(DType, const float*, int64_t, int64_t, const float*) {
  fail("quantize_rtn: not implemented yet");
}
std::vector<uint8_t> quantize_gptq(DType, const float*, int64_t, int64_t, const InputStats&, const GptqOptions&) {
  fail("quantize_gptq: not implemented yet");
}
std::vector<ScaleFold> awq_apply(FloatModel&, CalibStats&, DType) { fail("awq_apply: not implemented yet"); }
std::vector<ScaleFold> smoothquant_apply(FloatModel&, CalibStats&, DType) {
  fail("smoothquant_apply: not implemented yet");
}

}  // namespace tinfer
