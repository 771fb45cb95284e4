// tinfer convert: a Hugging Face checkpoint directory written as the GGUF llama.cpp's converter would write.
#include <cstdio>

#include "cli/commands.h"
#include "cli/common.h"
#include "tinfer/error.h"
#include "core/timer.h"
#include "model/hf/hf_convert.h"

namespace tinfer::cli {

int cmd_convert(int argc, char** argv) {
  Args args(argc, argv,
            {{"--outtype", "matrix type: f32|f16|bf16|as-is (1-D tensors are always f32)", true, "as-is"},
             {"-o,--output", "output .gguf path"}},
            "tinfer convert DIR -o FILE.gguf [--outtype f32|f16|bf16|as-is]\n  DIR: config.json, *.safetensors, tokenizer.json",
            1);
  check(!args.positionals().empty(), "missing the checkpoint directory");
  check(args.has("--output"), "missing -o FILE.gguf");
  const double t0 = now_s();
  const HfConvertReport r = convert_hf_checkpoint(args.positionals()[0], args.str("--output"), args.str("--outtype"));
  std::fprintf(stderr, "wrote %s (%s, %lld tensors, %.2f MB%s) in %.2f s\n", args.str("--output").c_str(),
               r.arch.c_str(), static_cast<long long>(r.tensors), double(r.bytes_out) / 1e6,
               r.validated ? "" : "; architecture not registered here, not checked by its reader", now_s() - t0);
  return 0;
}

}  // namespace tinfer::cli
