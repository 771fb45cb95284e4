// ModelIdentity: which model a plan file was made for (tinfer calibrate-kv, and later calibrate-* plans).
// The fingerprint hashes what makes a model itself, cheaply and independent of the file's name or path: every
// metadata key and value, the tensor table (names, types, shapes), and the first and last 256 bytes of every
// tensor's data (two pages per tensor touched, so even same-shaped models with other weights differ).
#pragma once
#include <cstdint>
#include <string>

#include "model/model.h"

namespace tinfer {

struct ModelIdentity {
  std::string file;         // the file name (no directory), for messages only
  std::string name;         // general.name ("" if absent)
  int64_t n_layers = 0, n_kv_heads = 0, head_dim = 0;
  std::string fingerprint;  // "fnv1a64:<16 hex digits>"
};

// FNV-1a 64 over the metadata, the tensor table and each tensor's first and last 256 bytes.
std::string gguf_fingerprint(const GgufFile& file);
ModelIdentity model_identity(const Model& model);
// Without building a tokenizer or binding tensors when the file is GGUF (a llama2.c .bin is converted, as
// Model::load does). Throws Error naming the file on a missing or malformed file.
ModelIdentity read_model_identity(const std::string& path, const ModelLoadOptions& opts = {});

}  // namespace tinfer
