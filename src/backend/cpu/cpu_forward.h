// The fast forward pass on CPU: weights packed once in their stored (quantized) format, every
// scheduled token of every sequence through each weight matrix as one GEMM, fused QKV and
// gate/up projections, paged flash-style attention, scratch reused across steps.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "core/function_ref.h"
#include "kernels/act_panel.h"
#include "kernels/attention.h"
#include "kernels/kernels.h"
#include "backend/backend.h"
#include "backend/forward_batch.h"
#include "backend/cpu/fused_step.h"
#include "backend/cpu/kv_storage.h"
#include "model/model.h"
#include "model/rope.h"

namespace tinfer {

class ThreadPool;
class WeightPacker;

// The CPU backend: KvStorage is its KvCache.
class CpuForward final : public Backend {
 public:
  // max_positions: the longest sequence it will run (positions 0..max_positions-1); 0 = the model's context.
  // Throws Error for a context the model cannot position (beyond its trained context length).
  CpuForward(const Model& model, ThreadPool& pool, int64_t max_positions = 0);
  // On opts.pool, or on a pool of its own with opts.threads workers.
  CpuForward(const Model& model, const BackendOptions& opts);
  ~CpuForward() override;

  const char* name() const override { return "cpu"; }
  bool supports(BackendCapability) const override { return true; }  // every one (backend.h)
  ActQuant act_quant() const { return act_quant_; }
  int64_t max_positions() const override { return rope_.n_positions(); }
  const ModelConfig& config() const override { return model_.config(); }
  size_t weight_bytes() const override { return packed_bytes(true); }
  size_t weight_bytes_read() const override { return packed_bytes(false); }
  using Backend::allocate_kv;
  std::unique_ptr<KvCache> allocate_kv(int64_t n_blocks, int64_t block_size, const KvPrecision& precision,
                                       int64_t n_window_blocks = 0) override;

  const Model& model() const { return model_; }
  ThreadPool& pool() const { return pool_; }
  // Packed weight bytes, of every sub-block or only of those the layer skip keeps.
  size_t packed_bytes(bool skipped_too = true) const;
  // Packed bytes of layer l's kept sub-blocks, and of the output head (early exit's cost model).
  size_t layer_bytes(int64_t l) const override;
  size_t qkv_bytes(int64_t l) const override;  // what state copying reads per deeper layer (0: attention skipped)
  size_t head_bytes() const override { return output_.data.size(); }

  // Runs one step: writes K/V of every batch token into `kv` (a KvStorage), then fills `logits`
  // ([batch.logit_rows.size()][n_vocab], row-major) for the requested rows.
  void forward(const ForwardBatch& batch, KvCache& kv, float* logits) override;
  void forward(const ForwardBatch& batch, KvStorage& kv, float* logits);
  OpProfile& profile() override { return profile_; }
  // Calibration hook: called on the forward's thread with each linear input, between parallel regions
  // (the pool is idle, so the observer may run work on pool()). Empty (the default) costs one test per input.
  void set_linear_observer(LinearObserver obs) override { observer_ = std::move(obs); }
  // The sub-blocks every later forward leaves out (BackendOptions::skip at construction; calibrate-skip
  // changes it between measurements). Error for a plan naming another layer count.
  void set_layer_skip(LayerSkip skip) override;
  const LayerSkip& layer_skip() const override { return skip_; }
  // The fused step (on by default): each int8 GEMM's input quantized in the pass that computes it (RMSNorm,
  // residual + RMSNorm, SwiGLU/GeGLU; act_panel.h), bit-identical to the unfused step. Off: the float input
  // is written out and each GEMM quantizes it (what a linear observer gets anyway: it reads the float inputs).
  // FusedStep (fused_step.h) says which; TINFER_FUSED_STEP sets it at construction.
  void set_fused_step(FusedStep f) { fused_ = f; }
  void set_fused_step(bool on) { fused_ = on ? FusedStep::all() : FusedStep::none(); }
  FusedStep fused_step() const { return fused_; }
  // Per-token early exit for every later forward (BackendOptions::early_exit at construction); Error for exit
  // layers outside [1, n_layers - 1] or not ascending, or a threshold outside [0, 1]. The counters carry on.
  void set_early_exit(EarlyExit exit) override;
  const EarlyExit& early_exit() const override { return exit_; }
  EarlyExitCounters early_exit_counters() const override;

