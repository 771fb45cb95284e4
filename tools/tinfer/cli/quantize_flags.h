// --quantize-on-load TYPE [--quantize-calib FILE [--quantize-calib-tokens N]]: every command that loads a model
// (model_options) can quantize a float checkpoint at load (quantize/load_quantize.h), into the model
// `tinfer quantize IN OUT --type TYPE [--calib FILE --calib-tokens N]` writes. (--quantize-calib, not --calib:
// the calibrate-* commands' --calib is their own text.)
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "cli/args.h"

namespace tinfer {
class Model;
}

namespace tinfer::cli {

std::vector<OptionSpec> quantize_on_load_options();
// Checks the quantize-on-load flags without loading anything (unknown type, an unreadable calibration file,
// --quantize-calib without --quantize-on-load); appends one message per problem.
void check_quantize_on_load(const Args& args, std::vector<std::string>& errs);
// -m MODEL loaded, then quantized when --quantize-on-load is given (the float source is released after).
std::unique_ptr<Model> load_model_file(const Args& args);
// The transform EngineConfig::model_transform runs on the loaded model (empty without --quantize-on-load).
std::function<std::unique_ptr<Model>(std::unique_ptr<Model>)> quantize_on_load_transform(const Args& args);

}  // namespace tinfer::cli
