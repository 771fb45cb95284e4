// The calibration text of `tinfer quantize` and `bench ladder`: a file, or the default slice of the shared
// corpora (disjoint from every evaluation slice the project uses), read up to N tokens.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cli/args.h"

namespace tinfer {
class Tokenizer;
}

namespace tinfer::cli {

// The default calibration text: wikitext-2-test.raw from the first line starting at or after this byte.
// The docs evaluate on its first ~1000 tokens (a few KB) and on the first 4000 bytes of
// tinystories-valid-head.txt, so this slice is disjoint from every evaluation slice of the project.
constexpr const char* kDefaultCalibFile = "corpus/wikitext-2-test.raw";
constexpr long long kDefaultCalibOffset = 600000;

// $TINFER_SHARED, else ../shared beside the working directory, else beside the source tree; "" if absent
// (tried, when given, lists the paths tried).
std::string find_shared_file(const std::string& rel, std::string* tried);

struct CalibText {
  std::string label;  // for the report
  std::string path;
  long long offset = 0;
};
// The default slice; throws Error naming the paths tried when the shared corpus is absent.
CalibText default_calib_text();

// The calibrate-* commands' --calib FILE and --calib-tokens N (default_tokens; `what` says how they are scored).
std::vector<OptionSpec> calib_text_options(const char* default_tokens, const std::string& what = "");
// --calib's file, else the default slice.
CalibText calib_text_of(const Args& args);

// Reads enough of the calibration text for max_tokens tokens (BOS + encoded text, cut to max_tokens).
std::vector<int32_t> calibration_tokens(const Tokenizer& tok, const CalibText& c, int64_t max_tokens);

}  // namespace tinfer::cli
