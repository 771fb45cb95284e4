// `tinfer convert DIR -o FILE.gguf`: a Hugging Face checkpoint written as the GGUF llama.cpp's converter writes —
// its key names, its tensor names, llama's q/k rows permuted into interleaved pairs, Gemma's norms as 1 + w, 1-D
// tensors as f32 and matrices in the chosen type. Streamed tensor by tensor (one tensor in memory at a time).
#pragma once
#include <cstdint>
#include <string>

namespace tinfer {

struct HfConvertReport {
  int64_t tensors = 0;
  uint64_t bytes_out = 0;
  std::string arch;
  bool validated = false;  // the architecture is registered: its reader and binder accepted the result
};

// outtype: "f32", "f16", "bf16" or "as-is" (matrices keep their stored type). Before writing, when the
// architecture is registered, the view is read and bound as a model would be (shapes against config.json, the
// tokenizer against the vocabulary size). Error naming the problem.
HfConvertReport convert_hf_checkpoint(const std::string& dir, const std::string& out_path, const std::string& outtype);

}  // namespace tinfer
