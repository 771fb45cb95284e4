// The preprocessing pool (threads of its own, a bounded wait, errors carried back) and the prompt floor's refusals.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/preprocess_pool.h"
#include "server/prompt_floor.h"

namespace tinfer::server {
namespace {

using namespace std::chrono_literals;

TEST(PreprocessPool, RunsOnItsThreadsAndCarriesErrorsBack) {
  std::atomic<int64_t> active{0}, waiting{0};
  std::atomic<size_t> done_bytes{0};
  PreprocessPool pool(2, 1000ms, {&active, &waiting}, [&](size_t b) { done_bytes += b; });
  EXPECT_EQ(pool.threads(), 2);
  std::thread::id ran_on;
  EXPECT_TRUE(pool.run(5, [&] { ran_on = std::this_thread::get_id(); }));
  EXPECT_NE(ran_on, std::this_thread::get_id());
  EXPECT_THROW(pool.run(7, [] { throw ApiError(400, "bad", "", "invalid_value"); }), ApiError);
  for (int i = 0; i < 50 && done_bytes.load() < 12; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(done_bytes.load(), 12u);
  EXPECT_EQ(active.load(), 0);
  EXPECT_EQ(waiting.load(), 0);
}

TEST(PreprocessPool, RefusesWhenNoThreadFreesInTime) {
  std::atomic<int64_t> active{0}, waiting{0};
  PreprocessPool pool(1, 0ms, {&active, &waiting});
  EXPECT_TRUE(pool.run(0, [] {}));  // an idle thread takes it even with no wait
  std::atomic<bool> release{false}, started{false};
  std::thread busy([&] {
    pool.run(0, [&] {
      started = true;
      while (!release) std::this_thread::sleep_for(1ms);
    });
  });
  while (!started) std::this_thread::sleep_for(1ms);
  bool ran = false;
  EXPECT_FALSE(pool.run(0, [&] { ran = true; }));
  EXPECT_FALSE(ran);
  EXPECT_EQ(waiting.load(), 0);
  release = true;
  busy.join();
  PreprocessPool patient(1, 2000ms);
  std::thread slow([&] { patient.run(0, [] { std::this_thread::sleep_for(50ms); }); });
  std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(patient.run(0, [] {}));  // waits for the slow one
  slow.join();
}

TEST(PromptFloor, RefusesOnlyWhatCannotFit) {
  PromptFloor f;
  f.message_tokens = {3, 3, 0, 0};  // user, assistant, system, tool
  CompletionRequest req;
  req.chat = true;
  ChatMessage u;
  u.role = "user";
  req.messages.assign(68, u);  // 67 counted (the first never is): 201 tokens
  const nlohmann::json body = nlohmann::json::object();
  try {
    refuse_unfit_prompts(f, 200, req, body);
    ADD_FAILURE() << "68 messages of >= 3 tokens fit 200";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.code, "context_length_exceeded");
    EXPECT_EQ(e.param, "messages");
    EXPECT_NE(std::string(e.what()).find("at least 201 tokens"), std::string::npos) << e.what();
  }
  req.messages.resize(67);  // 198 < 200
  EXPECT_NO_THROW(refuse_unfit_prompts(f, 200, req, body));
  ChatMessage s;  // roles without a measured cost, and messages unlike the probes, count nothing
  s.role = "system";
  req.messages.assign(1000, s);
  EXPECT_NO_THROW(refuse_unfit_prompts(f, 200, req, body));
  u.extra_json = R"({"name":"x"})";
  req.messages.assign(1000, u);
  EXPECT_NO_THROW(refuse_unfit_prompts(f, 200, req, body));
  EXPECT_NO_THROW(refuse_unfit_prompts(PromptFloor{}, 200, req, body));
  // Without a tokenizer a completions prompt has no byte bound.
  CompletionRequest comp;
  comp.prompts.push_back({std::string(1 << 20, 'a'), {}, false});
  EXPECT_NO_THROW(refuse_unfit_prompts(f, 200, comp, body));
}

}  // namespace
}  // namespace tinfer::server