 private:
  // Row-stacked projections sharing one input (QKV; gate+up): one GEMM when the parts share a
  // type, else one per part with outputs placed side by side.
  struct Stacked {
    std::vector<PackedMatrix> parts;
    int64_t rows = 0;
    void run(const float* x, int64_t n, float* y, std::vector<float>& tmp, ThreadPool& pool, OpProfile* prof,
             Op role, ActQuant act) const;
    // On activations quantized once for every part (panel_corr() must have a value): the sibling GEMMs
    // share one quantization.
    void run(const ActPanel& acts, float* y, std::vector<float>& tmp, ThreadPool& pool, OpProfile* prof,
             Op role) const;
    // The packed-code offset every part's panel needs, or nullopt (float parts, or parts that differ).
    std::optional<int32_t> panel_corr() const;
  };
  struct Layer {
    std::vector<float> attn_norm, ffn_norm;
    Stacked wqkv;          // rows: [q_dim | kv_dim | kv_dim]
    PackedMatrix wo;       // [dim][q_dim]
    Stacked w_gateup;      // rows: [ffn | ffn]
    PackedMatrix w_down;   // [dim][ffn]
    std::vector<float> bqkv;            // [q_dim | kv_dim | kv_dim] projection biases (qwen2), or empty
    std::vector<float> q_norm, k_norm;  // [head_dim] per-head RMSNorm weights before RoPE (qwen3), or empty
    std::vector<float> post_attn_norm, post_ffn_norm;  // [dim] norms of each block's output (gemma3), or empty
    // The panels' packed-code offsets of wqkv, w_gateup and w_down (nullopt: float weights, no fused prologue).
    std::optional<int32_t> qkv_corr, gateup_corr, down_corr;
  };
  // On opts.pool if set, else on `owned` (the public constructors decide which).
  CpuForward(const Model& model, std::unique_ptr<ThreadPool> owned, const BackendOptions& opts);
  // One step's state, shared by the blocks of every layer: forward() sets it up, an exit point shrinks na.
  struct Step {
    const ForwardBatch& batch;
    KvStorage& kv;
    float* logits;
    int64_t n = 0;         // the step's rows (slots)
    int64_t na = 0;        // slots still running: [0, na) run the whole layer; [na, n) exited (K/V written only)
    int64_t n_layers = 0;  // decoder layers this step runs (ForwardBatch::n_layers)
    bool exits = false;    // early exit is on for this step
    size_t next_exit = 0;  // the next exit point, an index into exit_.layers
    AttentionArgs att;     // the attention kernel's arguments; per layer: window, block tables, KV view
    // Sum over rows of the positions each attends to, full and sliding-window layers (the profile's bytes).
    double attended_full = 0, attended_window = 0;
    bool ffn_in_quantized = false;  // this layer's attention residual left the MLP input in panel_, quantized
  };
  static Stacked pack_stacked(WeightPacker& packer, std::initializer_list<const GgufTensor*> parts);
  void ensure_scratch(int64_t n_tokens, int64_t n_logits);
  void embed(const ForwardBatch& batch);
  // The step, block by block (forward() is the loop over layers; the blocks are in cpu_forward_blocks.cpp).
  // Tensor parallelism will all-reduce each block's output (xb_, [na][dim]) at the boundary marked in
  // attention_block and mlp_block; between those points every row of x_ is whole on every device.
  int64_t checked_layers(const ForwardBatch& batch, const KvStorage& kv) const;  // Error for a bad batch
  void begin_step(Step& s);                // scratch, embedding, slots, attention arguments
  void exit_point(int64_t l, Step& s);     // before layer l: rows confident enough leave (early exit)
  void attention_block(int64_t l, Step& s);  // xb_ = what layer l's attention adds to the stream
  void rope_and_store(int64_t l, Step& s);   // q/k biases, norms, RoPE, K smoothing, the KV write
  void attention_residual(int64_t l, Step& s, bool attn_on, bool mlp_on);  // x_ += xb_; xb_ = ffn_norm(x_)
  void mlp_block(int64_t l, Step& s);        // x_ += MLP(xb_) (or of the panel the residual quantized)
  void mlp_down_unfused(int64_t l, Step& s);  // xb_ = down(glu(gu_)), the product written out, then quantized
  void mlp_residual(int64_t l, Step& s);      // x_ += (post-normed) xb_
  // The offset to fuse a GEMM's input quantization with, or nullopt: the fused step is off, an observer reads
  // the float inputs, or the weights are float.
  std::optional<int32_t> fusable(bool on, const std::optional<int32_t>& corr) const {
    return on && !observer_ ? corr : std::nullopt;
  }
  // fn(i) for slots [0, count), split over the pool when count > 1 (prefill has hundreds of rows).
  void per_token(int64_t count, FunctionRef<void(int64_t)> fn);
  // The step's slots (cpu_forward_exit.cpp): slot_pos_, att_tables_, slot_row_ for every row in batch order, and
  // slot_logit_, the output row of each row that may exit (else -1).
  void begin_slots(const ForwardBatch& batch, bool exits);
  // At an exit layer: the exit head over the active slots that may exit; those above the threshold write their
  // logits and move behind the slots still running ([0, na) on entry). Returns the slots still running.
  int64_t exit_check(int64_t layer, int64_t na, float* logits);
  // The final norm and head over the logit rows still running (na of them); exited rows' logits are written.
  void final_logits(const ForwardBatch& batch, int64_t na, float* logits);

