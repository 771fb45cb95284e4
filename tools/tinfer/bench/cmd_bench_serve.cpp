// tinfer bench serve: a load generator for any OpenAI-compatible server (tinfer serve, llama-server, vLLM), so
// every server's figures come from the same client. Streams every request; closed loop (C workers, each
// sending its next request when the last one ends) or open loop (--request-rate: seeded Poisson arrivals, at
// most C in flight). Per concurrency: requests/s, tokens/s (usage and SSE chunks), TTFT / TPOT / ITL
// percentiles, end-to-end latency, goodput under an SLO and errors by kind. --json: one object, last line.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/args.h"
#include "bench/bench_workload.h"
#include "cli/commands.h"
#include "tinfer/error.h"
#include "core/timer.h"
#include "bench/serve_client.h"

namespace tinfer::cli {

namespace {

using nlohmann::json;

struct Options {
  std::string endpoint, model, prompts_file;
  std::vector<int> concurrency;
  WorkloadSpec spec;
  int vocab = 512;
  double rate = 0, slo_ttft = 0, slo_tpot = 0;
  bool ignore_eos = true;
  double temperature = -1;  // < 0: not sent (the server's default)
  json extra_body = json::object();  // --extra-body: merged into every request (e.g. a response_format)
};

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    check(!item.empty() && *end == 0 && v >= 1 && v <= 1024,
          "--concurrency expects integers in 1..1024, got '" + s + "'");
    out.push_back(int(v));
  }
  check(!out.empty(), "--concurrency is empty");
  return out;
}

// Prompt texts: `%`-separated entries (as `bench throughput` reads them), or one per non-empty line when the
// file has no `%` line.
std::vector<std::string> prompt_texts(const std::string& path) {
  std::vector<std::string> entries = read_prompt_file(path);
  if (entries.size() > 1) return entries;
  std::vector<std::string> lines;
  std::stringstream ss(entries[0]);
  for (std::string l; std::getline(ss, l);)
    if (l.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(l);
  return lines;
}

// Words that are one token in common BPE vocabularies: chat prompts of about --input-len tokens.
const char* const kWords[] = {"the",  "of",    "and",  "to",    "in",   "is",     "was",   "that",  "for",
                              "on",   "with",  "as",   "at",    "by",   "he",     "she",   "it",    "we",
                              "they", "you",   "from", "or",    "an",   "be",     "this",  "which", "one",
                              "all",  "there", "time", "day",   "way",  "man",    "good",  "new",   "old",
                              "big",  "small", "long", "first", "last", "little", "great", "red"};

struct Level {
  std::vector<std::string> bodies;
  std::vector<int> max_tokens;  // [request]
};

// Request bodies for one concurrency level: `level` varies the seed (random prompts) or the starting entry
// (prompt file) so no level replays another's prompts into a prefix cache.
Level make_level(const Options& o, const std::vector<std::string>& texts, int level) {
  WorkloadSpec spec = o.spec;
  spec.seed = o.spec.seed + uint64_t(level) * 1000003u;
  const std::vector<int> out_lens = draw_output_lens(spec);
  std::mt19937_64 rng(spec.seed ^ 0x9e3779b97f4a7c15ull);
  std::uniform_int_distribution<int32_t> id(std::min(32, o.vocab - 1), o.vocab - 1);
  std::uniform_int_distribution<size_t> word(0, std::size(kWords) - 1);
  const bool chat = o.endpoint == "chat";
  Level l;
  l.max_tokens = out_lens;
  for (int i = 0; i < spec.requests; ++i) {
    json prompt;
    if (!texts.empty()) {
      prompt = texts[(size_t(level) * size_t(spec.requests) + size_t(i)) % texts.size()];
    } else if (!chat) {
      std::vector<int32_t> ids(size_t(spec.input_len));
      for (auto& t : ids) t = id(rng);
      prompt = ids;  // exact input length for servers that take token ids (OpenAI, vLLM, tinfer, llama-server)
    } else {
      std::string s;
      for (int j = 0; j < spec.input_len; ++j) s += (j ? " " : "") + std::string(kWords[word(rng)]);
      prompt = s;
    }
    json b = {{"max_tokens", out_lens[size_t(i)]}, {"stream", true}, {"stream_options", {{"include_usage", true}}}};
    if (!o.model.empty()) b["model"] = o.model;
    if (chat)
      b["messages"] = json::array({{{"role", "user"}, {"content", prompt}}});
    else
      b["prompt"] = prompt;
    if (o.ignore_eos) b["ignore_eos"] = true;
    if (o.temperature >= 0) b["temperature"] = o.temperature;
    b.update(o.extra_body);
    l.bodies.push_back(b.dump());
  }
  return l;
}

struct LevelRun {
  std::vector<RequestResult> results;
  double wall_s = 0;
};

// C workers take the requests in order; with a rate, request i is not sent before its Poisson arrival time.
// Latencies start when a request is sent: with every worker busy, time queued in the client is not counted.
LevelRun run_level(const ServeTarget& target, const std::vector<std::string>& bodies, int concurrency, double rate,
                   uint64_t seed) {
  const size_t n = bodies.size();
  std::vector<double> arrival(n, 0.0);
  if (rate > 0) {
    std::mt19937_64 rng(seed);
    std::exponential_distribution<double> gap(rate);
    double t = 0;
    for (auto& a : arrival) a = t, t += gap(rng);
  }
  LevelRun run;
  run.results.resize(n);
  std::atomic<size_t> next{0};
  const double t0 = now_s();
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      const double wait = t0 + arrival[i] - now_s();
      if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
      run.results[i] = run_request(target, bodies[i]);
    }
  };
  std::vector<std::thread> threads;
  for (int c = 0; c < std::min<int>(concurrency, int(n)); ++c) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  run.wall_s = now_s() - t0;
  return run;
}

