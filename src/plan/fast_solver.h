#pragma once
// The fast solver on the model (internal; the algorithm is described in fast_solver.cpp).

#include <cstdint>
#include <functional>
#include <vector>

#include "plan/model.h"
#include "plan/search_state.h"

namespace px::plan {

struct FastOptions {
  Clock::time_point deadline;
  uint64_t seed = 0;
  // Called with the cost of each new best feasible solution (model cost, constant included).
  std::function<void(double cost)> on_improvement;
};

struct FastOutcome {
  std::vector<int32_t> x;  // model strategies
  bool feasible = false;
  double cost = 0;     // model cost, constant included
  int64_t rounds = 0;  // Lagrangian rounds run
};

FastOutcome solve_fast_model(const Model& model, const FastOptions& options);

}  // namespace px::plan
