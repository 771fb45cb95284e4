// Backend: the device seam. The model runner, the batch-1 session, the engine and the tools forward
// through this interface only; the CPU (cpu_forward.h) is its first implementation. A new device (CUDA)
// is a new directory implementing Backend and KvCache plus one line in backend_registry.cpp.
//
// Beyond forward(), a backend may offer capabilities (layer skip, early exit, the calibration observer, partial
// depth): callers ask supports() first, as ggml's backend supports_op; a setter of a capability the backend
// lacks throws Error "backend 'X' does not support Y". No caller needs to know which backend it holds.
//
// Data flow of one step: the caller fills a ForwardBatch (plain host data: token ids, positions, block
// tables), the backend writes each token's K/V into its KvCache blocks and returns fp32 logits rows on
// the host ([batch.logit_rows.size()][n_vocab]).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tinfer/act_quant.h"
#include "tinfer/early_exit.h"
#include "tinfer/layer_skip.h"
#include "tinfer/kv_precision.h"
#include "tinfer/op_profile.h"
#include "backend/forward_batch.h"
#include "model/model_config.h"

namespace tinfer {

class Model;
class ThreadPool;

// KV cache memory owned by one backend, in fixed-size blocks of block_size token slots per layer. Which
// block holds which positions is decided by the caller's block tables (src/kvcache), never here.
class KvCache {
 public:
  virtual ~KvCache() = default;
  virtual int64_t n_blocks() const = 0;
  virtual int64_t block_size() const = 0;
  virtual const KvPrecision& precision() const = 0;  // each layer's K and V element types
  virtual size_t bytes() const = 0;
  // Copies K and V of block src into block dst in every layer of KV group `group` (copy-on-write of a shared
  // block; group 1 = the sliding-window layers when the cache keeps them apart, see allocate_kv).
  virtual void copy_block(int64_t src, int64_t dst, int group = 0) = 0;
};

// What a backend may be able to do beyond forward(), queried with Backend::supports().
enum class BackendCapability {
  kLayerSkip,           // set_layer_skip / BackendOptions::skip: sub-blocks every forward leaves out
  kEarlyExit,           // set_early_exit / BackendOptions::early_exit, its counters and cost model (layer_bytes ...)
  kActivationObserver,  // set_linear_observer: every linear layer's input and the residual stream (calibration)
  kPartialDepth,        // ForwardBatch::n_layers: run only the first layers (self-speculative drafting)
};
// "layer skip", "early exit", ... (the error messages' words).
const char* capability_name(BackendCapability cap);

// Which input of a decoder block's linear layers an observer sees: the attention RMSNorm output (q/k/v),
// the attention output (o), the FFN RMSNorm output (gate/up), SiLU(gate) * up (down); and kAttnQkv, the
// attention's own inputs: rows of q | k | v after RoPE ([n][q_dim + 2 kv_dim]), before K smoothing and the
// KV write (KV-cache calibration). And the residual stream (layer-skip calibration): kResidual, the stream
// entering layer l ([n][dim]); kAttnDelta / kMlpDelta, what the attention / MLP block adds to it ([n][dim],
// before the add). A skipped block is not observed.
enum class LinearInput { kAttnIn, kAttnOut, kFfnIn, kFfnMid, kAttnQkv, kResidual, kAttnDelta, kMlpDelta };
// x: n rows of `cols` floats (contiguous), the input of every token of the step to those layers.
using LinearObserver =
    std::function<void(int64_t layer, LinearInput which, const float* x, int64_t n, int64_t cols)>;

struct BackendOptions {
  int threads = 0;               // CPU: worker threads (0 = all cores) when no pool is given
  ThreadPool* pool = nullptr;    // CPU: run on this pool (shared with the caller) instead of an own one
  int64_t max_positions = 0;     // longest sequence to position; 0 = the model's context; more is refused
  ActQuant act_quant = ActQuant::block32;  // CPU: int8 activation scales per 32-block or per token (row)
  LayerSkip skip;  // sub-blocks every forward leaves out (a calibrated skip plan); empty = none
  EarlyExit early_exit;  // per-token early exit (tinfer/early_exit.h); off by default
  // CPU: a directory for packed-weight caches (backend/cpu/packed_cache.h); "" = pack every load.
  std::string packed_cache;
  // CPU: how a cache file's matrices are used: mapped in place (false: page-cache pages, no copy, 4 KiB pages)
  // or copied into huge-page buffers (true: decode exactly as after packing).
  bool packed_cache_copy = false;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual const ModelConfig& config() const = 0;
  virtual size_t weight_bytes() const = 0;     // weights as held by the device (packed)
  // Weight bytes one decode step reads (the roofline's): those of the sub-blocks a layer skip leaves out excluded.
  virtual size_t weight_bytes_read() const { return weight_bytes(); }
  virtual int64_t max_positions() const = 0;   // positions 0..max_positions()-1 can be run
  // KV memory on this device for n_blocks blocks of block_size slots, every layer, each in its own types
  // (precision.n_layers() must equal the model's). The KvDtype overload: one type for every K and V.
  // n_window_blocks > 0: the sliding-window layers (ModelConfig::window) get a pool of their own of that many
  // blocks, addressed by ForwardBatch::window_tables (KV group 1); 0: every layer shares the n_blocks.
  virtual std::unique_ptr<KvCache> allocate_kv(int64_t n_blocks, int64_t block_size, const KvPrecision& precision,
                                               int64_t n_window_blocks = 0) = 0;
  std::unique_ptr<KvCache> allocate_kv(int64_t n_blocks, int64_t block_size, KvDtype dtype) {
    return allocate_kv(n_blocks, block_size, KvPrecision::uniform(config().n_layers, dtype));
  }
  // One step over a cache this backend allocated; see the data flow above.
  virtual void forward(const ForwardBatch& batch, KvCache& kv, float* logits) = 0;
  // Time by operator category of every forward so far (the caller resets it between phases); enable its
  // trace to keep a timeline. Not thread-safe: read it on the thread that calls forward().
  virtual OpProfile& profile() = 0;
  // Early exit so far (rows that could exit, exited, where); all zero when the backend has none.
  virtual EarlyExitCounters early_exit_counters() const { return {}; }

