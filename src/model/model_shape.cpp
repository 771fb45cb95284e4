// ModelShape from a GGUF file's header (metadata + tensor table), plus the parameter and weight-byte
// arithmetic the table and config.json sources share.
#include "model/model_shape.h"
#include "model/hf/hf_checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "tinfer/error.h"
#include "formats/gguf.h"
#include "model/model.h"
#include "quant/type_table.h"

namespace tinfer {

int64_t llama_param_count(const ModelConfig& c, bool tied_embeddings, bool attn_bias) {
  const int64_t q = c.q_dim(), kv = c.kv_dim(), d = c.dim;
  int64_t layer = d * q + 2 * d * kv + q * d  // wq [d, q], wk/wv [d, kv], wo [q, d]
                  + 3 * d * c.ffn_dim         // gate, up [d, ffn], down [ffn, d]
                  + 2 * d;                    // attention and ffn RMSNorm
  if (attn_bias) layer += q + 2 * kv;
  return c.n_layers * layer + c.n_vocab * d * (tied_embeddings ? 1 : 2) + d;  // + final norm
}

int64_t weight_bytes_as(int64_t params, const std::string& type) {
  const TypeTraits* t = find_type(type);
  if (!t) {
    std::string known;  // from the type table (GGUF type ids are small integers)
    for (uint32_t id = 0; id < 64; ++id)
      if (const TypeTraits* row = find_type(static_cast<DType>(id)))
        known += (known.empty() ? "" : "|") + std::string(row->name);
    fail("unknown weight type '" + type + "' (known: " + known + ")");
  }
  // Whole blocks: a partial block still takes its scales.
  const int64_t blocks = (params + t->block_size - 1) / t->block_size;
  return blocks * static_cast<int64_t>(t->block_bytes);
}

ModelShape model_shape_from_gguf(const std::string& path) {
  check(std::filesystem::exists(path), "model file '" + path + "' does not exist");
  if (!std::filesystem::is_directory(path)) {  // a directory is a Hugging Face checkpoint (open_gguf_or_hf)
    std::ifstream f(path, std::ios::binary);
    char magic[4] = {};
    f.read(magic, 4);
    check(f.gcount() == 4 && std::string(magic, 4) == "GGUF",
          "'" + path +
              "' is not a GGUF file (no GGUF magic): kv-plan reads a GGUF header; for other models use "
              "--like or --config config.json");
  }
  // open() maps the file and validates the header and tensor table; no tensor data is touched here.
  GgufFile gguf = open_gguf_or_hf(path);
  ModelShape s;
  try {
    s.config = read_model_config(gguf);
  } catch (const Error& e) {
    fail(path + ": " + e.what());
  }
  std::map<std::string, int64_t> by_type;  // type name -> bytes
  for (const GgufTensor& t : gguf.tensors()) {
    s.params += t.elements();
    s.weight_bytes += static_cast<int64_t>(t.bytes);
    by_type[type_traits(t.type).name] += static_cast<int64_t>(t.bytes);
  }
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto& [name, bytes] : by_type) order.push_back({bytes, name});
  std::sort(order.rbegin(), order.rend());
  for (const auto& [bytes, name] : order) s.weight_type += (s.weight_type.empty() ? "" : " + ") + name;
  s.weight_bytes_exact = true;
  s.source = (std::filesystem::is_directory(path) ? "Hugging Face checkpoint " : "GGUF file ") + path;
  return s;
}

}  // namespace tinfer
