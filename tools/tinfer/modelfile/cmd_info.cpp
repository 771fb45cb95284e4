// tinfer info: architecture, hyper-parameters, tensor types and bytes, KV-cache bytes per token.
#include <cstdio>
#include <map>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/quantize_flags.h"
#include "tinfer/kv_precision.h"
#include "tinfer/error.h"
#include "quant/type_table.h"

namespace tinfer::cli {

int cmd_info(int argc, char** argv) {
  Args args(argc, argv, concat(model_options(), {{"--tensors", "list every tensor", false}}), "tinfer info -m MODEL");
  check(args.has("--model"), "missing -m MODEL");
  auto model = load_model_file(args);  // --quantize-on-load: what the quantized model holds (--tensors lists it)
  const ModelConfig& c = model->config();
  std::printf("file           %s (GGUF v%u)\n", model->path().c_str(), model->gguf().version());
  std::printf("name           %s\n", c.name.c_str());
  std::printf("architecture   %s\n", c.arch.c_str());
  std::printf("vocab          %lld\n", (long long)c.n_vocab);
  std::printf("dim            %lld\n", (long long)c.dim);
  std::printf("layers         %lld\n", (long long)c.n_layers);
  std::printf("heads          %lld (kv heads %lld, head dim %lld)\n", (long long)c.n_heads, (long long)c.n_kv_heads,
              (long long)c.head_dim);
  std::printf("ffn            %lld\n", (long long)c.ffn_dim);
  std::printf("context        %lld\n", (long long)c.ctx_len);
  std::printf("rope           base %g, scale %g, dims %lld, %s", c.rope_base, c.rope_scale, (long long)c.rope_dim,
              c.rope_layout == RopeLayout::neox ? "neox (half-split)" : "interleaved pairs");
  if (!c.rope_freq_factors_long.empty())
    std::printf(", LongRoPE: short factors %g..%g, long %g..%g beyond %lld positions, attention factor %g",
                c.rope_freq_factors.front(), c.rope_freq_factors.back(), c.rope_freq_factors_long.front(),
                c.rope_freq_factors_long.back(), (long long)c.rope_orig_ctx, c.rope_attn_factor);
  else if (!c.rope_freq_factors.empty())  // Llama 3 scaling: the divisors run from the shortest wavelength to the longest
    std::printf(", per-frequency factors %g..%g (rope_freqs)", c.rope_freq_factors.front(), c.rope_freq_factors.back());
  std::printf("\n");
  if (c.sliding_window > 0) {
    int64_t windowed = 0;
    for (int64_t l = 0; l < c.n_layers; ++l) windowed += c.window(l) > 0;
    std::printf("attention      sliding window of %lld positions on %lld of %lld layers", (long long)c.sliding_window,
                (long long)windowed, (long long)c.n_layers);
    if (c.rope_base_swa > 0) std::printf(" (their RoPE base %g)", c.rope_base_swa);
    std::printf("\n");
  }
  if (c.embed_scale != 1.f || c.attn_scale > 0.f || c.ffn_act != FfnAct::silu)
    std::printf("block          embedding x %g, scores x %g, %s\n", c.embed_scale, c.scores_scale(),
                c.ffn_act == FfnAct::gelu_tanh ? "GeGLU (tanh GELU)" : "SwiGLU");
  std::printf("rms eps        %g\n", c.rms_eps);
  std::printf("output head    %s\n", c.tied_output ? "tied to token embedding" : "separate");
  std::map<std::string, std::pair<int, size_t>> by_type;
  for (const auto& t : model->gguf().tensors()) {
    auto& e = by_type[type_traits(t.type).name];
    e.first += 1;
    e.second += t.bytes;
    if (args.flag("--tensors")) {
      std::string shape;
      for (auto d : t.shape) shape += (shape.empty() ? "" : " x ") + std::to_string(d);
      std::printf("  %-28s %-5s [%s] %zu bytes\n", t.name.c_str(), type_traits(t.type).name, shape.c_str(), t.bytes);
    }
  }
  for (auto& [name, e] : by_type) std::printf("tensors        %-5s %4d tensors %12zu bytes\n", name.c_str(), e.first, e.second);
  std::printf("weights        %zu bytes (%.1f MiB)\n", model->weight_bytes(), model->weight_bytes() / 1048576.0);
  std::string per_token;
  for (const KvDtypeInfo& t : kKvDtypes)
    per_token += (per_token.empty() ? "" : ", ") +
                 std::to_string(KvPrecision::uniform(c.n_layers, t.type).bytes_per_token(c.n_kv_heads, c.head_dim)) +
                 " " + t.name;
  std::printf("kv per token   %s bytes (2 x %lld layers x %lld kv heads x (%lld head dim x bytes + scales))\n",
              per_token.c_str(), (long long)c.n_layers, (long long)c.n_kv_heads, (long long)c.head_dim);
  std::printf("kv at context  %.1f MiB fp32 for %lld tokens\n", c.kv_bytes_per_token(4) * double(c.ctx_len) / 1048576.0,
              (long long)c.ctx_len);
  const Tokenizer& tok = model->tokenizer();
  std::printf("tokenizer      %s, %d tokens, bos %d, eos %d\n", model->gguf().get_string("tokenizer.ggml.model").value_or("?").c_str(),
              tok.n_vocab(), tok.bos(), tok.eos());
  return 0;
}

}  // namespace tinfer::cli
