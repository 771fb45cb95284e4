// tinfer: one binary, one subcommand per file. Errors become one clear line and exit status 1.
#include <cstdio>
#include <cstring>
#include <exception>

#include "cli/args.h"
#include "cli/commands.h"
#include "tinfer/error.h"

namespace {

struct Entry {
  const char* name;
  tinfer::cli::Command fn;
  const char* help;
};

const Entry kCommands[] = {
    {"run", tinfer::cli::cmd_run, "generate a continuation of a prompt"},
    {"chat", tinfer::cli::cmd_chat, "interactive chat with the model's chat template"},
    {"info", tinfer::cli::cmd_info, "architecture, hyper-parameters, tensors, KV bytes per token"},
    {"ppl", tinfer::cli::cmd_ppl, "teacher-forced perplexity of a text file"},
    {"quantize", tinfer::cli::cmd_quantize, "quantize a GGUF (q8_0 ... q2_k, mixed recipe, rtn/gptq/awq) with a size and quality report"},
    {"convert", tinfer::cli::cmd_convert, "write a Hugging Face checkpoint directory as GGUF (llama.cpp's names and layout)"},
    {"derive", tinfer::cli::cmd_derive, "write a model with a subset of its layers (a draft / routing model sharing the tokenizer)"},
    {"calibrate-kv", tinfer::cli::cmd_calibrate_kv, "choose per-layer KV cache types within a quality budget; writes a --kv-plan file"},
    {"calibrate-exit", tinfer::cli::cmd_calibrate_exit, "choose the early-exit threshold within a quality budget; prints the --early-exit flags"},
    {"calibrate-skip", tinfer::cli::cmd_calibrate_skip, "choose layer sub-blocks to skip within a quality budget; writes a --skip-plan file"},
    {"calibrate-route", tinfer::cli::cmd_calibrate_route, "pick --route-threshold on a prompt mix against a routed server (agreement vs share on the small model)"},
    {"kv-plan", tinfer::cli::cmd_kv_plan, "KV cache accounting without loading weights: bytes/token, tokens and sequences that fit"},
    {"synth", tinfer::cli::cmd_synth, "write a random-weight model with a real architecture's shapes"},
    {"bench", tinfer::cli::cmd_bench, "prefill/decode speed vs roofline; bench throughput (engine), bench serve (HTTP load), bench route (routing between models)"},
    {"serve", tinfer::cli::cmd_serve, "OpenAI-compatible HTTP server (completions, chat, streaming, metrics)"},
    {"tokenize", tinfer::cli::cmd_tokenize, "print the tokens of a text"},
};

void usage(FILE* out) {
  std::fprintf(out, "usage: tinfer <command> [options]   (tinfer <command> --help: its options)\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(out, "  %-12s %s\n", c.name, c.help);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  for (const auto& c : kCommands) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    try {
      return c.fn(argc - 2, argv + 2);
    } catch (const tinfer::cli::HelpRequested& h) {
      std::fputs(h.text.c_str(), stdout);
      return 0;
    } catch (const tinfer::Error& e) {
      std::fprintf(stderr, "tinfer %s: error: %s\n", c.name, e.what());
      return 1;
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "tinfer %s: error: out of memory\n", c.name);
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tinfer %s: error: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "tinfer: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
