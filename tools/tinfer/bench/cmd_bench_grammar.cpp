// tinfer bench grammar: what structured output costs on one model.
//   compile  every schema of --schemas DIR compiled afresh (no cache) over the model's vocabulary: P50/P99/max ms;
//   mask     per schema, a seeded random walk through its grammar: fill_mask time per token (P50/P99 us), which
//            the step pays once per constrained row;
//   tpot     the engine at each --batch size, with the --tpot-schema grammar and without (and with jump-forward on),
//            modes interleaved repeat by repeat (the host is noisy and bimodal): per mode the median TPOT (a
//            request's decode time over its tokens after the first), tokens per step, and the ratio to no grammar.
// Decode runs to --gen tokens: unconstrained requests ignore EOS; the schema must allow outputs that long.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/engine_flags.h"
#include "grammar/grammar_compiler.h"
#include "model/model.h"
#include "text/tokenizer/tokenizer.h"
#include "tinfer/error.h"

namespace tinfer::cli {
namespace {

using Clock = std::chrono::steady_clock;
using grammar::GrammarCompiler;
using grammar::GrammarKind;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5))];
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  check(f.good(), "bench grammar: cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<int32_t> eog_ids(const Tokenizer& tok) {
  std::vector<int32_t> s;
  for (int32_t t = 0; t < tok.n_vocab(); ++t)
    if (tok.is_eog(t)) s.push_back(t);
  return s;
}

// fill_mask seconds per step of a seeded walk: a random allowed token each step (a stop token only at the end).
std::vector<double> mask_walk(const TokenGrammar& g, int32_t n_vocab, int steps, uint64_t seed) {
  std::unique_ptr<TokenConstraint> c = g.start();
  std::vector<uint32_t> mask(mask_words(n_vocab));
  std::vector<double> out;
  std::mt19937_64 rng(seed);
  for (int s = 0; s < steps && !c->terminated(); ++s) {
    const auto t0 = Clock::now();
    const bool some = c->fill_mask(mask);
    out.push_back(since(t0));
    std::vector<int32_t> allowed;
    for (int32_t t = 0; t < n_vocab && some; ++t)
      if ((mask[size_t(t) / 32] >> (t % 32)) & 1u) allowed.push_back(t);
    if (allowed.empty()) break;
    if (!c->accept(allowed[rng() % allowed.size()])) break;
  }
  return out;
}

nlohmann::json compile_and_mask(const Model& m, const std::string& dir) {
  const Tokenizer& tok = m.tokenizer();
  const int32_t nv = int32_t(m.config().n_vocab);
  const auto t0 = Clock::now();
  GrammarCompiler compiler(tok, nv, eog_ids(tok), {.cache_bytes = 0, .threads = 2});  // nothing stays cached
  const double vocab_s = since(t0);
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  check(!files.empty(), "bench grammar: no .json schemas in " + dir);
  std::vector<double> compile_ms, fill_us;
  nlohmann::json per = nlohmann::json::array();
  std::printf("vocabulary preprocessing: %.1f ms (%d tokens, once per server)\n", vocab_s * 1e3, nv);
  std::printf("%-22s %10s %12s %12s %6s\n", "schema", "compile ms", "fill P50 us", "fill P99 us", "steps");
  for (const std::string& f : files) {
    const std::string src = read_file(f);
    const auto c0 = Clock::now();
    auto g = compiler.compile({GrammarKind::kJsonSchema, src});
    const double ms = since(c0) * 1e3;
    compile_ms.push_back(ms);
    std::vector<double> fills = mask_walk(*g, nv, 256, 1);
    for (double& s : fills) s *= 1e6;
    fill_us.insert(fill_us.end(), fills.begin(), fills.end());
    const std::string name = std::filesystem::path(f).filename().string();
    std::printf("%-22s %10.1f %12.1f %12.1f %6zu\n", name.c_str(), ms, quantile(fills, 0.5), quantile(fills, 0.99),
                fills.size());
    per.push_back({{"schema", name}, {"compile_ms", ms}, {"fill_p50_us", quantile(fills, 0.5)},
                   {"fill_p99_us", quantile(fills, 0.99)}, {"steps", fills.size()}});
  }
  std::printf("compile ms: P50 %.1f  P99 %.1f  max %.1f   fill us: P50 %.1f  P99 %.1f\n", quantile(compile_ms, 0.5),
              quantile(compile_ms, 0.99), *std::max_element(compile_ms.begin(), compile_ms.end()),
              quantile(fill_us, 0.5), quantile(fill_us, 0.99));
  return {{"vocab_ms", vocab_s * 1e3},
          {"compile_p50_ms", quantile(compile_ms, 0.5)},
          {"compile_p99_ms", quantile(compile_ms, 0.99)},
          {"fill_p50_us", quantile(fill_us, 0.5)},
          {"fill_p99_us", quantile(fill_us, 0.99)},
          {"schemas", per}};
}

struct Mode {
  const char* name;
  bool grammar, jump_forward;
  std::unique_ptr<Engine> engine;
  std::vector<double> tpot;          // per request, seconds
  int64_t steps = 0, tokens = 0;     // decode steps and tokens over all rounds
};

