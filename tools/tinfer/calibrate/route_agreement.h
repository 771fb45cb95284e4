// How close a routed answer is to the large model's own greedy answer, and the threshold choice of
// tinfer calibrate-route. Plain functions on token lists and numbers (unit-tested).
#pragma once
#include <vector>

namespace tinfer::cli {

// Greedy agreement: the share of the reference's tokens (the large model's greedy answer) that the answer has at the
// same position. 1 for identical answers; an answer that stops early misses the reference's remaining positions;
// two empty answers agree (1).
double greedy_agreement(const std::vector<int>& answer, const std::vector<int>& reference);

struct RoutePoint {
  double threshold = 0;    // prompts with entropy <= threshold go to the small model
  double share_small = 0;  // of the prompts
  double agreement = 0;    // mean over prompts: the small answer's agreement when routed small, else 1
};

// Every distinct split of the prompts by entropy, from "all large" to "all small", each threshold halfway between
// neighbouring entropies (below the lowest for none, just above the highest for all).
std::vector<RoutePoint> route_curve(const std::vector<double>& entropy, const std::vector<double>& small_agreement);
// The point with the most prompts on the small model whose agreement is >= target (ties: the lower threshold).
RoutePoint choose_threshold(const std::vector<RoutePoint>& curve, double target);

}  // namespace tinfer::cli