// Prints "<label> median .. P90 .. P99 .. ms" and records j["<key>_p50_s"|"_p90_s"|"_p99_s"] in seconds.
void latency(json& j, const char* label, const std::string& key, const std::vector<double>& v) {
  const double p50 = percentile(v, 50), p90 = percentile(v, 90), p99 = percentile(v, 99);
  std::printf("  %-22s median %9.2f  P90 %9.2f  P99 %9.2f ms\n", label, 1e3 * p50, 1e3 * p90, 1e3 * p99);
  j[key + "_p50_s"] = p50;
  j[key + "_p90_s"] = p90;
  j[key + "_p99_s"] = p99;
}

// One level's requests tallied: latencies, token counts, errors, requests within the SLO.
struct LevelTally {
  std::vector<double> ttft, tpot, itl, e2e;
  int64_t gen = 0, chunks = 0, prompt = 0, ok = 0, good = 0, usage_missing = 0, short_outputs = 0;
  std::map<std::string, int> errors;
  std::map<std::string, std::string> first_detail;
};

LevelTally tally(const Options& o, const Level& level, const LevelRun& run) {
  LevelTally t;
  for (size_t i = 0; i < run.results.size(); ++i) {
    const RequestResult& r = run.results[i];
    if (!r.ok) {
      ++t.errors[r.error];
      t.first_detail.emplace(r.error, r.detail);
      continue;
    }
    ++t.ok;
    const int64_t n_chunks = int64_t(r.chunk_times.size());
    const int64_t tokens = r.completion_tokens >= 0 ? r.completion_tokens : n_chunks;
    if (r.completion_tokens < 0) ++t.usage_missing;
    if (tokens < level.max_tokens[i]) ++t.short_outputs;
    t.gen += tokens;
    t.chunks += n_chunks;
    t.prompt += std::max<int64_t>(r.prompt_tokens, 0);
    t.e2e.push_back(r.end - r.start);
    double t_first = -1, t_per = -1;
    if (n_chunks > 0) t.ttft.push_back(t_first = r.chunk_times[0] - r.start);
    if (n_chunks > 0 && tokens > 1) t.tpot.push_back(t_per = (r.end - r.chunk_times[0]) / double(tokens - 1));
    for (size_t k = 1; k < r.chunk_times.size(); ++k) t.itl.push_back(r.chunk_times[k] - r.chunk_times[k - 1]);
    const bool ttft_ok = o.slo_ttft <= 0 || (t_first >= 0 && t_first <= o.slo_ttft);
    const bool tpot_ok = o.slo_tpot <= 0 || (t_per >= 0 ? t_per <= o.slo_tpot : n_chunks > 0);
    t.good += ttft_ok && tpot_ok;
  }
  return t;
}