  // Capabilities (see the top). Every default below belongs to a backend with none: the queries answer
  // "nothing skipped, no exit", the setters and cost queries throw the error of require().
  virtual bool supports(BackendCapability) const { return false; }
  // Error "backend 'X' does not support Y" (+ " (needed by `who`)") unless supports(cap).
  void require(BackendCapability cap, std::string_view who = {}) const;
  // kActivationObserver: called on the forward's thread with each linear input, between parallel regions (the
  // backend's workers are idle). Empty (the default) turns it off.
  virtual void set_linear_observer(LinearObserver obs);
  // kLayerSkip: the sub-blocks every later forward leaves out; Error for a plan naming another layer count.
  virtual void set_layer_skip(LayerSkip skip);
  virtual const LayerSkip& layer_skip() const;
  // kEarlyExit: per-token early exit for every later forward; Error for exit layers outside [1, n_layers - 1] or
  // not ascending, or a threshold outside [0, 1]. The counters carry on.
  virtual void set_early_exit(EarlyExit exit);
  virtual const EarlyExit& early_exit() const;
  // kEarlyExit, its cost model: weight bytes of layer l's kept sub-blocks, of its QKV projection (what state
  // copying reads per deeper layer; 0 when its attention is skipped), and of the output head.
  virtual size_t layer_bytes(int64_t l) const;
  virtual size_t qkv_bytes(int64_t l) const;
  virtual size_t head_bytes() const;
};

// The registry: "cpu" today. Throws Error naming the known backends for an unknown name, and the require() error
// for options asking a capability the backend lacks (a skip plan, early exit).
std::unique_ptr<Backend> create_backend(std::string_view name, const Model& model, const BackendOptions& opts = {});
std::vector<std::string> backend_names();

}  // namespace tinfer
