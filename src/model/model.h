// Model: a loaded model file (GGUF, or a llama2.c .bin converted to a GGUF image), its validated
// configuration, its tensors bound by the architecture, and its tokenizer. Read-only once loaded;
// forward passes (reference and fast) are built on top of it.
#pragma once
#include <memory>
#include <string>

#include "model/arch/arch.h"
#include "formats/gguf.h"
#include "model/model_config.h"
#include "text/tokenizer/tokenizer.h"

namespace tinfer {

struct ModelLoadOptions {
  std::string tokenizer_path;  // llama2.c .bin models: tokenizer .bin (default: tok<vocab>.bin beside the model)
};

// The validated configuration of a GGUF file from its metadata and tensor table alone: the architecture's
// reader without binding tensors, loading the tokenizer or packing anything (tinfer kv-plan). Error naming
// the problem (missing key, unknown architecture, inconsistent sizes).
ModelConfig read_model_config(const GgufFile& gguf);

class Model {
 public:
  // Loads and validates; throws Error with a message naming the file and the problem.
  static std::unique_ptr<Model> load(const std::string& path, const ModelLoadOptions& opts = {});
  // From an in-memory GGUF image (tests, synthetic models).
  static std::unique_ptr<Model> from_gguf_bytes(const std::vector<uint8_t>& bytes);
  // Over a GgufFile already open or assembled (GgufFile::from_view: quantize-on-load's in-memory model); `path`
  // is for messages and ModelIdentity::file.
  static std::unique_ptr<Model> from_gguf(GgufFile gguf, std::string path);

  const ModelConfig& config() const { return config_; }
  const DecoderTensors& tensors() const { return tensors_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const GgufFile& gguf() const { return gguf_; }
  const std::string& path() const { return path_; }
  std::string chat_template() const;  // tokenizer.chat_template, or "" if absent
  size_t weight_bytes() const;        // bytes of all tensors as stored

 private:
  Model(GgufFile gguf, std::string path);
  GgufFile gguf_;
  std::string path_;
  ModelConfig config_;
  DecoderTensors tensors_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace tinfer
