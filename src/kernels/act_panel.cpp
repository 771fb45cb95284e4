// ActPanel and the fused quantization prologues (act_panel.h).
#include "kernels/act_panel.h"

#include <algorithm>
#include <cstring>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "kernels/kernel_table.h"
#include "kernels/kernels.h"
#include "kernels/packed_format.h"

namespace tinfer {

void ActPanel::reshape(int64_t m, int64_t cols, int32_t corr, ActQuant mode) {
  check(m > 0 && cols > 0 && cols % 32 == 0, "ActPanel: rows > 0 and a multiple of 32 columns");
  m_ = m, cols_ = cols, corr_ = corr, mode_ = mode;
  const int64_t groups = (m + kActGroup - 1) / kActGroup, gr = std::min<int64_t>(m, kActGroup);
  const size_t bytes = size_t(groups * (cols / 32) * act_block_bytes(int(gr)));
  if (buf_.size() < bytes) buf_.resize(bytes);
  if (gr == kActGroup)
    for (int64_t i = m; i < groups * kActGroup; ++i) zero_row(i);  // the last group's padded rows
}

QActs ActPanel::view() const {
  QActs a;
  a.panel = buf_.data();
  a.nb = cols_ / 32;
  a.gr = int(std::min<int64_t>(m_, kActGroup));
  return a;
}

// Through QActs' own accessors, so the layout is stated once (kernel_table.h).
void ActPanel::store_row(int64_t i, const int8_t* q, const float* d, const int16_t* s16) {
  const QActs a = view();
  const int r = int(i % kActGroup);
  for (int64_t b = 0; b < a.nb; ++b) {
    const uint8_t* blk = a.block(i / kActGroup, b);
    std::memcpy(const_cast<int8_t*>(a.q(blk, r)), q + b * 32, 32);
    const int32_t sum = int32_t(s16[2 * b]) + s16[2 * b + 1];
    *const_cast<float*>(a.d(blk, r)) = d[b];
    *const_cast<float*>(a.ds(blk, r)) = d[b] * float(sum);
    *const_cast<int32_t*>(a.off(blk, r)) = corr_ * sum;
    int16_t* sr = const_cast<int16_t*>(a.s16(blk, r));
    sr[0] = s16[2 * b], sr[1] = s16[2 * b + 1];
  }
}

void ActPanel::zero_row(int64_t i) {
  const QActs a = view();
  const int r = int(i % kActGroup);
  for (int64_t b = 0; b < a.nb; ++b) {
    const uint8_t* blk = a.block(i / kActGroup, b);
    std::memset(const_cast<int8_t*>(a.q(blk, r)), 0, 32);
    *const_cast<float*>(a.d(blk, r)) = 0.0f;
    *const_cast<float*>(a.ds(blk, r)) = 0.0f;
    *const_cast<int32_t*>(a.off(blk, r)) = 0;
    int16_t* sr = const_cast<int16_t*>(a.s16(blk, r));
    sr[0] = sr[1] = 0;
  }
}

std::optional<int32_t> act_panel_corr(const PackedMatrix& w) {
  if (const packed::PackedFormat* pf = packed::find_format(w.type)) return pf->g.corr;
  return std::nullopt;
}

namespace {

// Row i of the prologue's output: computed into s.row (or read where it already lies, for kCopy).
const float* prologue_row(const KernelTable& kt, const RowPrologue& p, int64_t i, int64_t cols, ActPanel::RowScratch& s) {
  switch (p.kind) {
    case RowPrologue::kCopy:
      return p.x + i * p.ldx;
    case RowPrologue::kAddRmsNorm: {
      float* r = p.resid + i * p.ld_resid;
      kt.add_inplace(r, p.x + i * p.ldx, cols);
      kt.rmsnorm(r, p.norm_w, s.row.data(), cols, p.eps);
      return s.row.data();
    }
    case RowPrologue::kRmsNorm:
      kt.rmsnorm(p.x + i * p.ldx, p.norm_w, s.row.data(), cols, p.eps);
      return s.row.data();
    case RowPrologue::kSiluMul:
    case RowPrologue::kGeluMul: {
      float* g = p.gate_up + i * p.ldx;
      (p.kind == RowPrologue::kSiluMul ? kt.silu_mul : kt.gelu_mul)(g, g + cols, cols);
      return g;
    }
  }
  return nullptr;
}

}  // namespace

void prologue_quantize(const KernelTable& kt, const RowPrologue& p, int64_t m, int64_t cols, int32_t corr,
                       ActQuant mode, ThreadPool& pool, ActPanel& panel, OpProfile* prof) {
  OpTimer t(prof, Op::kActQuant, double(m * cols) * 4, double(m * cols) * 2);
  panel.reshape(m, cols, corr, mode);
  // Whole activation groups per share (a group's rows share cache lines of the panel); each share has its own
  // row scratch in the panel, sized here before the region: which OS thread runs a share does not matter.
  const int64_t units = (m + kActGroup - 1) / kActGroup;
  const int shares = m * cols >= (1 << 13) ? int(std::min<int64_t>(pool.size(), units)) : 1;
  panel.fit_scratch(shares, cols);
  auto rows = [&](int t, int nt) {
    if (t >= shares) return;
    ActPanel::RowScratch& s = panel.scratch(t);
    const int64_t i1 = std::min(m, units * (t + 1) / nt * kActGroup);
    for (int64_t i = units * t / nt * kActGroup; i < i1; ++i) {
      const float* x = prologue_row(kt, p, i, cols, s);
      if (p.out && x != p.out + i * p.ld_out) std::memcpy(p.out + i * p.ld_out, x, size_t(cols) * sizeof(float));
      kt.quantize_act_row(x, cols, mode, s.q.data(), s.d.data(), s.s16.data());
      panel.store_row(i, s.q.data(), s.d.data(), s.s16.data());
    }
  };
  if (shares > 1) pool.run([&](int t, int) { rows(t, shares); });
  else rows(0, 1);
}

void ActPanel::fit_scratch(int shares, int64_t cols) {
  if (int(scratch_.size()) < shares) scratch_.resize(size_t(shares));
  for (int t = 0; t < shares; ++t) {
    RowScratch& s = scratch_[size_t(t)];
    if (int64_t(s.row.size()) < cols) s.row.resize(size_t(cols)), s.q.resize(size_t(cols));
    if (int64_t(s.d.size()) < cols / 32) s.d.resize(size_t(cols / 32)), s.s16.resize(size_t(2 * (cols / 32)));
  }
}

}  // namespace tinfer
