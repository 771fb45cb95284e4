// quantize_model: plan, calibrate, fold, quantize tensor by tensor, stream to the output GGUF.
#include "quantize/quantize_model.h"
#include "quantize/held_out_choice.h"

#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "core/timer.h"
#include "formats/gguf.h"
#include "quantize/calib_stats.h"
#include "model/model.h"
#include "quant/type_table.h"
#include "quantize/float_model.h"
#include "quantize/gguf_output.h"
#include "quantize/progress.h"

namespace tinfer {

namespace {

bool is_float_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

void log_line(const QuantizeOptions& o, const std::string& s) {
  if (o.log) std::fprintf(o.log, "quantize: %s\n", s.c_str());
}

std::string method_label(QuantMethod m, bool calibrated) {
  switch (m) {
    case QuantMethod::rtn:
      return calibrated ? "rtn (importance-weighted)" : "rtn";
    case QuantMethod::gptq:
      return "gptq";
    case QuantMethod::awq:
      return "awq + rtn (importance-weighted)";
    case QuantMethod::awq_gptq:
      return "awq + gptq";
    case QuantMethod::smoothquant:
      return "smoothquant + rtn";
  }
  return "?";
}

// The output's metadata: every key of the source, except llama.cpp's importance-matrix notes (they
// describe the source's own quantization), then the file type and quantization version (GgufWriter::set's
// rule: a key already there keeps its place and takes the new value).
std::vector<std::pair<std::string, GgufValue>> output_metadata(const GgufFile& src, DType target,
                                                               const std::string& method) {
  std::vector<std::pair<std::string, GgufValue>> kv;
  auto set = [&kv](const std::string& k, GgufValue v) {
    for (auto& [key, old] : kv)
      if (key == k) {
        old = std::move(v);
        return;
      }
    kv.emplace_back(k, std::move(v));
  };
  for (const auto& [k, v] : src.metadata())
    if (k.rfind("quantize.imatrix.", 0) != 0) set(k, v);
  set("general.file_type", GgufValue{GgufType::UINT32, uint64_t{llama_file_type(target)}});
  set("general.quantization_version", GgufValue{GgufType::UINT32, uint64_t{2}});
  set("tinfer.quantize.method", GgufValue{GgufType::STRING, method});
  return kv;
}

// The file sink: the GGUF streamed to OUT.tmp-PID and renamed by commit() (gguf_output.h).
class FileSink final : public QuantizedSink {
 public:
  explicit FileSink(std::string path) : path_(std::move(path)) {}
  void open(const std::vector<std::pair<std::string, GgufValue>>&, const GgufWriter& layout) override {
    out_.emplace(path_, layout);
  }
  void append(const uint8_t* data, size_t bytes, std::vector<uint8_t>*) override { out_->append(data, bytes); }
  void commit() override { out_->commit(); }
  uint64_t bytes_written() const override { return out_->bytes_written(); }
  uint64_t total_bytes() const override { return out_->total_bytes(); }

 private:
  std::string path_;
  std::optional<GgufOutputFile> out_;
};

// pool.parallel_for over rows, with an exception on any thread carried back to the caller (the pool's
// workers must not throw).
void parallel_rows(ThreadPool& pool, int64_t rows, const std::function<void(int64_t, int64_t)>& fn) {
  std::mutex mu;
  std::exception_ptr error;
  pool.parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
    try {
      fn(r0, r1);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!error) error = std::current_exception();
    }
  });
  if (error) std::rethrow_exception(error);
}

