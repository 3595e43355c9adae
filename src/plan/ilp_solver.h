#pragma once
// The exact solver on the model through COIN-OR CBC (internal; see ilp_solver.cpp).

#include <cstdint>
#include <optional>
#include <vector>

#include "plan/model.h"
#include "plan/search_state.h"

namespace px::plan {

struct IlpOptions {
  Clock::time_point deadline;
  // A feasible solution (model strategies) and its model cost: CBC's start, and the bound that lets
  // the model leave out every strategy and strategy pair that cannot be part of a better solution.
  const std::vector<int32_t>* incumbent = nullptr;
  double incumbent_cost = 0;
};

enum class IlpStatus : uint8_t {
  Optimal,     // proven optimal
  Feasible,    // a solution, not proven optimal
  Infeasible,  // proven: no choice meets the usage limit
  NoSolution,  // neither a solution nor a proof within the time limit
  TooLarge,    // not handed to CBC: too big to get anywhere within the time limit
};

struct IlpOutcome {
  IlpStatus status = IlpStatus::NoSolution;
  std::vector<int32_t> x;       // model strategies, when status is Optimal or Feasible
  double cost = 0;              // model cost of x, constant included
  std::optional<double> bound;  // a proven lower bound on the model cost, constant included
  int64_t columns = 0;          // the size of the model (for TooLarge: of the part counted)
  int64_t rows = 0;
};

IlpOutcome solve_ilp_model(const Model& model, const IlpOptions& options);

// The most columns handed to CBC with this much time (see ilp_solver.cpp).
int64_t ilp_column_budget(double seconds);

}  // namespace px::plan