// One round: `batch` requests at once; each request's TPOT from its own event times.
void run_round(Mode& md, const std::shared_ptr<const TokenGrammar>& g, const std::vector<int32_t>& prompt, int batch,
               int gen) {
  std::map<RequestId, std::vector<Clock::time_point>> times;
  for (int b = 0; b < batch; ++b) {
    GenerationRequest r;
    r.prompt = prompt;
    r.prompt.push_back(int32_t(100 + b));  // distinct prompts: no request is another's prefix hit
    r.sampling.temperature = 0;
    r.max_tokens = gen;
    r.ignore_eos = true;
    if (md.grammar) r.grammar = g;
    md.engine->add_request(r, [&times](const TokenEvent& e) {
      if (e.has_token) times[e.id].push_back(Clock::now());
    });
  }
  const int64_t steps0 = md.engine->stats().steps;
  while (md.engine->has_work()) md.engine->step();
  md.steps += md.engine->stats().steps - steps0;
  for (const auto& [id, t] : times) {
    md.tokens += int64_t(t.size());
    if (t.size() > 2) md.tpot.push_back(std::chrono::duration<double>(t.back() - t[1]).count() / double(t.size() - 2));
  }
}

nlohmann::json tpot_table(const Args& args, const Model& m, const std::string& schema_path) {
  const Tokenizer& tok = m.tokenizer();
  GrammarCompiler compiler(tok, int32_t(m.config().n_vocab), eog_ids(tok));
  const auto g = compiler.compile({GrammarKind::kJsonSchema, read_file(schema_path)});
  const std::vector<int32_t> prompt = encode_prompt(tok, "A list of people as JSON, with their ids, names, emails and tags:");
  const int gen = int(args.integer("--gen")), repeat = int(args.integer("--repeat"));
  nlohmann::json out = nlohmann::json::array();
  std::stringstream bs(args.str("--batch"));
  for (std::string item; std::getline(bs, item, ',');) {
    const int batch = std::stoi(item);
    std::vector<Mode> modes;
    modes.push_back({"none", false, true, nullptr, {}, 0, 0});
    modes.push_back({"schema (jump-forward off)", true, false, nullptr, {}, 0, 0});
    modes.push_back({"schema, jump-forward on", true, true, nullptr, {}, 0, 0});
    for (Mode& md : modes) {
      EngineConfig c = engine_config(args);
      c.verbose = false;
      if (!args.has("--kv-memory")) c.kv.memory_bytes = int64_t(512) << 20;
      c.scheduler.max_model_len = 1024;
      c.grammar_jump_forward = md.jump_forward;
      md.engine = Engine::create(c);
    }
    for (int r = 0; r < repeat; ++r)
      for (Mode& md : modes) run_round(md, g, prompt, batch, gen);
    const double base = quantile(modes[0].tpot, 0.5);
    std::printf("batch %-3d %-26s %10s %14s %8s %18s\n", batch, "mode", "TPOT ms", "tokens/step", "vs none",
                "jump-forward tok");
    for (Mode& md : modes) {
      const double t = quantile(md.tpot, 0.5);
      const double tps = md.steps > 0 ? double(md.tokens) / double(md.steps) : 0;
      const EngineStats st = md.engine->stats();
      std::printf("          %-26s %10.2f %14.2f %8.3f %18lld\n", md.name, t * 1e3, tps, t / base,
                  (long long)st.grammar_jump_forward_tokens);
      out.push_back({{"batch", batch}, {"mode", md.name}, {"tpot_ms", t * 1e3}, {"tokens_per_step", tps},
                     {"ratio", t / base}, {"requests", md.tpot.size()},
                     {"jump_forward_tokens", st.grammar_jump_forward_tokens}});
    }
  }
  return out;
}

}  // namespace

int cmd_bench_grammar(int argc, char** argv) {
  Args args(argc, argv,
            concat(concat(model_options(), engine_options()),
                   {{"--schemas", "a directory of JSON Schemas to compile and walk", true, "bench/structured/schemas"},
                    {"--tpot-schema", "the schema of the TPOT runs (must allow --gen tokens)", true,
                     "bench/structured/schemas/people.json"},
                    {"--batch", "comma-separated concurrent requests of the TPOT runs", true, "1,16"},
                    {"--gen", "tokens per request", true, "128"},
                    {"--repeat", "rounds per mode (modes interleaved)", true, "3"},
                    {"--json", "print one JSON object on the last line", false}}),
            "tinfer bench grammar -m MODEL [--schemas DIR] [--tpot-schema FILE] [--batch 1,16] [--gen 128] [--repeat 3] "
            "[engine flags] [--json]");
  check(args.has("--model"), "missing -m MODEL\n" + args.help());
  const auto model = Model::load(args.str("--model"));
  nlohmann::json j;
  j["model"] = args.str("--model");
  j["masks"] = compile_and_mask(*model, args.str("--schemas"));
  j["tpot"] = tpot_table(args, *model, args.str("--tpot-schema"));
  if (args.flag("--json")) std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace tinfer::cli