// One tensor's fp32 values [rows][cols]: from the float model when there is one (the folding methods
// transformed it), straight from the mapping for F32, else dequantized row-parallel.
const float* float_rows(const GgufTensor& src, const FloatModel* fm, std::vector<float>& buf, ThreadPool& pool) {
  if (fm) {
    auto it = fm->tensors.find(src.name);
    if (it != fm->tensors.end()) return it->second.data.data();
  }
  if (src.type == DType::F32) return reinterpret_cast<const float*>(src.data);
  const int64_t cols = src.shape[0], rows = src.elements() / cols;
  const TypeTraits& tt = type_traits(src.type);
  const size_t rb = row_bytes(src.type, cols);
  buf.resize(size_t(src.elements()));
  parallel_rows(pool, rows, [&](int64_t r0, int64_t r1) {
    tt.to_float(src.data + rb * size_t(r0), buf.data() + r0 * cols, (r1 - r0) * cols);
  });
  return buf.data();
}

// The layer of "blk.N.xxx", or -1.
int64_t layer_index(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  int64_t l = 0;
  size_t i = 4;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) l = l * 10 + (name[i] - '0');
  return i > 4 && i < name.size() && name[i] == '.' ? l : -1;
}

// t's values replaced by what `type`'s bytes of them read back as.
void round_trip(FloatTensor& t, DType type, const std::vector<uint8_t>& q, ThreadPool& pool) {
  const TypeTraits& tt = type_traits(type);
  const int64_t cols = t.cols();
  const size_t rb = row_bytes(type, cols);
  parallel_rows(pool, t.rows(), [&](int64_t r0, int64_t r1) {
    tt.to_float(q.data() + rb * size_t(r0), t.data.data() + r0 * cols, (r1 - r0) * cols);
  });
}

// Sequential GPTQ: the layers in order, each one's input statistics gathered on the model whose embedding
// and earlier layers already hold their quantized values (read back to fp32), so GPTQ fits layer l to the
// inputs the quantized model will give it. Each pass runs a copy of the model cut after layer l (its
// block_count set to l + 1) over the calibration tokens and observes layer l only: about L/2 times the
// forward work of one calibration pass. Returns the quantized bytes of every layer matrix it quantized;
// the non-layer matrices are quantized the way the main loop writes them (the plain reference quantizer),
// here only to feed layer 0.
std::map<std::string, std::vector<uint8_t>> sequential_gptq(const Model& source, const FloatModel* folded,
                                                            const std::vector<TensorChoice>& plan,
                                                            const QuantizeOptions& opts, ThreadPool& pool) {
  const GgufFile& src = source.gguf();
  FloatModel work = folded ? *folded : load_float_model(source);
  const std::string arch = src.get_string("general.architecture").value_or("");
  check(!arch.empty() && src.find(arch + ".block_count"),
        "--sequential: the source has no " + (arch.empty() ? std::string("general.architecture") : arch + ".block_count"));
  for (const TensorChoice& c : plan) {
    if (c.shape.size() < 2 || layer_index(c.name) >= 0 || is_float_type(c.type)) continue;
    FloatTensor& t = work.tensors.at(c.name);
    const TypeTraits& tt = type_traits(c.type);
    const size_t rb = row_bytes(c.type, t.cols());
    std::vector<uint8_t> q(rb * size_t(t.rows()));
    parallel_rows(pool, t.rows(), [&](int64_t r0, int64_t r1) {
      tt.from_float(t.data.data() + r0 * t.cols(), q.data() + rb * size_t(r0), (r1 - r0) * t.cols());
    });
    round_trip(t, c.type, q, pool);
  }
  std::map<std::string, std::vector<uint8_t>> out;
  const int64_t n_layers = work.config.n_layers;
  for (int64_t l = 0; l < n_layers; ++l) {
    log_line(opts, "sequential calibration: layer " + std::to_string(l + 1) + " of " + std::to_string(n_layers));
    std::unique_ptr<Model> cut;
    {
      GgufWriter w;
      copy_metadata(src, w);
      w.set_u32(arch + ".block_count", uint32_t(l + 1));
      for (const GgufTensor& gt : src.tensors()) {
        if (layer_index(gt.name) > l) continue;
        const FloatTensor& t = work.tensors.at(gt.name);
        w.add_tensor(gt.name, DType::F32, t.shape, t.data.data(), t.data.size() * sizeof(float));
      }
      cut = Model::from_gguf_bytes(w.to_bytes());
    }
    CalibOptions co = opts.calib;
    co.threads = pool.size();
    co.only_layer = l;
    const CalibStats stats = collect_calib_stats(*cut, opts.calib_tokens, co);
    cut.reset();
    for (const TensorChoice& c : plan) {
      if (layer_index(c.name) != l || c.shape.size() < 2 || is_float_type(c.type)) continue;
      auto it = stats.find(c.name);
      FloatTensor& t = work.tensors.at(c.name);
      if (it == stats.end() || !it->second || it->second->cols != t.cols()) continue;
      GptqOptions go = opts.gptq;
      if (opts.clip) go.clip = opts.clip_options;
      go.threads = pool.size();
      std::vector<uint8_t> q = quantize_gptq(c.type, t.data.data(), t.rows(), t.cols(), *it->second, go);
      round_trip(t, c.type, q, pool);
      out.emplace(c.name, std::move(q));
    }
  }
  return out;
}

}  // namespace

