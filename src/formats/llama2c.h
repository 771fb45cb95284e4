// llama2.c legacy checkpoints (.bin: 7 x int32 header + fp32 weights in run.c order) and
// tokenizers (.bin), converted to an in-memory GGUF image with llama tensor names and metadata.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tinfer {

// The legacy header. vocab_size < 0 in the file means the classifier (wcls) is stored separately;
// here vocab_size is always positive and shared_classifier says which.
struct Llama2cConfig {
  int32_t dim = 0;         // embedding width
  int32_t hidden_dim = 0;  // FFN width
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t vocab_size = 0;
  int32_t seq_len = 0;  // context length the model was trained with
  bool shared_classifier = true;
  int32_t head_size() const { return dim / n_heads; }
};

// Reads and validates the header of `model_bin` (sizes are checked against the file size).
Llama2cConfig read_llama2c_config(const std::string& model_bin);

// Converts a llama2.c checkpoint to a GGUF v3 image (all tensors F32, arch "llama"). When
// `tokenizer_bin` is non-empty, its vocabulary becomes tokenizer.ggml.* (model "llama", bos 1, eos 2).
// A shared classifier is written as its own output.weight (a copy of token_embd.weight).
std::vector<uint8_t> llama2c_to_gguf(const std::string& model_bin, const std::string& tokenizer_bin = "");

}  // namespace tinfer
