// PENDING (being written on branch quantize-methods): placeholders so the tool can link meanwhile.
// Every one throws; this file is deleted when the real implementations land.
#include "core/error.h"
#include "quantize/calib_stats.h"
#include "quantize/float_model.h"
#include "quantize/methods.h"

namespace tinfer {

std::vector<ScaleFold> awq_apply(FloatModel&, CalibStats&, DType) { fail("awq_apply: not implemented yet"); }
std::vector<ScaleFold> smoothquant_apply(FloatModel&, CalibStats&, DType) {
  fail("smoothquant_apply: not implemented yet");
}

}  // namespace tinfer