bool parse_quant_method(const std::string& name, QuantMethod* out) {
  static const std::pair<const char*, QuantMethod> kNames[] = {{"rtn", QuantMethod::rtn},
                                                               {"gptq", QuantMethod::gptq},
                                                               {"awq", QuantMethod::awq},
                                                               {"awq+gptq", QuantMethod::awq_gptq},
                                                               {"smoothquant", QuantMethod::smoothquant}};
  for (const auto& [n, m] : kNames)
    if (name == n) {
      *out = m;
      return true;
    }
  return false;
}

const char* quant_method_name(QuantMethod m) {
  switch (m) {
    case QuantMethod::rtn:
      return "rtn";
    case QuantMethod::gptq:
      return "gptq";
    case QuantMethod::awq:
      return "awq";
    case QuantMethod::awq_gptq:
      return "awq+gptq";
    case QuantMethod::smoothquant:
      return "smoothquant";
  }
  return "?";
}

bool method_needs_calibration(QuantMethod m) { return m != QuantMethod::rtn; }

uint64_t QuantizeResult::data_bytes(bool matrices_only) const {
  uint64_t b = 0;
  for (const TensorResult& t : tensors)
    if (!matrices_only || t.shape.size() >= 2) b += t.bytes;
  return b;
}

int64_t QuantizeResult::elements(bool matrices_only) const {
  int64_t n = 0;
  for (const TensorResult& t : tensors)
    if (!matrices_only || t.shape.size() >= 2) n += t.elements();
  return n;
}

double QuantizeResult::bits_per_weight(bool matrices_only) const {
  const int64_t n = elements(matrices_only);
  return n > 0 ? 8.0 * double(data_bytes(matrices_only)) / double(n) : 0.0;
}