// The latencies, goodput and errors of one level, printed and recorded in j.
void report_latencies(const Options& o, const LevelTally& t, double wall, json& j) {
  latency(j, "TTFT", "ttft", t.ttft);
  latency(j, "TPOT", "tpot", t.tpot);
  latency(j, "inter-token latency", "itl", t.itl);
  j["e2e_p50_s"] = percentile(t.e2e, 50);
  j["e2e_p99_s"] = percentile(t.e2e, 99);
  std::printf("  %-22s median %9.2f            P99 %9.2f ms\n", "end-to-end", 1e3 * percentile(t.e2e, 50),
              1e3 * percentile(t.e2e, 99));
  if (o.slo_ttft > 0 || o.slo_tpot > 0) {
    j["good_requests"] = t.good;
    j["goodput_req_s"] = double(t.good) / wall;
    std::printf("  goodput                %lld requests within the SLO = %.2f req/s\n", (long long)t.good,
                double(t.good) / wall);
  } else {
    j["good_requests"] = nullptr;
    j["goodput_req_s"] = nullptr;
  }
  for (const auto& [kind, count] : t.errors)
    std::printf("  errors                 %s x%d (first: %s)\n", kind.c_str(), count,
                t.first_detail.at(kind).substr(0, 160).c_str());
}

json summarize(const Options& o, const Level& level, const LevelRun& run, int concurrency) {
  const LevelTally t = tally(o, level, run);
  const double wall = std::max(run.wall_s, 1e-9);
  const int failed = int(run.results.size()) - int(t.ok);
  json j = {{"concurrency", concurrency},
            {"request_rate", o.rate > 0 ? json(o.rate) : json(nullptr)},
            {"requests", run.results.size()},
            {"completed", t.ok},
            {"failed", failed},
            {"errors", t.errors},
            {"wall_s", run.wall_s},
            {"request_throughput", double(t.ok) / wall},
            {"prompt_tokens", t.prompt},
            {"output_tokens", t.gen},
            {"output_chunks", t.chunks},
            {"usage_missing", t.usage_missing},
            {"short_outputs", t.short_outputs},
            {"output_tok_s", double(t.gen) / wall},
            {"output_chunk_s", double(t.chunks) / wall},
            {"total_tok_s", double(t.gen + t.prompt) / wall}};
  char rate[64] = "";
  if (o.rate > 0) std::snprintf(rate, sizeof rate, " (Poisson arrivals at %g req/s)", o.rate);
  std::printf("concurrency %d%s: %lld/%zu requests ok in %.2f s = %.2f req/s\n", concurrency, rate, (long long)t.ok,
              run.results.size(), run.wall_s, double(t.ok) / wall);
  std::string source = "usage";
  if (t.usage_missing) source = "usage; " + std::to_string(t.usage_missing) + " requests without one counted by chunks";
  std::printf(
      "  tokens                 %lld generated (%s), %lld chunks, %lld prompt: %.1f gen tok/s, %.1f chunk/s, "
      "%.1f total tok/s\n",
      (long long)t.gen, source.c_str(), (long long)t.chunks, (long long)t.prompt, double(t.gen) / wall,
      double(t.chunks) / wall, double(t.gen + t.prompt) / wall);
  if (t.short_outputs)
    std::printf("  short outputs          %lld requests ended before max_tokens%s\n", (long long)t.short_outputs,
                o.ignore_eos ? " although ignore_eos was sent (ignored, or the server cut them)" : "");
  report_latencies(o, t, wall, j);
  return j;
}

