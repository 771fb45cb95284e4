// tinfer derive -m MODEL --keep-layers 0-9 -o OUT: a GGUF with a subset of the model's layers (renumbered),
// the same tokenizer, embeddings and head (src/quantize/derive_model.h). Prints what it kept on stderr.
#include <cstdio>

#include "cli/commands.h"
#include "cli/common.h"
#include "tinfer/error.h"
#include "formats/gguf.h"
#include "model/hf/hf_checkpoint.h"
#include "quantize/derive_model.h"

namespace tinfer::cli {

int cmd_derive(int argc, char** argv) {
  Args args(argc, argv,
            {{"-m,--model", "source model (.gguf, or a known name)", true, "", false, true},
             {"--keep-layers", "layers to keep, ascending: 0-9 | 0-3,20,21 | all"},
             {"-o,--output", "output .gguf path"}},
            "tinfer derive -m MODEL --keep-layers 0-9 -o DRAFT.gguf");
  check(args.has("--model"), "missing -m MODEL");
  check(args.has("--keep-layers"), "missing --keep-layers (e.g. 0-9)");
  check(args.has("--output"), "missing -o FILE");
  const std::string in = args.str("--model"), out = args.str("--output");
  check(in != out, "the output path '" + out + "' is the input file");
  const GgufFile src = open_gguf_or_hf(in);  // a directory: a Hugging Face checkpoint
  const auto arch = src.get_string("general.architecture");
  check(arch.has_value(), in + ": no general.architecture");
  const auto n = src.get_int(*arch + ".block_count");
  check(n.has_value() && *n >= 1 && *n <= 100000, in + ": no valid " + *arch + ".block_count");
  const std::vector<int> keep = parse_layer_list(args.str("--keep-layers"), int(*n));
  const DeriveReport r = derive_model(src, keep, out);
  std::fprintf(stderr, "wrote %s: layers %s of %d (%d kept), %lld tensors (%lld dropped), %.2f MB\n", out.c_str(),
               format_layer_list(keep).c_str(), r.src_layers, r.kept_layers, static_cast<long long>(r.tensors),
               static_cast<long long>(r.dropped_tensors), double(r.bytes_out) / 1e6);
  return 0;
}

}  // namespace tinfer::cli
