// GrammarCompiler: the vocabulary as xgrammar sees it, the compile of each GrammarKind, and the byte-bounded LRU
// cache of compiled grammars (xgrammar's own cache is off, so the bound is ours and hits are counted).
#include "grammar/grammar_compiler.h"

#include <xgrammar/xgrammar.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "grammar/schema_check.h"
#include "grammar/xgrammar_constraint.h"
#include "text/tokenizer/tokenizer.h"

namespace tinfer::grammar {

const char* grammar_kind_name(GrammarKind k) {
  switch (k) {
    case GrammarKind::kJsonObject: return "json_object";
    case GrammarKind::kJsonSchema: return "json_schema";
    case GrammarKind::kRegex: return "regex";
    case GrammarKind::kChoice: return "choice";
    case GrammarKind::kEbnf: return "ebnf";
    case GrammarKind::kStructuralTag: return "structural_tag";
  }
  return "?";
}

std::string as_structural_format(const GrammarSpec& spec) {
  using nlohmann::ordered_json;
  switch (spec.kind) {
    case GrammarKind::kJsonObject:
      return R"({"type": "json_schema", "json_schema": {"type": "object"}})";
    case GrammarKind::kJsonSchema:
      return ordered_json{{"type", "json_schema"}, {"json_schema", ordered_json::parse(spec.source)}}.dump();
    case GrammarKind::kRegex:
      return ordered_json{{"type", "regex"}, {"pattern", spec.source}}.dump();
    case GrammarKind::kEbnf:
      return ordered_json{{"type", "grammar"}, {"grammar", spec.source}}.dump();
    case GrammarKind::kChoice: {
      ordered_json elems = ordered_json::array();
      for (const auto& c : ordered_json::parse(spec.source)) elems.push_back({{"type", "const_string"}, {"value", c}});
      return ordered_json{{"type", "or"}, {"elements", elems}}.dump();
    }
    case GrammarKind::kStructuralTag:
      return ordered_json::parse(spec.source).at("format").dump();
  }
  return "{}";
}

namespace {

using Compiled = std::shared_ptr<const XgGrammar>;

// Each token as the bytes it stands for ("RAW" to xgrammar): control tokens are "", which xgrammar treats as
// special (never part of a grammar's text); ids past the tokenizer's vocabulary pad the model's logits width.
xgrammar::TokenizerInfo vocabulary(const Tokenizer& tok, int32_t n_vocab, const std::vector<int32_t>& stop_ids) {
  std::vector<std::string> vocab(size_t(std::min(n_vocab, tok.n_vocab())));
  for (size_t i = 0; i < vocab.size(); ++i) vocab[i] = tok.token_bytes(int32_t(i));
  for (int32_t s : stop_ids)
    if (s >= 0 && size_t(s) < vocab.size()) vocab[size_t(s)].clear();
  return xgrammar::TokenizerInfo(vocab, xgrammar::VocabType::RAW, n_vocab, stop_ids);
}

// guided_choice as EBNF: root ::= "a" | "b" ... with every byte outside printable ASCII (and " \) escaped.
std::string choice_ebnf(const std::string& choices_json) {
  nlohmann::json c;
  try {
    c = nlohmann::json::parse(choices_json);
  } catch (const nlohmann::json::exception& e) {
    throw GrammarError(std::string("choice: not valid JSON: ") + e.what());
  }
  if (!c.is_array() || c.empty()) throw GrammarError("choice: must be a non-empty array of strings");
  std::string out = "root ::= ";
  for (size_t i = 0; i < c.size(); ++i) {
    if (!c[i].is_string() || c[i].get<std::string>().empty())
      throw GrammarError("choice: entry " + std::to_string(i) + " must be a non-empty string");
    out += i ? " | \"" : "\"";
    for (unsigned char ch : c[i].get<std::string>()) {
      if (ch == '"' || ch == '\\') {
        out += '\\';
        out += char(ch);
      } else if (ch < 0x20 || ch == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", ch);
        out += buf;
      } else {
        out += char(ch);
      }
    }
    out += '"';
  }
  return out;
}

xgrammar::CompiledGrammar compile_spec(xgrammar::GrammarCompiler& xg, const GrammarSpec& spec) {
  // Compact JSON (", " and ": ", no free whitespace): a small model given free whitespace may emit it forever.
  const auto seps = std::make_pair(std::string(", "), std::string(": "));
  switch (spec.kind) {
    case GrammarKind::kJsonObject:
      return xg.CompileJSONSchema(R"({"type": "object"})", false, std::nullopt, seps, false);
    case GrammarKind::kJsonSchema:
      check_schema_supported(spec.source);
      return xg.CompileJSONSchema(spec.source, false, std::nullopt, seps, true);
    case GrammarKind::kRegex:
      return xg.CompileRegex(spec.source);
    case GrammarKind::kChoice:
      return xg.CompileGrammar(choice_ebnf(spec.source), "root");
    case GrammarKind::kEbnf:
      return xg.CompileGrammar(spec.source, "root");
    case GrammarKind::kStructuralTag:
      check_structural_tag(spec.source);
      return xg.CompileStructuralTag(spec.source);
  }
  throw GrammarError("unknown grammar kind");
}

// xgrammar's messages start "[hh:mm:ss] path/file.cc:line: "; the client needs only what follows.
std::string client_message(const char* what) {
  std::string m(what);
  if (!m.empty() && m[0] == '[') {
    const size_t close = m.find("] ");
    const size_t file = close == std::string::npos ? close : m.find(".cc:", close);
    const size_t src = file == std::string::npos ? file : m.find(": ", file);
    if (src != std::string::npos) m = m.substr(src + 2);
  }
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m;
}

}  // namespace

struct GrammarCompiler::Impl {
  struct Entry {
    std::shared_future<Compiled> ready;
    int64_t bytes = 0;  // 0 while compiling (never evicted then)
    std::list<std::string>::iterator lru;
  };

