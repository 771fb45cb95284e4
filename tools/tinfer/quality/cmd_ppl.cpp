// tinfer ppl: teacher-forced perplexity. The sequence is BOS + the encoded text, scored in windows of
// --ctx tokens every --stride tokens (the first window scores all its targets, each later one the
// targets past the previous window; default stride ctx-1: windows overlapping by one token).
// --llama-chunks scores llama.cpp's llama-perplexity windows instead (quality_stats.h: llama_chunk_windows), on
// the text's tokens with BOS only where the tokenizer adds one, so the two tools' figures compare directly.
// --save-logits keeps the run as a base; --kld-base compares this run against one (same tokens, same
// windows): perplexities, ΔPPL, KL divergence, top-1 agreement. Statistics: quality_stats.h; file
// format: logits_file.h. Last stdout line: nll=<mean> ppl=<perplexity> tokens=<n> [comparison], or
// one JSON object with --json.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/exit_flags.h"
#include "cli/kv_flags.h"
#include "model/model_identity.h"
#include "tinfer/error.h"
#include "core/timer.h"
#include "engine/session.h"
#include "quality/logits_file.h"
#include "backend/cpu/reference_forward.h"
#include "text/tokenizer/tokenizer.h"
#include "quality/ppl_scoring.h"
#include "quality/quality_stats.h"