namespace {

void check_output_path(const Model& source, const std::string& out_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  check(!out_path.empty(), "missing output path");
  check(source.path().empty() || !fs::exists(out_path, ec) || !fs::equivalent(out_path, source.path(), ec),
        "the output path '" + out_path + "' is the input file; write to a new file");
}

void check_inputs(const QuantizeOptions& opts) {
  check(!method_needs_calibration(opts.method) || !opts.calib_tokens.empty(),
        std::string("--method ") + quant_method_name(opts.method) + " needs calibration text");
  check(opts.method != QuantMethod::smoothquant || opts.target == DType::Q8_0,
        "--method smoothquant migrates activation outliers for W8A8: it needs --type q8_0");
}

// The re-quantization notice and one fallback line per tensor, before any work.
void report_plan(const std::vector<TensorChoice>& plan, const QuantizeOptions& opts, QuantizeResult& res) {
  std::map<std::string, int> quantized_sources;
  for (const TensorChoice& c : plan)
    if (c.shape.size() >= 2 && !is_float_type(c.source_type)) ++quantized_sources[type_traits(c.source_type).name];
  res.requantized = !quantized_sources.empty();
  if (res.requantized) {
    std::string kinds;
    for (const auto& [n, k] : quantized_sources) kinds += (kinds.empty() ? "" : ", ") + n + " x" + std::to_string(k);
    res.warnings.push_back("the source is already quantized (" + kinds +
                           "): its tensors are dequantized and quantized again, so the result is a "
                           "re-quantization (the rounding errors of both add up), not a quantization of the "
                           "original weights");
  }
  for (const std::string& w : res.warnings) log_line(opts, "warning: " + w);
  if (!opts.summarize_fallbacks) {
    for (const TensorChoice& c : plan)
      if (c.origin == TypeOrigin::fallback) log_line(opts, c.name + ": " + c.note);
    return;
  }
  std::map<std::string, int> changes;  // "q4_k->q5_0" -> tensors
  for (const TensorChoice& c : plan)
    if (c.origin == TypeOrigin::fallback)
      ++changes[std::string(target_type_name(c.recipe_type)) + "->" + target_type_name(c.type)];
  if (changes.empty()) return;
  std::string text;
  for (const auto& [k, n] : changes) text += (text.empty() ? "" : ", ") + k + " x" + std::to_string(n);
  log_line(opts, "rows the type's block does not divide fall back: " + text);
}

// Input statistics of every linear layer on the calibration text (empty without one).
CalibStats calibrate(const Model& source, const QuantizeOptions& opts, ThreadPool& pool, QuantizeResult& res) {
  CalibStats stats;
  if (opts.calib_tokens.empty()) return stats;
  const double t0 = now_s();
  CalibOptions co = opts.calib;
  co.threads = pool.size();
  log_line(opts, "calibrating on " + std::to_string(opts.calib_tokens.size()) + " tokens (windows of " +
                     std::to_string(co.ctx) + ")");
  stats = collect_calib_stats(source, opts.calib_tokens, co);
  res.calib_tokens = int64_t(opts.calib_tokens.size());
  res.calib_s = now_s() - t0;
  return stats;
}

// AWQ / SmoothQuant: the float model with their scales folded in (none for the other methods).
std::optional<FloatModel> fold_scales(const Model& source, CalibStats& stats, const std::vector<TensorChoice>& plan,
                                      const QuantizeOptions& opts, ThreadPool& pool, QuantizeResult& res) {
  std::optional<FloatModel> fm;
  if (opts.method == QuantMethod::awq || opts.method == QuantMethod::awq_gptq ||
      opts.method == QuantMethod::smoothquant) {
    const double t0 = now_s();
    fm.emplace(load_float_model(source));
    ScaleSearchOptions so;
    so.threads = pool.size();
    so.act_quant = opts.awq_act_quant;
    // AWQ searches with the importance-weighted RTN its matrices are then written with (alpha 0 is exactly
    // rtn --calib, so AWQ cannot lose to it on the search's objective); SmoothQuant's W8A8 keeps plain RTN.
    so.weighted = opts.method != QuantMethod::smoothquant;
    so.type_of = [&plan, &opts](const std::string& name) {
      for (const TensorChoice& c : plan)
        if (c.name == name) return c.type;
      return opts.target;
    };
    res.folds = opts.method == QuantMethod::smoothquant ? smoothquant_apply(*fm, stats, opts.target, so)
                                                        : awq_apply(*fm, stats, opts.target, so);
    res.calib_s += now_s() - t0;
  }
  return fm;
}

// One tensor's codes by the method (rows x cols floats at w, x its input statistics or nullptr); `how` names it.
std::vector<uint8_t> quantize_codes(const TensorChoice& c, const float* w, const InputStats* x, const QuantizeOptions& opts,
                                    bool use_gptq, bool use_importance, ThreadPool& pool, std::string* how) {
  const int64_t cols = c.shape[0], rows = c.rows();
  const size_t rb = row_bytes(c.type, cols);
  std::vector<uint8_t> qbuf;
  if (opts.clip && !is_float_type(c.type) && x && !use_gptq) {
    // RTN (importance-weighted for rtn and after AWQ's folds, plain after SmoothQuant's) on clip-searched grids.
    *how = use_importance ? "rtn+importance+clip" : "rtn+clip";
    ClipOptions co = opts.clip_options;
    co.threads = pool.size();
    const std::vector<float> importance = use_importance ? activation_importance(*x) : std::vector<float>{};
    qbuf = quantize_rtn_clipped(c.type, w, rows, cols, *x, use_importance ? importance.data() : nullptr, co);
  } else if (is_float_type(c.type) || !x || (!use_gptq && !use_importance)) {
    // Plain round-to-nearest: the type table's reference quantizer (bit-exact with ggml's).
    *how = is_float_type(c.type) ? "convert" : "rtn";
    const TypeTraits& tt = type_traits(c.type);
    qbuf.assign(rb * size_t(rows), 0);
    parallel_rows(pool, rows, [&](int64_t r0, int64_t r1) {
      tt.from_float(w + r0 * cols, qbuf.data() + rb * size_t(r0), (r1 - r0) * cols);
    });
  } else if (use_gptq) {
    *how = opts.clip ? "gptq+clip" : "gptq";
    GptqOptions go = opts.gptq;
    if (opts.clip) go.clip = opts.clip_options;
    go.threads = pool.size();  // quantize_gptq splits the rows over its own workers
    return quantize_gptq(c.type, w, rows, cols, *x, go);
  } else {
    *how = "rtn+importance";
    const std::vector<float> importance = activation_importance(*x);
    qbuf = quantize_rtn(c.type, w, rows, cols, importance.data(), pool.size());
  }
  return qbuf;
}

// Sequential GPTQ's bytes by tensor name, every layer quantized up front on the outputs of the layers before it
// (empty unless --sequential).
std::map<std::string, std::vector<uint8_t>> sequential_codes(const Model& source, std::optional<FloatModel>& fm,
                                                             const std::vector<TensorChoice>& plan,
                                                             const QuantizeOptions& opts, ThreadPool& pool,
                                                             QuantizeResult& res) {
  if (!opts.sequential) return {};
  const double t0 = now_s();
  auto done = sequential_gptq(source, fm ? &*fm : nullptr, plan, opts, pool);
  res.calib_s += now_s() - t0;
  return done;
}

}  // namespace

