// RoutePolicy and EscalationMonitor: where a request starts, the threshold's direction (NaN = not measured goes to
// the large model), the escalation window, and the checks of the routing settings.
#include <gtest/gtest.h>

#include <cmath>

#include "tinfer/error.h"
#include "server/api_error.h"
#include "server/route_policy.h"

namespace tinfer::server {
namespace {

RouteConfig entropy(double threshold, double escalate = 0, int window = 4) {
  RouteConfig c;
  c.mode = RouteMode::kEntropy;
  c.route_threshold = threshold;
  c.escalate_threshold = escalate;
  c.escalate_window = window;
  return c;
}

TEST(RoutePolicy, StartByNameAndAutomatic) {
  const RoutePolicy ex(RouteConfig{}, {"big", "tiny"});
  EXPECT_EQ(ex.start("").model, kLargeModel);
  EXPECT_FALSE(ex.start("").automatic);
  EXPECT_EQ(ex.start("tiny").model, kSmallModel);
  EXPECT_EQ(ex.start("big").model, kLargeModel);
  try {
    ex.start("auto");  // the automatic route exists only under the entropy policy
    FAIL() << "no 404";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 404);
    EXPECT_EQ(e.code, "model_not_found");
    EXPECT_EQ(e.param, "model");
  }
  const RoutePolicy en(entropy(1.5), {"big", "tiny"});
  for (const char* name : {"", "auto"}) {
    EXPECT_EQ(en.start(name).model, kSmallModel) << name;
    EXPECT_TRUE(en.start(name).automatic) << name;
  }
  EXPECT_FALSE(en.start("tiny").automatic);  // a named model is pinned
  EXPECT_EQ(en.start("big").model, kLargeModel);
  EXPECT_THROW(en.start("Big"), ApiError);  // names are exact
}

TEST(RoutePolicy, ThresholdDirectionAndUnmeasuredPrompts) {
  const RoutePolicy p(entropy(1.5), {"big", "tiny"});
  EXPECT_FALSE(p.prefers_large(1.0f));
  EXPECT_FALSE(p.prefers_large(1.5f));  // at the threshold: the small model
  EXPECT_TRUE(p.prefers_large(1.6f));
  EXPECT_TRUE(p.prefers_large(NAN));
  EXPECT_FALSE(p.escalates());
  EXPECT_TRUE(RoutePolicy(entropy(1.5, 2.0), {"a", "b"}).escalates());
}

TEST(RoutePolicy, RefusesBadSettings) {
  EXPECT_FALSE(entropy(-0.1).validate().empty());
  EXPECT_FALSE(entropy(NAN).validate().empty());
  EXPECT_FALSE(entropy(1, -1).validate().empty());
  EXPECT_FALSE(entropy(1, 1, 0).validate().empty());
  RouteConfig ex;
  ex.route_threshold = 1;
  EXPECT_FALSE(ex.validate().empty());  // a threshold without the entropy policy
  EXPECT_TRUE(entropy(0).validate().empty());
  EXPECT_THROW(RoutePolicy(entropy(1), {"same", "same"}), Error);
  EXPECT_THROW(RoutePolicy(entropy(1), {"auto", "b"}), Error);
  EXPECT_THROW(parse_route_mode("random"), Error);
  EXPECT_EQ(parse_route_mode("entropy"), RouteMode::kEntropy);
}

TEST(EscalationMonitor, FullWindowMeanAboveThreshold) {
  EscalationMonitor m(2.0, 3);
  EXPECT_FALSE(m.observe(9.0f));  // one uncertain token alone never escalates: the window is not full
  EXPECT_FALSE(m.observe(0.0f));
  EXPECT_TRUE(m.observe(0.0f));  // (9 + 0 + 0) / 3 = 3 > 2
  EXPECT_DOUBLE_EQ(m.window_mean(), 3.0);
  EXPECT_FALSE(m.observe(0.0f));  // 9 left the window: 0
  EXPECT_FALSE(m.observe(6.0f));  // (0 + 0 + 6) / 3 = 2: at the threshold is not above it
  EXPECT_TRUE(m.observe(0.5f));   // (0 + 6 + 0.5) / 3 > 2
  EscalationMonitor nan_token(2.0, 1);
  EXPECT_TRUE(nan_token.observe(NAN));  // an unmeasured token is not evidence of confidence
}

}  // namespace
}  // namespace tinfer::server
