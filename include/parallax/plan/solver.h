#pragma once
// Solvers for a ShardingProblem, behind one interface. All are deterministic for a
// given seed unless the time limit cuts them short, and stop by their time limit (a
// solver always returns its best solution so far; `feasible` says whether it meets
// the usage limit). CBC may overrun the limit by a few seconds inside its root
// processing; models too big for it to get anywhere go to the fast solver instead.
//
//   ilp   exact: the AutoParallel/Alpa formulation (one-hot node variables, edge
//         variables linearizing the products, one memory row per time step where the
//         live set changes), through COIN-OR CBC's library API, with a time limit; it
//         reports CBC's best bound and the gap.
//   fast  for big graphs: see fast_solver.cpp for the algorithm and why. It reports a lower bound
//         too (dual_bound.h), and stops early when its best cost meets it: proven optimal.
//   auto  ilp for small problems, fast beyond (the threshold is documented in solver.cpp).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "parallax/plan/problem.h"

namespace px::plan {

enum class SolverKind : uint8_t { Auto, Ilp, Fast };
std::string solver_kind_name(SolverKind kind);        // "auto", "ilp", "fast"
SolverKind parse_solver_kind(std::string_view text);  // ValueError naming the text

struct SolveOptions {
  SolverKind solver = SolverKind::Auto;
  double time_limit_s = 60;
  uint64_t seed = 0;
  // The fast solver stops after this many rounds without a better solution (or twice the rounds
  // its best took, if more); 0: it never stops for a stall and searches until the time limit
  // (`parallax solve`'s default). The planner keeps 50: its plans come in about a second.
  int64_t stop_after_stall = 50;
  // Fast-solver searches side by side, one per thread, with seeds derived from `seed`; 0: one per
  // hardware thread. The answer depends on the seed and this count, so the planner keeps 1: the
  // same plan on every machine.
  int threads = 1;
  // Called now and then with the best cost so far (progress display); may be empty.
  std::function<void(double elapsed_s, double best_cost)> on_progress;
  // Called with each better lower bound the fast solver proves (progress display); may be empty.
  std::function<void(double elapsed_s, double bound)> on_bound;
};

struct SolveResult {
  Choice choice;
  Evaluation evaluation;
  // The one that ran: "ilp" or "fast"; when the ILP fell back to the fast solver's answer,
  // "fast (why)" (or "ilp (proven infeasible; ...)").
  std::string solver;
  double wall_s = 0;
  std::optional<double> bound;  // a proven lower bound on the optimum, when known
  std::optional<double> gap;    // (cost - bound) / max(|cost|, tiny), when known
  bool optimal = false;         // proven optimal
};

// ValueError for an invalid problem (ShardingProblem::validate) or options (a time limit <= 0).
SolveResult solve(const ShardingProblem& problem, const SolveOptions& options = {});

// The JSON object `parallax solve` prints: name, cost, feasible, peak_usage, wall_s, solver,
// and bound and gap where known.
std::string solve_result_json(const ShardingProblem& problem, const SolveResult& result);

}  // namespace px::plan
