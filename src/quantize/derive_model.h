// tinfer derive: a smaller model file cut from a GGUF by keeping a subset of its transformer layers,
// renumbered 0..n-1, and everything else (tokenizer, embeddings, final norm, head, hyper-parameters) as in
// the source, byte for byte. The result shares the source's tokenizer by construction: the draft model of
// speculative decoding, the small model of request routing. It is a standard GGUF: the architecture's
// block_count is rewritten, per-layer metadata arrays (length = block_count) are subset the same way, and
// `tinfer.derive.layers` records which source layers were kept. Streamed through GgufOutputFile, so an
// error or a signal leaves no partial file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "formats/gguf.h"

namespace tinfer {

// "0-9", "0-3,20,21", "all": ascending, distinct layer indices in [0, n_layers). Error naming the problem.
std::vector<int> parse_layer_list(const std::string& spec, int n_layers);
// The canonical spelling of a list ("0-3,20-21").
std::string format_layer_list(const std::vector<int>& layers);

struct DeriveReport {
  int src_layers = 0;
  int kept_layers = 0;
  int64_t tensors = 0;        // written
  int64_t dropped_tensors = 0;
  uint64_t bytes_out = 0;     // the output file's size
};

// Writes `out_path` from `src` keeping `keep` (ascending, distinct, in range: parse_layer_list's output).
DeriveReport derive_model(const GgufFile& src, const std::vector<int>& keep, const std::string& out_path);

}  // namespace tinfer
