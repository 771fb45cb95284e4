// Structured output through the engine (stories260K, compiled against its own 512-token vocabulary): every output
// follows its grammar and ends at the grammar's end; speculative decoding (prompt lookup, a draft model, self-draft),
// chunked prefill, preemption and parallel samples change no token; a grammar that completes ends the request
// even with ignore_eos; a draft the grammar forbids is never kept.
#include <tinfer/engine.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "engine_test_util.h"
#include "grammar/grammar_compiler.h"
#include "text/tokenizer/tokenizer.h"

namespace tinfer {
namespace {

using namespace engine_test;

const char* kSchema = R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
  "n": {"type": "integer", "minimum": 0, "maximum": 999}, "ok": {"type": "boolean"}}, "required": ["name", "n", "ok"]})";
const char* kRegex = R"(( [a-z]{1,8}){2,6}\.)";

std::shared_ptr<const TokenGrammar> compile(const Model& m, grammar::GrammarKind kind, const std::string& src) {
  const Tokenizer& tok = m.tokenizer();
  std::vector<int32_t> stops;
  for (int32_t t = 0; t < tok.n_vocab(); ++t)
    if (tok.is_eog(t)) stops.push_back(t);
  static std::map<std::string, std::unique_ptr<grammar::GrammarCompiler>> compilers;  // one per test binary
  auto& c = compilers["stories"];
  if (!c) c = std::make_unique<grammar::GrammarCompiler>(tok, m.config().n_vocab, stops);
  return c->compile({kind, src});
}

struct Outcome {
  std::vector<std::vector<Token>> tokens;
  std::vector<FinishReason> reasons;
  EngineStats stats;
};

Outcome run_with(const EngineConfig& c, const std::shared_ptr<const TokenGrammar>& g, int n = 1, float temperature = 0) {
  auto e = Engine::create(stories(), c);
  std::vector<GenerationRequest> reqs;
  for (const auto& p : prompts(5, 512)) {
    GenerationRequest r = greedy(p, 90);
    r.grammar = g;
    r.n = n;
    r.sampling.temperature = temperature;
    r.sampling.seed = 7;
    reqs.push_back(r);
  }
  Outcome out;
  for (const auto& [id, samples] : run(*e, reqs))
    for (const Sample& s : samples) {
      out.tokens.push_back(s.tokens);
      out.reasons.push_back(s.reason);
    }
  out.stats = e->stats();
  EXPECT_EQ(out.stats.kv_blocks_used, 0);
  return out;
}

// The bytes the grammar saw (decode() would drop SentencePiece's leading space).
std::string text_of(const std::vector<Token>& t) {
  static auto m = stories();
  std::string s;
  for (Token id : t) s += m->tokenizer().token_bytes(id);
  return s;
}

void expect_follows_schema(const Outcome& r) {
  for (size_t i = 0; i < r.tokens.size(); ++i) {
    ASSERT_EQ(r.reasons[i], FinishReason::kStop) << text_of(r.tokens[i]);
    const nlohmann::json j = nlohmann::json::parse(text_of(r.tokens[i]));  // throws if not JSON
    EXPECT_TRUE(j.at("name").is_string() && j.at("name").get<std::string>().size() <= 12) << j.dump();
    EXPECT_TRUE(j.at("n").is_number_integer() && j.at("n").get<int>() >= 0 && j.at("n").get<int>() <= 999);
    EXPECT_TRUE(j.at("ok").is_boolean());
    EXPECT_EQ(j.size(), 3u);
  }
}

EngineConfig spec(SpecMode mode) {
  EngineConfig c = base_config();
  c.spec.mode = mode;
  c.spec.num_tokens = 4;
  c.spec.adaptive = false;
  c.spec.disable_batch = 0;
  if (mode == SpecMode::kDraft) c.spec.draft_model = test::shared_file("models/stories260K.gguf");
  if (mode == SpecMode::kSelf) c.spec.self_layers = 3;
  return c;
}

TEST(EngineGrammar, OutputsFollowTheSchemaAndEndThere) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const auto g = compile(*m, grammar::GrammarKind::kJsonSchema, kSchema);
  const Outcome plain = run_with(base_config(), g);
  expect_follows_schema(plain);  // greedy requests ask ignore_eos: the grammar's end still ends them
  const Outcome sampled = run_with(base_config(), g, 3, 1.0f);
  EXPECT_EQ(sampled.tokens.size(), 15u);
  expect_follows_schema(sampled);
  const auto rg = compile(*m, grammar::GrammarKind::kRegex, kRegex);
  for (const auto& t : run_with(base_config(), rg).tokens)
    EXPECT_TRUE(std::regex_match(text_of(t), std::regex(kRegex))) << text_of(t);
}

