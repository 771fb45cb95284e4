// Synthetic models as Hugging Face checkpoint directories: the GGUF that synthesize_model writes, "unconverted" —
// config.json, the weights in safetensors (HF names and row order: llama's interleaved q/k rows permuted back to
// rotate-half), sharded with model.safetensors.index.json, tokenizer.json (the synthetic SentencePiece vocabulary as
// a byte-fallback BPE with one merge per multi-character piece) and tokenizer_config.json. Converting the directory
// back (open_hf_checkpoint with the llama.cpp layout) gives the synthetic GGUF's tensors byte for byte.
#pragma once
#include <string>

#include "model/synth/synth.h"

namespace tinfer {

struct HfSynthOptions {
  int shards = 2;  // 1: model.safetensors; more: model-0000i-of-0000n.safetensors + index
};

// spec.weight_type must be F32, F16 or BF16 (what safetensors holds). Error otherwise or on I/O failure.
void synthesize_hf_checkpoint(const SynthSpec& spec, const std::string& dir, const HfSynthOptions& opts = {});

// One safetensors file from GGUF-order tensors (shapes reversed to HF order in the header).
struct SafetensorsEntry {
  std::string name;
  DType type;
  std::vector<int64_t> gguf_shape;
  const uint8_t* data;
  size_t bytes;
};
void write_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& tensors);

}  // namespace tinfer
