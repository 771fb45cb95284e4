// tinfer ppl: teacher-forced perplexity. The sequence is BOS + the encoded text, cut into windows
// of --ctx tokens that overlap by one token, so every target after the first token is scored once
// with the context of its window. Last stdout line: nll=<mean> ppl=<perplexity> tokens=<n>.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "core/error.h"
#include "core/timer.h"
#include "engine/session.h"
#include "model/reference_forward.h"
#include "model/tokenizer/tokenizer.h"

namespace tinfer::cli {

namespace {
// -log softmax(logits)[target], in double.
double nll_of(const float* logits, int64_t n_vocab, int32_t target) {
  double mx = logits[0];
  for (int64_t i = 1; i < n_vocab; ++i) mx = std::max(mx, double(logits[i]));
  double sum = 0;
  for (int64_t i = 0; i < n_vocab; ++i) sum += std::exp(double(logits[i]) - mx);
  return std::log(sum) + mx - double(logits[target]);
}
}  // namespace

int cmd_ppl(int argc, char** argv) {
  auto spec = concat(model_options(), {{"-f,--file", "text file to score"},
                                       {"--max-tokens", "score at most this many target tokens (0 = all)", true, "0"},
                                       {"--max-bytes", "read at most this many bytes of the file (0 = all)", true, "0"},
                                       {"--reference", "score with the reference forward pass (fp32/fp64 oracle, slow)", false},
                                       kv_dtype_option()});
  Args args(argc, argv, spec, "tinfer ppl -m MODEL -f TEXT [--ctx N] [--max-tokens N] [--kv-dtype f32|f16]");
  check(args.has("--file"), "missing -f TEXT");
  std::ifstream in(args.str("--file"), std::ios::binary);
  check(bool(in), "cannot read '" + args.str("--file") + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  long long max_bytes = args.integer("--max-bytes"), max_tokens = args.integer("--max-tokens");
  check(max_bytes >= 0 && max_tokens >= 0, "--max-bytes and --max-tokens must be >= 0");
  if (max_bytes > 0 && text.size() > size_t(max_bytes)) text.resize(max_bytes);

  Loaded l = load_model(args);
  const Tokenizer& tok = l.model->tokenizer();
  std::vector<int32_t> seq;
  if (tok.bos() >= 0) seq.push_back(tok.bos());
  for (int32_t t : tok.encode(text, false)) seq.push_back(t);
  if (max_tokens > 0 && int64_t(seq.size()) > max_tokens + 1) seq.resize(max_tokens + 1);
  check(seq.size() >= 2, "the text encodes to fewer than one target token");

  const int64_t ctx = context_length(args, *l.model), n_vocab = l.model->config().n_vocab;
  check(ctx >= 2, "--ctx must be at least 2");
  Session session(*l.backend, ctx, kv_dtype(args));
  std::unique_ptr<ReferenceForward> ref;
  if (args.flag("--reference")) ref = std::make_unique<ReferenceForward>(*l.model);
  std::vector<float> logits;
  double total = 0;
  int64_t scored = 0;
  double t0 = now_s();
  for (size_t start = 0; start + 1 < seq.size(); start += ctx - 1) {
    size_t end = std::min(seq.size(), start + size_t(ctx));
    std::vector<int32_t> window(seq.begin() + start, seq.begin() + end);
    if (ref) {
      logits.clear();
      for (const auto& row : ref->logits(window)) logits.insert(logits.end(), row.begin(), row.end());
    } else {
      session.reset();
      session.feed_all_logits(window, logits);
    }
    for (size_t i = 0; i + 1 < window.size(); ++i, ++scored) total += nll_of(&logits[i * n_vocab], n_vocab, window[i + 1]);
  }
  double secs = now_s() - t0;
  double mean = total / double(scored);
  std::fprintf(stderr, "scored %lld tokens in %.2f s (%.1f tok/s), windows of %lld tokens, %s path\n", (long long)scored,
               secs, scored / secs, (long long)ctx, ref ? "reference" : "fast");
  std::printf("nll=%.4f ppl=%.4f tokens=%lld\n", mean, std::exp(mean), (long long)scored);
  return 0;
}

}  // namespace tinfer::cli