TEST(EngineGrammar, SpeculationChangesNoToken) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const auto g = compile(*m, grammar::GrammarKind::kJsonSchema, kSchema);
  const Outcome want = run_with(base_config(), g);
  const Outcome want_sampled = run_with(base_config(), g, 1, 0.8f);
  for (SpecMode mode : {SpecMode::kNgram, SpecMode::kDraft, SpecMode::kSelf}) {
    const Outcome r = run_with(spec(mode), g);
    EXPECT_EQ(r.tokens, want.tokens) << spec_mode_name(mode);
    EXPECT_GT(r.stats.spec_drafted, 0) << spec_mode_name(mode);
    EXPECT_EQ(run_with(spec(mode), g, 1, 0.8f).tokens, want_sampled.tokens) << spec_mode_name(mode);
  }
}

TEST(EngineGrammar, ChunkingAndPreemptionChangeNoToken) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const auto g = compile(*m, grammar::GrammarKind::kJsonSchema, kSchema);
  const Outcome want = run_with(base_config(), g);
  EngineConfig chunked = base_config();
  chunked.scheduler.max_batched_tokens = 7;
  EXPECT_EQ(run_with(chunked, g).tokens, want.tokens);
  EngineConfig tiny = base_config();
  tiny.scheduler.max_model_len = 160;
  tiny.kv.memory_bytes = m->config().kv_bytes_per_token(4) * 16 * 12;  // 12 blocks for 5 x ~120 tokens
  const Outcome pre = run_with(tiny, g);
  EXPECT_GT(pre.stats.preemptions, 0);
  EXPECT_EQ(pre.tokens, want.tokens);
}

// Jump-forward: the schema's fixed keys are forced; committed with the sampled token, they cost no step each. The
// outputs still follow the schema (their tokenization may differ from the model's own), seeded sampling and n > 1
// too, and speculation beside it changes no token (forced text is committed at the same positions).
TEST(EngineGrammar, JumpForwardCommitsForcedTokensInFewerSteps) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const auto g = compile(*m, grammar::GrammarKind::kJsonSchema, kSchema);
  const Outcome plain = run_with(base_config(), g);  // (off by default)
  EXPECT_EQ(plain.stats.grammar_jump_forward_tokens, 0);
  EngineConfig jf = base_config();
  jf.grammar_jump_forward = true;
  const Outcome on = run_with(jf, g);
  expect_follows_schema(on);
  EXPECT_GT(on.stats.grammar_jump_forward_tokens, 0);
  EXPECT_LT(on.stats.steps, plain.stats.steps);  // forced keys cost no step each
  expect_follows_schema(run_with(jf, g, 1, 0.8f));
  expect_follows_schema(run_with(jf, g, 3, 1.0f));
  for (SpecMode mode : {SpecMode::kNgram, SpecMode::kDraft, SpecMode::kSelf}) {
    EngineConfig c = spec(mode);
    EXPECT_EQ(run_with(c, g).tokens, plain.tokens) << spec_mode_name(mode);
    c.grammar_jump_forward = true;
    EXPECT_EQ(run_with(c, g).tokens, on.tokens) << spec_mode_name(mode);
  }
}

// Beam search keeps one grammar position per beam: every returned hypothesis follows the schema, and ends there.
TEST(EngineGrammar, BeamSearchHypothesesFollowTheSchema) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const auto g = compile(*m, grammar::GrammarKind::kJsonSchema, kSchema);
  auto e = Engine::create(stories(), base_config());
  GenerationRequest r = greedy(prompts(2, 512)[1], 90);
  r.grammar = g;
  r.use_beam_search = true;
  r.n = 3;
  const Outputs out = run(*e, {r});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out.begin()->second.size(), 3u);
  Outcome o;
  for (const Sample& s : out.begin()->second) {
    std::vector<Token> t = s.tokens;
    if (!t.empty() && m->tokenizer().is_eog(t.back())) t.pop_back();  // a hypothesis reports its EOS
    o.tokens.push_back(t);
    o.reasons.push_back(s.reason);
  }
  expect_follows_schema(o);
}

}  // namespace
}  // namespace tinfer
