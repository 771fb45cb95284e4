// The fused quantization prologues (kernels/act_panel.h) on every ISA table, on ragged shapes: a panel made by
// prologue_quantize and read by matmul(w, panel) gives bit for bit the output of the plain composition on the
// same table (the prologue's ops written out as floats, then matmul quantizing them itself), and stays within
// the int8 bound of the reference kernels' fp32 composition.
#include <gtest/gtest.h>

#include <cstring>

#include "tinfer/error.h"
#include "core/isa.h"
#include "core/thread_pool.h"
#include "kernels/act_panel.h"
#include "kernels/kernel_table.h"
#include "kernels/kernel_test_util.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"

namespace tinfer {
namespace {

struct Case {
  RowPrologue::Kind kind;
  const char* name;
};
const Case kKinds[] = {{RowPrologue::kCopy, "copy"},
                       {RowPrologue::kRmsNorm, "rmsnorm"},
                       {RowPrologue::kAddRmsNorm, "add_rmsnorm"},
                       {RowPrologue::kSiluMul, "silu_mul"},
                       {RowPrologue::kGeluMul, "gelu_mul"}};

// The prologue's float rows the plain way: kt's own element-wise rows, one op after the other into [m][cols].
// resid (kAddRmsNorm) is updated as the fused prologue updates it.
std::vector<float> composed_input(const KernelTable& kt, RowPrologue::Kind kind, const std::vector<float>& x,
                                  std::vector<float>& resid, std::vector<float> gate_up, const std::vector<float>& w,
                                  int64_t m, int64_t cols) {
  std::vector<float> out(size_t(m * cols));
  for (int64_t i = 0; i < m; ++i) {
    float* o = &out[size_t(i * cols)];
    switch (kind) {
      case RowPrologue::kCopy: std::memcpy(o, &x[size_t(i * cols)], size_t(cols) * 4); break;
      case RowPrologue::kRmsNorm: kt.rmsnorm(&x[size_t(i * cols)], w.data(), o, cols, 1e-5f); break;
      case RowPrologue::kAddRmsNorm:
        kt.add_inplace(&resid[size_t(i * cols)], &x[size_t(i * cols)], cols);
        kt.rmsnorm(&resid[size_t(i * cols)], w.data(), o, cols, 1e-5f);
        break;
      case RowPrologue::kSiluMul:
      case RowPrologue::kGeluMul: {
        float* g = &gate_up[size_t(i * 2 * cols)];
        (kind == RowPrologue::kSiluMul ? kt.silu_mul : kt.gelu_mul)(g, g + cols, cols);
        std::memcpy(o, g, size_t(cols) * 4);
        break;
      }
    }
  }
  return out;
}

// The same with the reference kernels (kernels/ref), in fp32: the bound the int8 GEMM is held to.
std::vector<float> reference_input(RowPrologue::Kind kind, const std::vector<float>& x, std::vector<float> resid,
                                   std::vector<float> gate_up, const std::vector<float>& w, int64_t m, int64_t cols) {
  std::vector<float> out(size_t(m * cols));
  for (int64_t i = 0; i < m; ++i) {
    float* o = &out[size_t(i * cols)];
    if (kind == RowPrologue::kCopy) std::memcpy(o, &x[size_t(i * cols)], size_t(cols) * 4);
    if (kind == RowPrologue::kRmsNorm) ref::rmsnorm(&x[size_t(i * cols)], w.data(), o, cols, 1e-5f);
    if (kind == RowPrologue::kAddRmsNorm) {
      ref::add_inplace(&resid[size_t(i * cols)], &x[size_t(i * cols)], cols);
      ref::rmsnorm(&resid[size_t(i * cols)], w.data(), o, cols, 1e-5f);
    }
    if (kind == RowPrologue::kSiluMul || kind == RowPrologue::kGeluMul) {
      float* g = &gate_up[size_t(i * 2 * cols)];
      (kind == RowPrologue::kSiluMul ? ref::silu_mul : ref::gelu_mul)(g, g + cols, cols);
      std::memcpy(o, g, size_t(cols) * 4);
    }
  }
  return out;
}

TEST(ActPanel, FusedPrologueIsTheComposedStepBitForBit) {
  ThreadPool pool(2);
  struct Shape {
    int64_t rows, cols, m;
  };
  // m: a lone decode row, a short single group, a full group, ragged groups; 70 x 1024 runs on the pool.
  const Shape shapes[] = {{17, 64, 1}, {33, 96, 3}, {16, 256, 8}, {45, 256, 13}, {20, 1024, 70}};
  for (DType type : {DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q6_K}) {
    for (const Shape& s : shapes) {
      if (s.cols % type_traits(type).block_size != 0) continue;
      const auto wq = test::random_weights(type, s.rows, s.cols, uint32_t(s.rows * 31 + s.cols));
      const PackedMatrix pw = pack_matrix(type, wq.data(), s.rows, s.cols);
      const auto x = test::random_floats(size_t(s.m * s.cols), uint32_t(s.m + 3 * s.cols));
      const auto resid0 = test::random_floats(size_t(s.m * s.cols), uint32_t(s.m + 5 * s.cols), 2.0f);
      const auto gu0 = test::random_floats(size_t(s.m * 2 * s.cols), uint32_t(s.m + 7 * s.cols), 1.5f);
      auto norm_w = test::random_floats(size_t(s.cols), uint32_t(s.cols), 0.3f);
      for (float& v : norm_w) v += 1.0f;
      for (Isa isa : supported_isas()) {
        const KernelTable& kt = kernel_table(isa);
        for (const Case& k : kKinds) {
          SCOPED_TRACE(testing::Message() << type_traits(type).name << " isa=" << isa_name(isa) << " " << k.name
                                          << " rows=" << s.rows << " cols=" << s.cols << " m=" << s.m);
          std::vector<float> resid_want = resid0;
          const std::vector<float> in = composed_input(kt, k.kind, x, resid_want, gu0, norm_w, s.m, s.cols);
          std::vector<float> want(size_t(s.m * s.rows));
          matmul(pw, in.data(), s.m, want.data(), pool, kt);

          std::vector<float> resid = resid0, gu = gu0, normed(size_t(s.m * s.cols), -1.f);
          RowPrologue p;
          p.kind = k.kind, p.x = x.data(), p.ldx = s.cols, p.norm_w = norm_w.data(), p.eps = 1e-5f;
          p.resid = resid.data(), p.ld_resid = s.cols;
          if (k.kind == RowPrologue::kSiluMul || k.kind == RowPrologue::kGeluMul)
            p.gate_up = gu.data(), p.ldx = 2 * s.cols;
          p.out = normed.data(), p.ld_out = s.cols;
          ActPanel panel;
          prologue_quantize(kt, p, s.m, s.cols, *act_panel_corr(pw), ActQuant::block32, pool, panel);
          std::vector<float> got(want.size(), -1e30f);
          matmul(pw, panel, got.data(), pool, kt, nullptr, Op::kMatmulQkv);
          EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0) << "GEMM output differs";
          EXPECT_EQ(std::memcmp(normed.data(), in.data(), in.size() * 4), 0) << "the prologue's float rows differ";
          if (k.kind == RowPrologue::kAddRmsNorm) {
            EXPECT_EQ(std::memcmp(resid.data(), resid_want.data(), resid.size() * 4), 0) << "residual differs";
          }

          // Against the plain reference: fp32 element-wise ops, fp32 activations (the int8 bound of matmul_test).
          const std::vector<float> ref_in = reference_input(k.kind, x, resid0, gu0, norm_w, s.m, s.cols);
          std::vector<float> ref_y(want.size());
          ref::matmul(type, wq.data(), s.rows, s.cols, ref_in.data(), s.m, ref_y.data());
          if (got.size() >= 16) {
            EXPECT_LT(test::nmse(got.data(), ref_y.data(), got.size()), 5e-4);
          }
        }
      }
    }
  }
}

TEST(ActPanel, TokenScalesMatchTheComposedStep) {
  ThreadPool pool(2);
  const int64_t rows = 40, cols = 160, m = 11;
  const auto wq = test::random_weights(DType::Q8_0, rows, cols, 9);
  const PackedMatrix pw = pack_matrix(DType::Q8_0, wq.data(), rows, cols);
  const auto x = test::random_floats(size_t(m * cols), 10);
  for (Isa isa : supported_isas()) {
    const KernelTable& kt = kernel_table(isa);
    std::vector<float> want(size_t(m * rows)), got(want.size());
    matmul(pw, x.data(), m, want.data(), pool, kt, nullptr, Op::kMatmulQkv, ActQuant::token);
    RowPrologue p;
    p.x = x.data(), p.ldx = cols;
    ActPanel panel;
    prologue_quantize(kt, p, m, cols, *act_panel_corr(pw), ActQuant::token, pool, panel);
    matmul(pw, panel, got.data(), pool, kt, nullptr, Op::kMatmulQkv);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0) << isa_name(isa);
  }
}

