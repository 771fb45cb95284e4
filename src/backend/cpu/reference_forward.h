// The reference forward pass: weights dequantized to fp32, arithmetic in double, naive attention
// over the whole sequence, no threads, no cache. Obviously correct and slow: the test oracle.
#pragma once
#include <cstdint>
#include <vector>

#include "tinfer/layer_skip.h"
#include "model/model.h"

namespace tinfer {

class ReferenceForward {
 public:
  // skip: sub-blocks left out of every pass (a layer-skip plan's reference); empty = none.
  // max_positions: the context the forward is configured for (0: the model's), which picks LongRoPE's factors as
  // CpuForward's does.
  explicit ReferenceForward(const Model& model, LayerSkip skip = {}, int64_t max_positions = 0);
  // Logits after each position of `tokens`: [tokens.size()][n_vocab]. Only rows listed in
  // `want` are returned (all when empty), in that order.
  // exit_after (early exit with state copying, tinfer/early_exit.h): per position, the layer count after which its
  // residual stream stops changing (its deeper layers still compute K and V from it, for later positions to
  // attend to; its logits are the head's of that frozen stream); empty or 0 = every layer.
  std::vector<std::vector<float>> logits(const std::vector<int32_t>& tokens, const std::vector<int64_t>& want = {},
                                         const std::vector<int32_t>& exit_after = {}) const;

 private:
  struct Layer {
    std::vector<float> attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down;
    std::vector<float> bq, bk, bv, q_norm, k_norm;  // empty unless the architecture has them (qwen2, qwen3)
    std::vector<float> post_attn_norm, post_ffn_norm;  // gemma3, else empty
  };
  const Model& model_;
  LayerSkip skip_;
  int64_t max_positions_ = 0;
  std::vector<float> tok_embd_, output_norm_, output_;
  std::vector<Layer> layers_;
};

// Dequantizes a whole tensor to fp32 with the type table's reference routine.
std::vector<float> dequantize_tensor(const GgufTensor& t);

}  // namespace tinfer
