// resolve_request: the one place that decides a request's output limit, stop ids and priority, and
// refuses what the engine cannot serve with the field at fault.
#include <gtest/gtest.h>

#include "tinfer/request_resolver.h"

namespace tinfer {
namespace {

RequestLimits limits() {
  return RequestLimits{.n_vocab = 100,
                       .max_len = 64,
                       .max_seqs = 4,
                       .default_max_tokens = 3,
                       .max_tokens_cap = 8,
                       .background_min_tokens = 6,
                       .eos_ids = {2, 5}};
}

GenerationRequest ask(int prompt_len, int max_tokens = 0) {
  GenerationRequest g;
  g.prompt.assign(static_cast<size_t>(prompt_len), 7);
  g.max_tokens = max_tokens;
  return g;
}

// The RequestError's field and code for a request, or "" if it resolves.
std::string refusal(const GenerationRequest& g) {
  try {
    resolve_request(g, limits());
  } catch (const RequestError& e) {
    return e.field() + "/" + e.code();
  }
  return "";
}

TEST(RequestResolver, DefaultCapAndContextRoom) {
  ResolvedRequest d = resolve_request(ask(4), limits());
  EXPECT_EQ(d.max_tokens, 3);  // the default
  EXPECT_FALSE(d.clamped);
  EXPECT_TRUE(d.warnings.empty());

  ResolvedRequest c = resolve_request(ask(4, 100), limits());
  EXPECT_EQ(c.max_tokens, 8);  // the cap
  EXPECT_TRUE(c.clamped);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("cap"), std::string::npos) << c.warnings[0];

  ResolvedRequest r = resolve_request(ask(60, 8), limits());
  EXPECT_EQ(r.max_tokens, 4);  // what fits after a 60-token prompt in 64
  EXPECT_FALSE(r.clamped);     // (the cap was not exceeded)
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("context"), std::string::npos) << r.warnings[0];
}

TEST(RequestResolver, RefusalsNameTheField) {
  EXPECT_EQ(refusal(ask(64)), "prompt/context_length_exceeded");
  EXPECT_EQ(refusal(ask(63)), "");
  EXPECT_EQ(refusal(ask(0)), "prompt/invalid_value");
  GenerationRequest bad_id = ask(3);
  bad_id.prompt[1] = 100;
  EXPECT_EQ(refusal(bad_id), "prompt/invalid_value");
  GenerationRequest n = ask(3);
  n.n = 5;  // > max_seqs
  EXPECT_EQ(refusal(n), "n/invalid_value");
  n.n = 0;
  EXPECT_EQ(refusal(n), "n/invalid_value");
  n.n = 4;
  EXPECT_EQ(refusal(n), "");
  GenerationRequest stop = ask(3);
  stop.stop_token_ids = {-1};
  EXPECT_EQ(refusal(stop), "stop_token_ids/invalid_value");
  GenerationRequest bias = ask(3);
  bias.sampling.logit_bias = {{3, 1.f}, {100, -5.f}};
  EXPECT_EQ(refusal(bias), "logit_bias/invalid_value");
  GenerationRequest temp = ask(3);
  temp.sampling.temperature = -1;
  EXPECT_EQ(refusal(temp), "/invalid_value");
}

TEST(RequestResolver, StopIdsHoldEosUnlessIgnored) {
  GenerationRequest g = ask(3);
  g.stop_token_ids = {9, 5};
  EXPECT_EQ(resolve_request(g, limits()).stop_ids, (std::vector<Token>{2, 5, 9}));
  g.ignore_eos = true;
  EXPECT_EQ(resolve_request(g, limits()).stop_ids, (std::vector<Token>{9, 5}));
}

TEST(RequestResolver, PriorityByAskedOutputOrExplicit) {
  EXPECT_EQ(resolve_request(ask(3, 6), limits()).priority, Priority::kInteractive);
  EXPECT_EQ(resolve_request(ask(3, 7), limits()).priority, Priority::kBackground);
  EXPECT_EQ(resolve_request(ask(60, 8), limits()).priority, Priority::kInteractive);  // 4 fit: short after all
  GenerationRequest g = ask(3, 7);
  g.priority = Priority::kInteractive;
  EXPECT_EQ(resolve_request(g, limits()).priority, Priority::kInteractive);
  RequestLimits off = limits();
  off.background_min_tokens = 0;
  EXPECT_EQ(resolve_request(ask(3, 8), off).priority, Priority::kInteractive);
}

}  // namespace
}  // namespace tinfer
