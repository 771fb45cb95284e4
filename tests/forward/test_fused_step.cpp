// The fused step (CpuForward::set_fused_step, kernels/act_panel.h) against the unfused one and the reference
// forward: RMSNorm, residual + RMSNorm and SwiGLU / GeGLU fused with the int8 GEMMs' input quantization change
// no bit of the logits or the KV cache, on llama, qwen2 (biases), qwen3 (q/k norms), phi3 (fused tensors) and
// gemma3 (GeGLU, post-norms) shapes, weight types with different packed-code offsets and a float type, prefill
// chunks and batched decode rows.
#include <gtest/gtest.h>

#include <cstring>

#include "common/test_env.h"
#include "tinfer/op_profile.h"
#include "forward_test_util.h"
#include "fused_step_batch.h"
#include "core/thread_pool.h"
#include "engine/session.h"
#include "backend/cpu/cpu_forward.h"
#include "backend/cpu/reference_forward.h"
#include "model/synth/synth.h"
#include "quant/type_table.h"

namespace tinfer {
namespace {

std::unique_ptr<Model> make_model(const std::string& arch, DType type, int64_t dim, int64_t ffn) {
  SynthSpec spec;
  spec.arch = arch, spec.dim = dim, spec.n_layers = 2, spec.n_heads = 4, spec.n_kv_heads = 2, spec.ffn_dim = ffn;
  spec.n_vocab = 300, spec.ctx_len = 128, spec.weight_type = type, spec.seed = 11, spec.weight_std = 0.08f;
  if (arch != "llama") spec.rope_layout = RopeLayout::neox;
  if (arch == "gemma3") spec.tied_embeddings = true, spec.sliding_window = 8;  // (gemma3 needs both)
  return Model::from_gguf_bytes(synthesize_model_bytes(spec));
}

std::vector<int32_t> tokens(int n, int vocab) {
  std::vector<int32_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = (i * 41 + 3) % vocab;
  return t;
}

TEST(FusedStep, BitIdenticalToTheUnfusedStepAndCloseToTheReference) {
  ThreadPool pool(2);
  for (const char* arch : {"llama", "qwen2", "qwen3", "phi3", "gemma3"}) {
    for (DType type : {DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::F16}) {
      SCOPED_TRACE(std::string(arch) + " " + type_traits(type).name);
      // dim 256 lets Q4_K be Q4_K (a 256 block); ffn 96: its down GEMM falls back to q8_0 rows (synth.h).
      auto model = make_model(arch, type, 256, type == DType::Q4_K ? 512 : 96);
      const auto toks = tokens(23, 300);
      // Prefill chunks 9 + 9 + 5, then decode steps over the cache each wrote; all logits kept.
      auto run = [&](FusedStep f) {
        CpuForward fwd(*model, pool);
        fwd.set_fused_step(f);
        Session s(fwd, 64);
        std::vector<float> out;
        s.feed_all_logits(toks, out, 9);
        for (int32_t t : {7, 19, 200}) {
          const auto& l = s.feed_token(t);
          out.insert(out.end(), l.begin(), l.end());
        }
        // The fused path ran where it can (else the comparison below would compare the unfused step with
        // itself): with the GLU fused no activation op runs apart, with the norm fused only the head's norm does.
        const bool quantized = type != DType::F16;
        EXPECT_EQ(fwd.profile()[Op::kActivation].calls == 0, quantized && f.glu);
        // 6 forwards; per forward the head's norm (and gemma3's post-attention norm per layer).
        const int64_t gemma_post = std::string(arch) == "gemma3" ? model->config().n_layers : 0;
        if (quantized && f.norm) {
          EXPECT_EQ(fwd.profile()[Op::kNorm].calls, 6 * (1 + gemma_post));
        }
        return out;
      };
      const std::vector<float> lp = run(FusedStep::none());
      std::vector<float> lf;
      for (FusedStep f : {FusedStep{true, false}, FusedStep{false, true}, FusedStep::all()}) {
        lf = run(f);
        ASSERT_EQ(lf.size(), lp.size());
        EXPECT_EQ(std::memcmp(lf.data(), lp.data(), lf.size() * 4), 0)
            << "logits differ with norm fusion " << f.norm << ", glu fusion " << f.glu;
      }
      ReferenceForward ref(*model);
      const auto want = ref.logits(toks);
      const int64_t V = model->config().n_vocab;
      for (size_t i = 0; i < toks.size(); ++i) {
        std::vector<float> row(lf.begin() + i * V, lf.begin() + (i + 1) * V);
        EXPECT_LT(forward_test::nmse(row, want[i]), 2e-3) << "position " << i;
      }
    }
  }
}

TEST(FusedStep, BatchedDecodeRowsBitIdentical) {
  ThreadPool pool(2);
  auto model = make_model("llama", DType::Q8_0, 256, 512);
  CpuForward fused(*model, pool), plain(*model, pool);
  plain.set_fused_step(false);
  const int seqs = 13, blocks = 2;  // 13 rows: one full activation group and a ragged one
  auto kf = fused.allocate_kv(seqs * blocks, 16, KvDtype::f32), kp = plain.allocate_kv(seqs * blocks, 16, KvDtype::f32);
  const int64_t V = model->config().n_vocab;
  std::vector<float> a(size_t(seqs * V)), b(a.size());
  for (int pos = 0; pos < 5; ++pos) {
    const ForwardBatch batch = forward_test::decode_batch(seqs, pos, blocks, int(V), pos);
    fused.forward(batch, *kf, a.data());
    plain.forward(batch, *kp, b.data());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << "position " << pos;
  }
}

}  // namespace
}  // namespace tinfer