namespace tinfer::cli {

namespace {
// The comparison report: human lines, then the machine-readable last line (key=value or JSON).
void print_comparison(const QualitySummary& s, const std::string& base_label, const std::string& this_label,
                      int64_t ctx, int64_t stride, bool json, const nlohmann::json& extra) {
  std::printf("base           %s\n", base_label.c_str());
  std::printf("this           %s\n", this_label.c_str());
  print_quality_lines(s);
  if (json) {
    nlohmann::json j = quality_json(s, ctx, stride);
    j.update(extra);
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf(
        "nll=%.4f ppl=%.4f tokens=%lld ppl_base=%.4f dppl=%.5f dppl_se=%.5f kld_mean=%.6g kld_median=%.6g "
        "kld_p99=%.6g kld_max=%.6g top1=%.4f\n",
        s.nll_this, s.ppl_this, (long long)s.n, s.ppl_base, s.dppl, s.dppl_se, s.kl_mean, s.kl_median, s.kl_p99,
        s.kl_max, s.top1);
  }
}

std::vector<OptionSpec> ppl_options() {
  auto spec = concat(model_options(),
                     {{"-f,--file", "text file to score (with --kld-base: optional, must encode to the base's tokens)"},
                      {"--max-tokens", "score at most this many target tokens (0 = all)", true, "0"},
                      {"--max-bytes", "read at most this many bytes of the file (0 = all)", true, "0"},
                      {"--stride", "score each window's last N targets, windows every N tokens (default ctx-1)"},
                      {"--llama-chunks",
                       "llama-perplexity's windows: disjoint chunks of --ctx tokens, each scoring its second half; BOS "
                       "only where the tokenizer adds one (at each chunk's start)",
                       false},
                      {"--reference", "score with the reference forward pass (fp32/fp64 oracle, slow)", false},
                      {"--save-logits", "save this run as a base for --kld-base (tokens, vocabulary, log-probs)"},
                      {"--kld-base", "compare against a --save-logits file: KL divergence, ΔPPL, top-1 agreement"},
                      {"--dump-logits", "(testing) write every scored position's fp32 logits as a .npy file"},
                      {"--json", "print one JSON object on the last line", false},
                      act_quant_option()});
  return concat(concat(spec, kv_type_options()), early_exit_options());
}

// What is scored: the tokens, the window length and stride (the base's with --kld-base), the windows.
struct PplPlan {
  std::vector<int32_t> seq;
  int64_t ctx = 0, stride = 0;
  std::vector<ScoreWindow> windows;
  uint64_t n_records = 0;  // scored positions
};

// --llama-chunks: the text's tokens (BOS first where the tokenizer adds one, as llama.cpp tokenizes), cut to
// max_tokens + 1 like the default schedule, in llama-perplexity's windows.
PplPlan plan_llama_chunks(const Args& args, const Model& model, long long max_bytes, long long max_tokens) {
  check(!args.has("--kld-base") && !args.has("--save-logits") && !args.has("--stride"),
        "--llama-chunks scores its own windows: not with --stride, --save-logits or --kld-base");
  check(args.has("--file"), "missing -f TEXT");
  const Tokenizer& tok = model.tokenizer();
  PplPlan p;
  p.seq = tok.encode(read_text_file(args.str("--file"), max_bytes), tok.add_bos_by_default());
  if (max_tokens > 0 && int64_t(p.seq.size()) > max_tokens + 1) p.seq.resize(size_t(max_tokens + 1));
  p.ctx = context_length(args, model);
  p.stride = p.ctx;
  p.windows = llama_chunk_windows(int64_t(p.seq.size()), p.ctx, tok.add_bos_by_default() ? tok.bos() : -1);
  for (const auto& w : p.windows) p.n_records += uint64_t(w.end - w.first_target);
  return p;
}

PplPlan plan_scoring(const Args& args, const Model& model, const std::optional<LogitsReader>& base,
                     const VocabFingerprint& vocab, long long max_bytes, long long max_tokens) {
  PplPlan p;
  if (args.flag("--llama-chunks")) return plan_llama_chunks(args, model, max_bytes, max_tokens);
  if (args.has("--file"))
    p.seq = scoring_sequence(model.tokenizer(), read_text_file(args.str("--file"), max_bytes), max_tokens);
  if (base) {
    const LogitsFileInfo& b = base->info();
    check_comparable(b, vocab, model.config().n_vocab);
    if (p.seq.empty())
      p.seq = b.tokens;  // no -f: score the base's tokens
    else
      check_same_tokens(b.tokens, p.seq);
    p.ctx = b.ctx;
    p.stride = b.stride;
    check(!args.has("--ctx") || args.integer("--ctx") == p.ctx,
          "the base run used --ctx " + std::to_string(p.ctx) + "; a comparison scores the same windows");
    check(!args.has("--stride") || args.integer("--stride") == p.stride,
          "the base run used --stride " + std::to_string(p.stride) + "; a comparison scores the same windows");
    check(p.ctx <= model.config().ctx_len, "the base run's --ctx " + std::to_string(p.ctx) +
                                               " exceeds this model's context length " +
                                               std::to_string(model.config().ctx_len));
  } else {
    p.ctx = context_length(args, model);
    check(p.ctx >= 2, "--ctx must be at least 2");
    p.stride = args.has("--stride") ? args.integer("--stride") : p.ctx - 1;
  }
  p.windows = score_windows(int64_t(p.seq.size()), p.ctx, p.stride);
  for (const auto& w : p.windows) p.n_records += uint64_t(w.end - w.first_target);
  check(!base || base->info().n_records == p.n_records,
        "the base logits file holds " + std::to_string(base ? base->info().n_records : 0) +
            " positions, its windows score " + std::to_string(p.n_records));
  return p;
}

// Where each scored position goes besides the mean: a saved base, a logits dump, the comparison with a base.
struct PplSinks {
  std::optional<LogitsWriter> save;
  std::optional<NpyWriter> dump;
  std::optional<LogitsReader>& base;
  QualityAccumulator acc;
};

struct PplTotals {
  double nll_sum = 0, secs = 0;
  int64_t scored = 0;
};

PplTotals score_all(WindowLogits& scorer, const PplPlan& p, int64_t n_vocab, PplSinks& out) {
  std::vector<double> logp(static_cast<size_t>(n_vocab));
  LogitsRecord rec;
  PplTotals r;
  const double t0 = now_s();
  for (const ScoreWindow& w : p.windows) {
    const std::vector<float>& logits = scorer.score(p.seq, w);
    for (int64_t t = w.first_target; t < w.end; ++t, ++r.scored) {
      const float* row = &logits[(t - w.first_target) * n_vocab];
      const int32_t top = log_softmax(row, n_vocab, logp.data());
      const double nll = -logp[p.seq[t]];
      r.nll_sum += nll;
      if (out.dump) out.dump->row(row, uint64_t(n_vocab));
      if (out.save) out.save->write(uint32_t(t), top, nll, logp.data());
      if (out.base) {
        out.base->next(uint32_t(t), rec);
        out.acc.add(rec.nll, nll, kl_divergence(rec.logp.data(), logp.data(), n_vocab), rec.argmax == top);
      }
    }
  }
  r.secs = now_s() - t0;
  if (out.save) out.save->finish();
  if (out.dump) out.dump->close();
  return r;
}

// What early exit did: share of the scored steps that exited, layers run on average.
void report_early_exit(const Args& args, const Loaded& l, nlohmann::json& extra) {
  const EarlyExitCounters ex = l.backend->early_exit_counters();
  const int64_t L = l.model->config().n_layers;
  std::fprintf(stderr, "early exit     %s: %.1f%% of %lld decode steps exited, %.2f of %lld layers on average\n",
               early_exit(args).describe(L).c_str(), 100 * ex.share(), (long long)ex.eligible, ex.mean_layers(L),
               (long long)L);
  extra["early_exit"] = early_exit(args).describe(L);
  extra["early_exit_share"] = ex.share();
  extra["mean_layers"] = ex.mean_layers(L);
}

}  // namespace

int cmd_ppl(int argc, char** argv) {
  Args args(argc, argv, ppl_options(),
            "tinfer ppl -m MODEL -f TEXT [--ctx N] [--stride S | --llama-chunks] [--max-tokens N] [--kv-dtype T] [--kv-dtype-k T] [--kv-dtype-v T] [--reference]\n"
            "       [--act-quant block32|token] [--save-logits FILE | --kld-base FILE] [--json]");
  const long long max_bytes = args.integer("--max-bytes"), max_tokens = args.integer("--max-tokens");
  check(max_bytes >= 0 && max_tokens >= 0, "--max-bytes and --max-tokens must be >= 0");
  std::optional<LogitsReader> base;
  if (args.has("--kld-base")) base.emplace(args.str("--kld-base"));  // a bad file fails before the model loads
  check(base || args.has("--file"), "missing -f TEXT");

  Loaded l = load_model(args);
  const int64_t n_vocab = l.model->config().n_vocab;
  const VocabFingerprint vocab = VocabFingerprint::of(l.model->tokenizer());
  const PplPlan p = plan_scoring(args, *l.model, base, vocab, max_bytes, max_tokens);
  const bool use_ref = args.flag("--reference");
  check(!(use_ref && args.has("--early-exit")),
        "--early-exit is the fast path's: the reference forward scores every layer (compare with --kld-base instead)");
  const KvPrecision kv = use_ref ? kv_precision(args, l.model->config().n_layers)
                                 : kv_precision(args, *l.backend, l.model->tokenizer());
  const std::string label = std::filesystem::path(args.str("--model")).filename().string() +
                            (use_ref ? " reference" : " fast, kv " + kv.describe());
  PplSinks sinks{.base = base};
  if (args.has("--save-logits"))
    sinks.save.emplace(args.str("--save-logits"), LogitsFileInfo{vocab, uint32_t(n_vocab), uint32_t(p.ctx),
                                                                 uint32_t(p.stride), p.seq, p.n_records, label});
  if (args.has("--dump-logits")) sinks.dump.emplace(args.str("--dump-logits"), p.n_records, uint64_t(n_vocab));

  std::unique_ptr<ReferenceForward> ref;
  if (use_ref) ref = std::make_unique<ReferenceForward>(*l.model, skip_plan(args, model_identity(*l.model)));
  // With --early-exit (any threshold, 1 included: the baseline) one token per step, as decode runs it.
  const bool decode_steps = args.has("--early-exit");
  WindowLogits scorer(*l.backend, p.ctx, kv, ref.get(), decode_steps ? 1 : 512);
  const PplTotals r = score_all(scorer, p, n_vocab, sinks);
  const double mean = r.nll_sum / double(r.scored);
  std::fprintf(stderr, "scored %lld tokens in %.2f s (%.1f tok/s), windows of %lld tokens every %lld, %s path\n",
               (long long)r.scored, r.secs, r.scored / r.secs, (long long)p.ctx, (long long)p.stride,
               ref ? "reference" : "fast");
  nlohmann::json extra = {{"tok_s", r.scored / r.secs}};
  if (decode_steps) report_early_exit(args, l, extra);
  if (!base) {
    if (args.flag("--json")) {
      nlohmann::json j = {{"nll", mean}, {"ppl", std::exp(mean)}, {"tokens", r.scored}, {"ctx", p.ctx}, {"stride", p.stride}};
      j.update(extra);
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("nll=%.4f ppl=%.4f tokens=%lld\n", mean, std::exp(mean), (long long)r.scored);
    }
    return 0;
  }
  print_comparison(sinks.acc.summarize(), base->info().label, label, p.ctx, p.stride, args.flag("--json"), extra);
  return 0;
}

}  // namespace tinfer::cli
