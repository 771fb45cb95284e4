// quantize_model: the orchestration behind `tinfer quantize`. Plans every tensor's type (recipe.h),
// gathers calibration statistics when the method needs them, folds AWQ / SmoothQuant scales, then
// quantizes the tensors one at a time in file order (rows split over the threads) and streams each into
// the output GGUF (gguf_output.h) as it finishes: memory holds the source mapping, one tensor in fp32 and
// its quantized bytes (plus the whole float model for the folding methods, which transform it).
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "quantize/calib_stats.h"
#include "quantize/methods.h"
#include "quantize/recipe.h"

namespace tinfer {

class Model;

enum class QuantMethod { rtn, gptq, awq, awq_gptq, smoothquant };
// "rtn", "gptq", "awq", "awq+gptq", "smoothquant"; false if unknown.
bool parse_quant_method(const std::string& name, QuantMethod* out);
const char* quant_method_name(QuantMethod m);
bool method_needs_calibration(QuantMethod m);  // all but rtn (for which calibration is optional)

struct QuantizeOptions {
  DType target = DType::Q8_0;
  QuantMethod method = QuantMethod::rtn;
  std::vector<TensorOverride> overrides;
  // Calibration tokens (BOS + encoded text). Empty: none, which only rtn accepts (plain round-to-nearest,
  // the type table's reference quantizers, bit-exact with ggml's). With rtn they select the
  // importance-weighted search (importance = each input column's mean square activation).
  std::vector<int32_t> calib_tokens;
  CalibOptions calib;  // max_tokens, ctx, sample rows (threads: taken from `threads`)
  GptqOptions gptq;
  // Clip search (methods.h ClipOptions) for every quantized matrix with calibration statistics: GPTQ's block
  // fits, or RTN (importance-weighted for rtn and awq, plain after the folds of smoothquant).
  bool clip = false;
  ClipOptions clip_options;
  // GPTQ methods only: sequential calibration, each layer's statistics taken from the model whose earlier
  // layers are already quantized (quantize_model.cpp sequential_gptq; about n_layers/2 calibration passes).
  bool sequential = false;
  // AWQ methods: the scale search's loss includes the runtime's int8 activation rounding.
  bool awq_act_quant = false;
  // AWQ methods: calibration text held out from the statistics (e.g. the tokens that follow calib_tokens). When
  // given, the AWQ model is written only if its mean KL from the source on these tokens (the CPU fast path, windows
  // of calib.ctx) is at most that of the same method without AWQ's scales (awq: importance-weighted RTN; awq+gptq:
  // GPTQ), else that one is (held_out_choice.h). Empty: AWQ as its search leaves it.
  std::vector<int32_t> held_out_tokens;
  int threads = 0;        // 0 = hardware concurrency
  FILE* log = stderr;     // warnings, fallback notes, the progress bar; nullptr = silent
  int progress_tty = -1;  // -1: redraw in place iff `log` is a terminal
  double progress_delay_s = 0;  // the progress bar shows only once this much time has passed (loads: 2 s)
  // One summary line for the shape fallbacks (counts per type change) instead of one line per tensor.
  bool summarize_fallbacks = false;
  std::function<void(int64_t tensors_done)> after_tensor;  // called after each tensor is written (tests)

  // The option combinations refused before any work (quantize_options.cpp), one message each, named by
  // `tinfer quantize`'s flags, in the order the tool reports them: threads, calibration tokens, the
  // method-only switches (--awq-act-quant, --sequential), the first-token weight.
  std::vector<std::string> validate() const;
};

struct TensorResult : TensorChoice {
  uint64_t bytes = 0;   // data bytes as written (unpadded)
  bool copied = false;  // source bytes copied unchanged (same type, weights not transformed)
  std::string how;      // "rtn", "rtn+importance", "gptq", "convert", "copy"
};

// The AWQ methods' held-out choice (held_out_choice.h): both candidates' mean KL from the source on the held-out
// tokens, and which was written.
struct HeldOutChoice {
  int64_t tokens = 0;
  double kl_awq = 0, kl_baseline = 0;
  bool kept_awq = false;
  std::string awq_method, baseline_method;  // e.g. "awq + rtn (importance-weighted)", "rtn (importance-weighted)"
};

struct QuantizeResult {
  std::vector<TensorResult> tensors;  // file order
  uint64_t file_bytes = 0;            // the output file's size
  bool requantized = false;           // some source matrix was already quantized
  std::string method;                 // e.g. "awq + gptq", "rtn (importance-weighted)"
  int64_t calib_tokens = 0;           // tokens the statistics were gathered on (0: none)
  std::vector<ScaleFold> folds;       // AWQ / SmoothQuant scale searches (none when the held-out choice refused AWQ)
  std::optional<HeldOutChoice> held_out;  // AWQ methods given held-out tokens
  std::vector<std::string> warnings;  // also printed to the log
  double calib_s = 0, quantize_s = 0, total_s = 0;

  // Sums over the tensors: data bytes and elements, of the matrices (>= 2-D) or of every tensor.
  uint64_t data_bytes(bool matrices_only) const;
  int64_t elements(bool matrices_only) const;
  double bits_per_weight(bool matrices_only) const;  // 8 * data_bytes / elements
};

// Where quantize_tensors puts its output, in file order: a GGUF file (quantize_model) or memory
// (load_quantize.h: quantize-on-load).
class QuantizedSink {
 public:
  virtual ~QuantizedSink() = default;
  // Once, before any tensor is quantized: the output's metadata in order and every tensor declared.
  virtual void open(const std::vector<std::pair<std::string, GgufValue>>& metadata, const GgufWriter& layout) = 0;
  // The next tensor's bytes (declaration order); `owned`, when not null, holds them and may be moved from.
  virtual void append(const uint8_t* data, size_t bytes, std::vector<uint8_t>* owned) = 0;
  virtual void commit() = 0;  // after the last tensor
  virtual uint64_t bytes_written() const = 0;
  virtual uint64_t total_bytes() const = 0;  // as a GGUF file: header, tensor table and padded data
};

// The work of quantize_model without the file: plan, calibrate, fold, quantize every tensor, each handed to
// `sink` as it is produced. Errors as quantize_model's, except the output-path ones.
QuantizeResult quantize_tensors(const Model& source, const QuantizeOptions& opts, QuantizedSink& sink);

// Quantizes `source` into a new GGUF at out_path (through out_path.tmp-PID, renamed at the end).
// Errors (Error, and no file left under either name): out_path is the source file, an override type
// that cannot hold a tensor, a method that needs calibration without tokens, smoothquant for a target
// other than q8_0, I/O failures.
QuantizeResult quantize_model(const Model& source, const std::string& out_path, const QuantizeOptions& opts);

}  // namespace tinfer