// The first model id of GET /v1/models, or "" (the field is then left out of the requests).
std::string discover_model(const ServeTarget& t, const std::string& base) {
  try {
    HttpResponse res(t.url, "GET", base + "/v1/models", "", t.headers, now_s() + std::min(10.0, t.timeout_s));
    const auto j = json::parse(res.read_body(now_s() + std::min(10.0, t.timeout_s)), nullptr, false);
    if (res.status() == 200 && j.is_object() && j.contains("data") && j["data"].is_array() && !j["data"].empty() &&
        j["data"][0].is_object() && j["data"][0].contains("id") && j["data"][0]["id"].is_string())
      return j["data"][0]["id"];
  } catch (const HttpFailure&) {
  }
  std::fprintf(stderr, "bench serve: GET /v1/models gave no model id; requests carry no \"model\" (use --model)\n");
  return "";
}

std::vector<OptionSpec> bench_serve_options() {
  return {
      {"--url", "the server's root URL (http only)", true, "http://127.0.0.1:8080"},
      {"--model", "model name sent in requests (default: the first id of GET /v1/models)", true},
      {"--endpoint", "completions (/v1/completions) or chat (/v1/chat/completions)", true, "completions"},
      {"--concurrency", "comma-separated requests in flight (with --request-rate: the cap)", true, "1,4,16,64"},
      {"--requests", "requests per concurrency", true, "32"},
      {"--prompts", "prompt file: `%`-separated entries, else one prompt per line (default: random prompts)", true},
      {"--input-len", "random prompts: tokens each (token ids for completions, one-token words for chat)", true, "128"},
      {"--vocab", "random token ids are drawn from [32, VOCAB)", true, "512"},
      {"--output-len", "max_tokens of every request (--output-dist fixed)", true, "128"},
      {"--output-dist", "fixed, or longtail (seeded lognormal, median 64, capped at --max-tokens)", true, "fixed"},
      {"--max-tokens", "cap of the longtail distribution", true, "512"},
      {"--ignore-eos", "send ignore_eos: true so outputs run to max_tokens (on|off)", true, "on"},
      {"--temperature", "temperature sent with every request (default: none sent, the server's default)"},
      {"--extra-body", "a file holding a JSON object merged into every request body (e.g. a response_format)", true},
      {"--request-rate", "open loop: Poisson arrivals at R requests/s (default: closed loop)", true},
      {"--slo-ttft", "goodput SLO: time to first token, seconds", true},
      {"--slo-tpot", "goodput SLO: time per output token after the first, seconds", true},
      {"--api-key-env", "environment variable holding the API key (sent as Authorization: Bearer)", true},
      {"--timeout", "seconds a request may take, connect to last byte; every read is bounded by it", true, "300"},
      {"--seed", "workload and arrival seed", true, "1"},
      {"--json", "print one JSON object (a result per concurrency) on the last line", false}};
}

Options parse_options(const Args& args) {
  Options o;
  o.endpoint = args.str("--endpoint");
  check(o.endpoint == "completions" || o.endpoint == "chat", "--endpoint must be completions or chat");
  o.concurrency = parse_list(args.str("--concurrency"));
  o.spec.requests = int(args.integer("--requests"));
  o.spec.input_len = int(args.integer("--input-len"));
  o.spec.output_len = int(args.integer("--output-len"));
  o.spec.output_dist = args.str("--output-dist");
  o.spec.max_tokens = int(args.integer("--max-tokens"));
  o.spec.seed = uint64_t(args.integer("--seed"));
  o.vocab = int(args.integer("--vocab"));
  check(o.vocab >= 2, "--vocab must be >= 2");
  const std::string eos = args.str("--ignore-eos");
  check(eos == "on" || eos == "off", "--ignore-eos must be on or off");
  o.ignore_eos = eos == "on";
  if (args.has("--temperature")) {
    o.temperature = args.number("--temperature");
    check(o.temperature >= 0 && o.temperature <= 2, "--temperature must be in [0, 2]");
  }
  if (args.has("--extra-body")) {
    std::ifstream f(args.str("--extra-body"));
    check(f.good(), "--extra-body: cannot read " + args.str("--extra-body"));
    try {
      o.extra_body = json::parse(f);
    } catch (const json::exception& e) {
      fail("--extra-body: " + args.str("--extra-body") + ": " + e.what());
    }
    check(o.extra_body.is_object(), "--extra-body must hold a JSON object");
  }
  if (args.has("--request-rate")) o.rate = args.number("--request-rate");
  if (args.has("--slo-ttft")) o.slo_ttft = args.number("--slo-ttft");
  if (args.has("--slo-tpot")) o.slo_tpot = args.number("--slo-tpot");
  check(o.rate >= 0 && o.slo_ttft >= 0 && o.slo_tpot >= 0, "--request-rate and the SLOs must be >= 0");
  return o;
}

