// Workload generation: deterministic for a given spec and seed.
#include "bench/bench_workload.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

#include "cli/common.h"
#include "tinfer/error.h"
#include "text/tokenizer/tokenizer.h"

namespace tinfer::cli {

int64_t Workload::prompt_tokens() const {
  int64_t n = 0;
  for (const auto& p : prompts) n += int64_t(p.size());
  return n;
}

int64_t Workload::output_tokens() const {
  int64_t n = 0;
  for (int l : output_lens) n += l;
  return n;
}

std::vector<std::string> read_prompt_file(const std::string& path) {
  std::ifstream in(path);
  check(in.good(), "cannot open prompt file " + path);
  std::vector<std::string> entries;
  std::string line, cur;
  auto flush = [&] {
    if (cur.find_first_not_of(" \t\n") != std::string::npos) entries.push_back(cur);
    cur.clear();
  };
  while (std::getline(in, line)) {
    if (line == "%") flush();
    else cur += (cur.empty() ? "" : "\n") + line;
  }
  flush();
  check(!entries.empty(), "prompt file " + path + " holds no entries");
  return entries;
}

namespace {

// lognormal: median e^mu = 64; sigma 1 puts P90 near 230 and P99 near 650 (then capped).
std::lognormal_distribution<double> long_tail() { return std::lognormal_distribution<double>(std::log(64.0), 1.0); }

int output_len(const WorkloadSpec& s, std::lognormal_distribution<double>& tail, std::mt19937_64& rng) {
  return s.output_dist == "fixed" ? std::min(s.output_len, s.max_tokens)
                                  : std::clamp(int(std::lround(tail(rng))), 1, s.max_tokens);
}

void check_lengths(const WorkloadSpec& s) {
  check(s.requests >= 1, "--requests must be >= 1");
  check(s.output_dist == "fixed" || s.output_dist == "longtail", "--output-dist must be fixed or longtail");
  check(s.max_tokens >= 1 && s.output_len >= 1 && s.input_len >= 1, "lengths must be >= 1");
}

}  // namespace

std::vector<int> draw_output_lens(const WorkloadSpec& s) {
  check_lengths(s);
  std::mt19937_64 rng(s.seed);
  auto tail = long_tail();
  std::vector<int> out;
  for (int i = 0; i < s.requests; ++i) out.push_back(output_len(s, tail, rng));
  return out;
}

Workload make_workload(const WorkloadSpec& s, const Tokenizer& tok, int n_vocab) {
  check_lengths(s);
  std::mt19937_64 rng(s.seed);
  // Token ids 3.. avoid <unk>/<s>/</s> in llama vocabularies.
  std::uniform_int_distribution<int32_t> id(3, n_vocab - 1);
  std::vector<int32_t> prefix(s.shared_prefix);
  for (auto& t : prefix) t = id(rng);
  std::vector<std::string> entries;
  if (!s.prompts_file.empty()) entries = read_prompt_file(s.prompts_file);
  auto tail = long_tail();

  Workload w;
  for (int i = 0; i < s.requests; ++i) {
    const int out = output_len(s, tail, rng);
    std::vector<int32_t> body;
    if (entries.empty()) {
      for (int j = 0; j < s.input_len; ++j) body.push_back(id(rng));
    } else {
      body = encode_prompt(tok, entries[size_t(i) % entries.size()]);
      if (!body.empty() && body[0] == tok.bos()) body.erase(body.begin());
    }
    std::vector<int32_t> p;
    if (tok.bos() >= 0) p.push_back(tok.bos());
    p.insert(p.end(), prefix.begin(), prefix.end());
    p.insert(p.end(), body.begin(), body.end());
    if (entries.empty() && tok.bos() >= 0) p.pop_back();  // input_len counts BOS
    if (s.max_model_len > 0) {
      check(int(prefix.size()) + 2 + out <= s.max_model_len, "shared prefix + output does not fit max_model_len");
      if (int(p.size()) + out > s.max_model_len) p.resize(size_t(s.max_model_len - out));
    }
    w.prompts.push_back(std::move(p));
    w.output_lens.push_back(out);
  }
  return w;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = size_t(std::ceil(p / 100.0 * double(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

}  // namespace tinfer::cli