  const Model& model_;
  std::unique_ptr<ThreadPool> owned_pool_;  // (declared before pool_: it may be what pool_ refers to)
  ThreadPool& pool_;
  RopeTable rope_;
  RopeTable rope_local_;  // the windowed layers' own RoPE (ModelConfig::local_rope), else empty
  ActQuant act_quant_;  // how every GEMM quantizes its activations (BackendOptions::act_quant)
  FusedStep fused_ = FusedStep::from_env();  // set_fused_step
  OpProfile profile_;  // every forward adds to it (always on; see tinfer/op_profile.h)
  LinearObserver observer_;
  LayerSkip skip_;
  EarlyExit exit_;
  EarlyExitCounters exit_counters_;
  std::vector<Layer> layers_;
  std::vector<float> output_norm_;
  PackedMatrix output_;
  // Scratch, grown to the largest batch seen: x/xb [n][dim], qkv [n][q+2kv], att [n][q], gu [n][2 ffn],
  // ffn_in [n][ffn].
  int64_t cap_tokens_ = 0, cap_logits_ = 0;
  std::vector<float> x_, xb_, qkv_, att_, gu_, ffn_in_, hidden_, tmp_;
  ActPanel panel_;  // the fused step's quantized GEMM input (reshaped per GEMM; grown to the largest step)
  std::vector<const int32_t*> att_tables_;  // per slot: its sequence's block table (attention args)
  std::vector<const int32_t*> att_window_tables_;  // per slot: its window table (the cache's KV group 1), or empty
  std::vector<int32_t> slot_pos_, slot_row_, slot_logit_;  // per slot: position, batch row, output row or -1
  std::vector<float> exit_hidden_, exit_logits_;  // exit head scratch: [k][dim], [k][n_vocab]
};

std::unique_ptr<Backend> make_cpu_backend(const Model& model, const BackendOptions& opts);

}  // namespace tinfer