// The server, its headers (API key) and the endpoint's path; *base: the URL's path without a trailing /v1.
ServeTarget make_target(const Args& args, const std::string& endpoint, std::string* base_out) {
  ServeTarget target;
  target.url = parse_http_url(args.str("--url"));
  target.timeout_s = args.number("--timeout");
  check(target.timeout_s > 0, "--timeout must be > 0");
  target.headers["Content-Type"] = "application/json";
  if (args.has("--api-key-env")) {
    const char* key = std::getenv(args.str("--api-key-env").c_str());
    check(key && *key, "the environment variable " + args.str("--api-key-env") + " is unset or empty");
    target.headers["Authorization"] = std::string("Bearer ") + key;
  }
  std::string base = target.url.path;
  if (base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0) base.resize(base.size() - 3);
  target.path = base + (endpoint == "chat" ? "/v1/chat/completions" : "/v1/completions");
  *base_out = base;
  return target;
}

}  // namespace

int cmd_bench_serve(int argc, char** argv) {
  Args args(argc, argv, bench_serve_options(),
            "tinfer bench serve --url http://127.0.0.1:8080 [--model NAME] [--endpoint completions|chat] "
            "[--concurrency 1,4,16,64] [--requests N] [--prompts FILE | --input-len L] [--output-len L | "
            "--output-dist fixed|longtail] [--request-rate R] [--slo-ttft S --slo-tpot S] [--api-key-env VAR] "
            "[--json] [--seed S]");
  Options o = parse_options(args);
  std::string base;
  const ServeTarget target = make_target(args, o.endpoint, &base);
  o.model = args.has("--model") ? args.str("--model") : discover_model(target, base);
  std::vector<std::string> texts;
  if (args.has("--prompts")) texts = prompt_texts(args.str("--prompts"));

  json report = {{"url", args.str("--url")},
                 {"endpoint", target.path},
                 {"model", o.model},
                 {"prompts", texts.empty() ? json(nullptr) : json(args.str("--prompts"))},
                 {"input_len", texts.empty() ? json(o.spec.input_len) : json(nullptr)},
                 {"output_dist", o.spec.output_dist},
                 {"output_len", o.spec.output_len},
                 {"ignore_eos", o.ignore_eos},
                 {"temperature", o.temperature >= 0 ? json(o.temperature) : json(nullptr)},
                 {"seed", o.spec.seed},
                 {"slo_ttft_s", o.slo_ttft > 0 ? json(o.slo_ttft) : json(nullptr)},
                 {"slo_tpot_s", o.slo_tpot > 0 ? json(o.slo_tpot) : json(nullptr)},
                 {"results", json::array()}};
  std::printf(
      "bench serve: %s%s, model '%s', %d requests per level, %s prompts, output %s\n", args.str("--url").c_str(),
      target.path.c_str(), o.model.c_str(), o.spec.requests,
      texts.empty() ? (std::to_string(o.spec.input_len) + "-token random").c_str() : args.str("--prompts").c_str(),
      o.spec.output_dist == "fixed" ? (std::to_string(o.spec.output_len) + " tokens").c_str() : "longtail");
  int failed = 0;
  for (size_t level = 0; level < o.concurrency.size(); ++level) {
    const Level l = make_level(o, texts, int(level));
    const LevelRun run = run_level(target, l.bodies, o.concurrency[level], o.rate, o.spec.seed + level);
    json j = summarize(o, l, run, o.concurrency[level]);
    failed += j["failed"].get<int>();
    report["results"].push_back(std::move(j));
    std::fflush(stdout);
  }
  if (args.flag("--json")) std::printf("%s\n", report.dump().c_str());
  if (failed) std::fprintf(stderr, "tinfer bench serve: %d requests failed (see errors above)\n", failed);
  return failed ? 1 : 0;
}

}  // namespace tinfer::cli