  Impl(const Tokenizer& tok, int32_t nv, std::vector<int32_t> stops, GrammarCompilerConfig c)
      : stop_ids(std::make_shared<const std::vector<int32_t>>(std::move(stops))),
        xg(vocabulary(tok, nv, *stop_ids), c.threads, /*cache_enabled=*/false),
        tokenizer(&tok),
        n_vocab(nv),
        cfg(c) {}

  void evict_locked() {
    while (stats.cache_bytes > cfg.cache_bytes && !order.empty()) {
      auto victim = std::prev(order.end());
      while (cache.at(*victim).bytes == 0 && victim != order.begin()) --victim;
      Entry& e = cache.at(*victim);
      if (e.bytes == 0) return;  // only in-flight compiles are left
      stats.cache_bytes -= e.bytes;
      --stats.cached;
      cache.erase(*victim);
      order.erase(victim);
    }
  }

  std::shared_ptr<const std::vector<int32_t>> stop_ids;
  xgrammar::GrammarCompiler xg;
  const Tokenizer* tokenizer;
  int32_t n_vocab;
  GrammarCompilerConfig cfg;
  mutable std::mutex mu;
  std::unordered_map<std::string, Entry> cache;
  std::list<std::string> order;  // most recently used first
  GrammarStats stats;
};

GrammarCompiler::GrammarCompiler(const Tokenizer& tok, int32_t n_vocab, std::vector<int32_t> stop_ids,
                                 GrammarCompilerConfig cfg)
    : impl_(std::make_unique<Impl>(tok, n_vocab, std::move(stop_ids), cfg)) {}

GrammarCompiler::~GrammarCompiler() = default;

int32_t GrammarCompiler::n_vocab() const { return impl_->n_vocab; }

GrammarStats GrammarCompiler::stats() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return impl_->stats;
}

std::shared_ptr<const TokenGrammar> GrammarCompiler::compile(const GrammarSpec& spec) {
  Impl& m = *impl_;
  const std::string key = spec.cache_key();
  std::promise<Compiled> promise;
  {
    std::unique_lock<std::mutex> lk(m.mu);
    auto it = m.cache.find(key);
    if (it != m.cache.end()) {
      ++m.stats.cache_hits;
      m.order.splice(m.order.begin(), m.order, it->second.lru);
      std::shared_future<Compiled> f = it->second.ready;
      lk.unlock();
      return f.get();  // a compile in flight elsewhere: wait for it (its failure rethrows here)
    }
    m.order.push_front(key);
    m.cache.emplace(key, Impl::Entry{promise.get_future().share(), 0, m.order.begin()});
  }
  const auto t0 = std::chrono::steady_clock::now();
  try {
    auto g = std::make_shared<const XgGrammar>(compile_spec(m.xg, spec), m.stop_ids, m.tokenizer);
    if (!g->admits_output(m.n_vocab))
      throw GrammarError(std::string(grammar_kind_name(spec.kind)) + ": the grammar admits no output");
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    {
      std::lock_guard<std::mutex> lk(m.mu);
      ++m.stats.compiles;
      m.stats.compile_seconds += secs;
      Impl::Entry& e = m.cache.at(key);
      e.bytes = std::max<int64_t>(1, g->bytes());
      m.stats.cache_bytes += e.bytes;
      ++m.stats.cached;
      m.evict_locked();
    }
    promise.set_value(g);
    return g;
  } catch (const std::exception& e) {
    const GrammarError err = dynamic_cast<const GrammarError*>(&e)
                                 ? *static_cast<const GrammarError*>(&e)
                                 : GrammarError(std::string(grammar_kind_name(spec.kind)) + ": " + client_message(e.what()));
    {
      std::lock_guard<std::mutex> lk(m.mu);
      ++m.stats.failures;
      auto it = m.cache.find(key);
      m.order.erase(it->second.lru);
      m.cache.erase(it);
    }
    promise.set_exception(std::make_exception_ptr(err));
    throw err;
  }
}

}  // namespace tinfer::grammar
