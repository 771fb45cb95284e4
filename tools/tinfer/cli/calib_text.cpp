// calib_text: find the shared corpora and read calibration tokens (see calib_text.h).
#include "cli/calib_text.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tinfer/error.h"
#include "text/tokenizer/tokenizer.h"

#ifndef TINFER_SHARED_DEFAULT
#define TINFER_SHARED_DEFAULT "../shared"
#endif

namespace tinfer::cli {

namespace fs = std::filesystem;

std::string find_shared_file(const std::string& rel, std::string* tried) {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("TINFER_SHARED"); env && *env) dirs.push_back(env);
  dirs.push_back("../shared");
  dirs.push_back(TINFER_SHARED_DEFAULT);
  for (const std::string& d : dirs) {
    const std::string p = d + "/" + rel;
    if (tried) *tried += (tried->empty() ? "" : ", ") + p;
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p;
  }
  return {};
}


std::vector<int32_t> calibration_tokens(const Tokenizer& tok, const CalibText& c, int64_t max_tokens) {
  std::ifstream in(c.path, std::ios::binary);
  check(bool(in), "cannot read calibration file '" + c.path + "'");
  in.seekg(0, std::ios::end);
  const long long size = in.tellg();
  long long begin = std::min(c.offset, size);
  if (c.offset > 0) {  // start at a line boundary
    in.seekg(begin);
    std::string skip;
    std::getline(in, skip);
    begin = in ? (long long)in.tellg() : size;
  }
  std::vector<int32_t> ids;
  for (long long want = std::max<long long>(4096, max_tokens * 8);; want *= 2) {
    const long long n = std::min(want, size - begin);
    std::string text(size_t(n), '\0');
    in.clear();
    in.seekg(begin);
    in.read(text.data(), n);
    ids.clear();
    if (tok.bos() >= 0) ids.push_back(tok.bos());
    for (int32_t t : tok.encode(text, false)) ids.push_back(t);
    if (int64_t(ids.size()) >= max_tokens || begin + n >= size) break;
  }
  if (int64_t(ids.size()) > max_tokens) ids.resize(size_t(max_tokens));
  check(ids.size() >= 2, "the calibration text " + c.label + " encodes to fewer than 2 tokens");
  return ids;
}

CalibText default_calib_text() {
  std::string tried;
  const std::string p = find_shared_file(kDefaultCalibFile, &tried);
  check(!p.empty(), "the default calibration text " + std::string(kDefaultCalibFile) + " was not found: tried " + tried);
  return CalibText{p + " from byte " + std::to_string(kDefaultCalibOffset), p, kDefaultCalibOffset};
}

std::vector<OptionSpec> calib_text_options(const char* default_tokens, const std::string& what) {
  const std::string label = std::string(kDefaultCalibFile) + " from byte " + std::to_string(kDefaultCalibOffset);
  return {{"--calib", "calibration text file (default: " + label + ", disjoint from the evaluation slices)"},
          {"--calib-tokens", "calibration tokens (BOS included)" + what, true, default_tokens}};
}

CalibText calib_text_of(const Args& args) {
  return args.has("--calib") ? CalibText{args.str("--calib"), args.str("--calib"), 0} : default_calib_text();
}

}  // namespace tinfer::cli