QuantizeResult quantize_model(const Model& source, const std::string& out_path, const QuantizeOptions& opts) {
  check_output_path(source, out_path);
  FileSink sink(out_path);
  return quantize_tensors(source, opts, sink);
}

namespace {
// One quantization of the model by opts' method (quantize_tensors without the held-out choice).
QuantizeResult quantize_once(const Model& source, const QuantizeOptions& opts, QuantizedSink& out) {
  const double t_start = now_s();
  check_inputs(opts);
  const bool calibrated = !opts.calib_tokens.empty();

  QuantizeResult res;
  res.method = method_label(opts.method, calibrated) + (opts.clip ? " + clip" : "") +
               (opts.sequential ? " (sequential)" : "");
  const GgufFile& src = source.gguf();
  const std::vector<TensorChoice> plan = plan_tensor_types(src, opts.target, opts.overrides, &res.warnings);

  report_plan(plan, opts, res);

  // The layout: metadata and every tensor's type and shape, so the header is written first.
  const std::vector<std::pair<std::string, GgufValue>> metadata = output_metadata(src, opts.target, res.method);
  GgufWriter layout;
  for (const auto& [k, v] : metadata) layout.set(k, v);
  for (const TensorChoice& c : plan) layout.declare_tensor(c.name, c.type, c.shape);
  out.open(metadata, layout);  // a file sink creates OUT.tmp-PID now: a bad path fails before any work

  ThreadPool pool(opts.threads);
  CalibStats stats = calibrate(source, opts, pool, res);  // AWQ / SmoothQuant rescale it as they fold
  std::optional<FloatModel> fm = fold_scales(source, stats, plan, opts, pool, res);
  const bool use_gptq = opts.method == QuantMethod::gptq || opts.method == QuantMethod::awq_gptq;
  const bool use_importance = (opts.method == QuantMethod::rtn || opts.method == QuantMethod::awq) && calibrated;
  check(!opts.sequential || use_gptq, "--sequential is for the GPTQ methods (gptq, awq+gptq)");
  std::map<std::string, std::vector<uint8_t>> done = sequential_codes(source, fm, plan, opts, pool, res);

  // The progress bar's measure of work: elements to quantize; a copied tensor costs next to nothing.
  auto copies = [&](const TensorChoice& c) { return !fm && c.source_type == c.type; };
  auto work_of = [&](const TensorChoice& c) { return double(c.elements()) * (copies(c) ? 0.01 : 1.0); };
  double total_work = 0;
  for (const TensorChoice& c : plan) total_work += work_of(c);
  Progress progress(opts.log, int64_t(plan.size()), out.total_bytes(), total_work, opts.progress_tty);
  progress.set_delay(opts.progress_delay_s);
  const double t_quant = now_s();
  double work = 0;
  std::vector<float> fbuf;
  std::vector<uint8_t> qbuf;
  for (size_t i = 0; i < plan.size(); ++i) {
    const TensorChoice& c = plan[i];
    const GgufTensor& st = src.tensors()[i];
    TensorResult r;
    static_cast<TensorChoice&>(r) = c;
    const int64_t cols = c.shape[0], rows = c.rows();
    const size_t rb = row_bytes(c.type, cols);
    if (copies(c)) {  // already in that type and not transformed: keep the bytes
      r.copied = true;
      r.how = "copy";
      out.append(st.data, st.bytes, nullptr);
      r.bytes = st.bytes;
    } else {
      const float* w = float_rows(st, fm ? &*fm : nullptr, fbuf, pool);
      auto it = stats.find(c.name);
      const InputStats* x = it != stats.end() && it->second && it->second->cols == cols ? it->second.get() : nullptr;
      if (auto d = done.find(c.name); d != done.end()) {
        r.how = opts.clip ? "gptq+clip (sequential)" : "gptq (sequential)";
        qbuf = std::move(d->second);
        done.erase(d);
      } else {
        qbuf = quantize_codes(c, w, x, opts, use_gptq, use_importance, pool, &r.how);
      }
      check(qbuf.size() == rb * size_t(rows), "quantizing '" + c.name + "' gave " + std::to_string(qbuf.size()) +
                                                  " bytes, expected " + std::to_string(rb * size_t(rows)));
      r.bytes = qbuf.size();
      out.append(qbuf.data(), qbuf.size(), &qbuf);
      if (fm) fm->tensors.erase(c.name);  // done with it: memory falls as the file grows
    }
    res.tensors.push_back(std::move(r));
    work += work_of(c);
    progress.update(int64_t(i + 1), out.bytes_written(), work);
    if (opts.after_tensor) opts.after_tensor(int64_t(i + 1));
  }
  out.commit();
  progress.finish();
  res.file_bytes = out.total_bytes();
  res.quantize_s = now_s() - t_quant;
  res.total_s = now_s() - t_start;
  return res;
}

}  // namespace

QuantizeResult quantize_tensors(const Model& source, const QuantizeOptions& opts, QuantizedSink& out) {
  if (!opts.held_out_tokens.empty()) {
    check_inputs(opts);  // the options' refusals first, as without the choice
    return quantize_choosing_on_held_out(source, opts, out);
  }
  return quantize_once(source, opts, out);
}

}  // namespace tinfer
