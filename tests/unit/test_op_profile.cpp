// OpProfile: categories accumulate time, calls, bytes and ops; counters() drops the trace; the trace export
// is valid trace-event JSON (complete "X" events named by category, in microseconds, in time order).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "tinfer/op_profile.h"

namespace tinfer {
namespace {

TEST(OpProfile, AccumulatesAndMerges) {
  OpProfile p;
  {
    OpTimer t(&p, Op::kAttention, 100, 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  { OpTimer t(&p, Op::kAttention, 50, 10); }
  { OpTimer none(nullptr, Op::kNorm); }  // a null profile records nothing
  EXPECT_EQ(p[Op::kAttention].calls, 2);
  EXPECT_GE(p[Op::kAttention].seconds, 0.002);
  EXPECT_EQ(p[Op::kAttention].bytes, 150);
  EXPECT_EQ(p[Op::kAttention].ops, 210);
  EXPECT_EQ(p[Op::kNorm].calls, 0);
  EXPECT_DOUBLE_EQ(p.total_seconds(), p[Op::kAttention].seconds);
  OpProfile q;
  q.merge(p);
  q.merge(p);
  EXPECT_EQ(q[Op::kAttention].calls, 4);
  EXPECT_STREQ(op_name(Op::kMatmulGateUp), "matmul_gate_up");
  EXPECT_STREQ(op_name(Op::kSchedule), "schedule");
}

TEST(OpProfile, TraceIsValidTraceEventJson) {
  OpProfile p;
  p.enable_trace(3);
  for (Op op : {Op::kEmbed, Op::kNorm, Op::kLmHead, Op::kSample}) OpTimer t(&p, op);  // the 4th is over the cap
  ASSERT_EQ(p.trace().size(), 3u);
  EXPECT_TRUE(p.counters().trace().empty());
  EXPECT_EQ(p.counters()[Op::kSample].calls, 1);
  const auto j = nlohmann::json::parse(trace_event_json(p));
  const auto& ev = j.at("traceEvents");
  ASSERT_EQ(ev.size(), 3u);
  const char* names[] = {"embed", "norm", "lm_head"};
  double last = -1;
  for (size_t i = 0; i < ev.size(); ++i) {
    EXPECT_EQ(ev[i].at("name"), names[i]);
    EXPECT_EQ(ev[i].at("ph"), "X");
    EXPECT_GE(ev[i].at("ts").get<double>(), last);
    EXPECT_GE(ev[i].at("dur").get<double>(), 0);
    last = ev[i].at("ts").get<double>();
  }
}

}  // namespace
}  // namespace tinfer
