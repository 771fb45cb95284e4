// ActPanel: activations quantized once, for every int8 GEMM that reads them (kernel_table.h's QActs layout),
// and the fused prologues that make one: a row's RMSNorm (with or without the residual add before it) or its
// SwiGLU / GeGLU product computed into an L1-resident row and quantized straight into the panel, one parallel
// region and no float copy of the [m][cols] input in between. Each prologue runs the same table rows
// (rmsnorm, silu_mul, gelu_mul, quantize_act_row) the unfused step runs, in the same order, so a panel made
// here holds the bytes the GEMM's own quantization of the unfused input would: fusing is bit-identical.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "tinfer/act_quant.h"
#include "tinfer/op_profile.h"

namespace tinfer {

class ThreadPool;
struct KernelTable;
struct PackedMatrix;
struct QActs;

class ActPanel {
 public:
  // Shapes the panel for m rows of cols (cols % 32 == 0) for formats with packed-code offset corr: grows the
  // buffer on first use of a larger shape only, so a steady-state step allocates nothing.
  void reshape(int64_t m, int64_t cols, int32_t corr, ActQuant mode);
  QActs view() const;
  int64_t rows() const { return m_; }
  int64_t cols() const { return cols_; }
  int32_t corr() const { return corr_; }
  ActQuant mode() const { return mode_; }
  // Writes row i (< rows()) from its int8 codes, per-block scales and half sums (quantize_act_row's output);
  // the padded rows of the last group are zeroed by reshape.
  void store_row(int64_t i, const int8_t* q, const float* d, const int16_t* s16);
  // Per share of a parallel prologue: the row it computes and its codes (grown by fit_scratch, then reused).
  struct RowScratch {
    std::vector<float> row;
    std::vector<int8_t> q;
    std::vector<float> d;
    std::vector<int16_t> s16;
  };
  void fit_scratch(int shares, int64_t cols);
  RowScratch& scratch(int t) { return scratch_[size_t(t)]; }

 private:
  void zero_row(int64_t i);
  std::vector<uint8_t> buf_;
  std::vector<RowScratch> scratch_;
  int64_t m_ = 0, cols_ = 0;
  int32_t corr_ = 0;
  ActQuant mode_ = ActQuant::block32;
};

// The packed-code offset a panel must carry for weights of this type, or nullopt for float weights (their
// GEMM reads fp32 activations: no panel).
std::optional<int32_t> act_panel_corr(const PackedMatrix& w);

// What a prologue computes from row i before quantizing it.
struct RowPrologue {
  enum Kind : uint8_t { kCopy, kRmsNorm, kAddRmsNorm, kSiluMul, kGeluMul } kind = kCopy;
  const float* x = nullptr;  // kCopy / kRmsNorm / kAddRmsNorm: x [m][cols]
  float* gate_up = nullptr;  // kSiluMul / kGeluMul: rows gate | up [m][2 cols]; gate is overwritten by the product
  int64_t ldx = 0;           // floats between rows of x (or of gate_up)
  float* resid = nullptr;    // kAddRmsNorm: resid[i] += x[i] (written back), then normalized
  int64_t ld_resid = 0;
  const float* norm_w = nullptr;  // kRmsNorm / kAddRmsNorm: [cols]
  float eps = 0;
  float* out = nullptr;  // optional: the float row the prologue computed, stored to out[i * ld_out] too
  int64_t ld_out = 0;
};

// Runs the prologue on rows [0, m) and quantizes each into `panel` (reshaped to m x cols for corr / mode),
// over the pool when the rows are many. Profiled as Op::kActQuant (the prologue's own work included).
void prologue_quantize(const KernelTable& kt, const RowPrologue& p, int64_t m, int64_t cols, int32_t corr,
                       ActQuant mode, ThreadPool& pool, ActPanel& panel, OpProfile* prof = nullptr);

// y = W . acts for the rows of a panel made for W's format (corr must match, W quantized); as matmul() with
// its quantization done: profiled as `role`.
void matmul(const PackedMatrix& w, const ActPanel& acts, float* y, ThreadPool& pool, const KernelTable& kt,
            OpProfile* prof, Op role);

}  // namespace tinfer
