// A Hugging Face checkpoint directory read as a GGUF file: config.json, *.safetensors (one file or shards with
// model.safetensors.index.json), tokenizer.json, tokenizer_config.json and generation_config.json when present.
// The result is a GgufFile *view*: metadata under the key names llama.cpp's convert_hf_to_gguf.py writes, tensors
// under GGUF names whose data points into the mapped safetensors wherever the bytes are usable as stored. Only what
// must change is materialised into owned memory: Gemma's (1 + w) norm weights, Llama 3's rope_freqs, and — in the
// llama.cpp layout — the q/k rows of `llama` models permuted from HF's rotate-half order into interleaved pairs.
#pragma once
#include <string>

#include "formats/gguf.h"

namespace tinfer {

struct HfViewOptions {
  // true: exactly the tensors llama.cpp's converter writes (llama q/k rows permuted into interleaved pairs; copies
  // those matrices). false (-m DIR): q/k kept in HF's order, zero-copy, and tinfer.rope.layout = "neox" tells the
  // llama reader to rotate half-split pairs, which is the same model.
  bool llama_cpp_layout = false;
};

// Error naming the directory and the problem (missing config.json, unknown architecture, a tensor the table
// cannot map, a shard the index names but the directory lacks, an unreadable tokenizer.json, ...).
GgufFile open_hf_checkpoint(const std::string& dir, const HfViewOptions& opts = {});

// True when `path` is a directory holding config.json (what Model::load treats as a checkpoint).
bool is_hf_checkpoint_dir(const std::string& path);

// A model path as GGUF: a directory through open_hf_checkpoint (default options), a file through GgufFile::open.
GgufFile open_gguf_or_hf(const std::string& path);

// llama.cpp's q/k permutation of one projection: `rows` = n_head * head_dim output rows of `row_bytes` bytes each;
// within every head, HF row s * (head_dim / 2) + i (s = 0, 1; i < head_dim / 2) moves to row 2i + s.
// inverse = true undoes it (GGUF order back to HF's; used to write synthetic HF checkpoints).
void permute_qk_rows(const uint8_t* src, uint8_t* dst, int64_t n_head, int64_t head_dim, size_t row_bytes,
                     bool inverse = false);

}  // namespace tinfer