TEST(ActPanel, RefusesAPanelMadeForAnotherFormatOrShape) {
  ThreadPool pool(1);
  const auto x = test::random_floats(64 * 2, 1);
  const auto w8 = test::random_weights(DType::Q8_0, 16, 64, 2), w4 = test::random_weights(DType::Q4_0, 16, 64, 3);
  const PackedMatrix p8 = pack_matrix(DType::Q8_0, w8.data(), 16, 64), p4 = pack_matrix(DType::Q4_0, w4.data(), 16, 64);
  ASSERT_NE(*act_panel_corr(p8), *act_panel_corr(p4));  // otherwise this test checks nothing
  RowPrologue p;
  p.x = x.data(), p.ldx = 64;
  ActPanel panel;
  prologue_quantize(active_kernels(), p, 2, 64, *act_panel_corr(p8), ActQuant::block32, pool, panel);
  std::vector<float> y(32);
  EXPECT_THROW(matmul(p4, panel, y.data(), pool, active_kernels(), nullptr, Op::kMatmulQkv), Error);
  const auto f = test::random_floats(16 * 64, 4);
  const PackedMatrix pf = pack_matrix(DType::F32, f.data(), 16, 64);
  EXPECT_FALSE(act_panel_corr(pf).has_value());
  EXPECT_THROW(matmul(pf, panel, y.data(), pool, active_kernels(), nullptr, Op::kMatmulQkv), Error);
  const auto w8b = test::random_weights(DType::Q8_0, 16, 96, 5);
  const PackedMatrix p8b = pack_matrix(DType::Q8_0, w8b.data(), 16, 96);
  EXPECT_THROW(matmul(p8b, panel, y.data(), pool, active_kernels(), nullptr, Op::kMatmulQkv), Error);
}

}  // namespace
}  // namespace tinfer
