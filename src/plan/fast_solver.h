#pragma once
// The fast solver on the model (internal; the algorithm is described in fast_solver.cpp).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "plan/model.h"
#include "plan/search_state.h"

namespace px::plan {

struct FastOptions {
  Clock::time_point deadline;
  uint64_t seed = 0;
  // Lagrangian rounds without a better solution after which the solver stops (or twice the rounds
  // the best took, if more). 0: it never stops for a stall; it restarts from perturbed costs and
  // prices and goes on until the deadline.
  int64_t stop_after_stall = 0;
  // Independent searches run side by side, one per thread (seeds derived from `seed`); the best
  // of them is the answer. 1 runs on the calling thread.
  int threads = 1;
  // Called with the cost of each new best feasible solution (model cost, constant included), from
  // whichever search found it, never two at once, and only for costs below every earlier call's.
  std::function<void(double cost)> on_improvement;
  // Called with each new best lower bound (model cost, constant included), from whichever search
  // proved it, never two at once, and only for bounds above every earlier call's.
  std::function<void(double bound)> on_bound;
};

// A best feasible cost within this share of a lower bound is proven optimal: the searches stop
// (all of them, with threads). The bound is summed in long double and costs in double, so the two
// can differ by rounding alone.
inline constexpr double kProofTolerance = 1e-9;
inline bool meets_bound(double cost, double bound) {
  return cost - bound <= kProofTolerance * std::max(1.0, std::fabs(cost));
}

struct FastOutcome {
  std::vector<int32_t> x;  // model strategies
  bool feasible = false;
  double cost = 0;         // model cost, constant included
  double max_excess = 0;   // the largest usage over capacity (<= 0 when feasible)
  int64_t rounds = 0;      // Lagrangian rounds run (the answer's search)
  int64_t restarts = 0;    // perturbed restarts after a stall (the answer's search)
  int64_t crossovers = 0;  // crossovers that switched a part into the best (the answer's search)
  // The best lower bound any search proved (dual_bound.h), -inf when none; never above cost when
  // feasible. `optimal`: feasible and cost within kProofTolerance of it.
  double lower_bound = -kInfinity;
  bool optimal = false;
};

FastOutcome solve_fast_model(const Model& model, const FastOptions& options);

}  // namespace px::plan
