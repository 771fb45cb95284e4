// tinfer synth: a random-weight model with a real architecture's exact shapes (seeded, reproducible).
#include <cstdio>

#include "cli/commands.h"
#include "cli/common.h"
#include "tinfer/error.h"
#include "core/timer.h"
#include "model/synth/synth.h"
#include "model/synth/synth_hf.h"
#include "quant/type_table.h"

namespace tinfer::cli {

int cmd_synth(int argc, char** argv) {
  std::string presets;
  for (auto& n : synth_preset_names()) presets += (presets.empty() ? "" : "|") + n;
  Args args(argc, argv,
            {{"--like", "architecture shapes: " + presets},
             {"--type", "weight type: f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q2_k|q3_k|q4_k|q5_k|q6_k", true, "q8_0"},
             {"--seed", "random seed", true, "1"},
             {"-t,--threads", "threads (0 = all cores)", true, "0"},
             {"--format", "gguf | safetensors (a Hugging Face checkpoint directory; f32/f16/bf16 only)", true, "gguf"},
             {"--shards", "safetensors shards (1: model.safetensors)", true, "2"},
             {"-o,--output", "output .gguf path (a directory with --format safetensors)"}},
            "tinfer synth --like " + presets + " [--type q8_0|q4_0|f16|...] [--format gguf|safetensors] -o FILE|DIR");
  check(args.has("--like"), "missing --like (one of " + presets + ")");
  check(args.has("--output"), "missing -o FILE");
  const SynthSpec* preset = find_synth_preset(args.str("--like"));
  check(preset != nullptr, "unknown --like '" + args.str("--like") + "' (expected one of " + presets + ")");
  const TypeTraits* type = find_type(args.str("--type"));
  check(type != nullptr, "unknown --type '" + args.str("--type") + "'");
  SynthSpec spec = *preset;
  spec.weight_type = type->type;
  spec.seed = uint64_t(args.integer("--seed"));
  double t0 = now_s();
  const std::string format = args.str("--format");
  check(format == "gguf" || format == "safetensors", "unknown --format '" + format + "' (gguf, safetensors)");
  if (format == "gguf") synthesize_model(spec, args.str("--output"), int(args.integer("--threads")));
  else synthesize_hf_checkpoint(spec, args.str("--output"), {.shards = int(args.integer("--shards"))});
  std::fprintf(stderr, "wrote %s (%s, %s) in %.1f s\n", args.str("--output").c_str(), args.str("--like").c_str(),
               type->name, now_s() - t0);
  return 0;
}

}  // namespace tinfer::cli
