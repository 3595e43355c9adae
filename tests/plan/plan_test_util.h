#pragma once
// Shared by the planner's tests: the IOPDDL example, seeded random problems, an exhaustive
// solver to check the others against, and temporary files.

#include <cstdint>
#include <string>

#include "parallax/plan/problem.h"
#include "parallax/plan/solver.h"
#include "support/test_util.h"

namespace px::plan::testing {

// The shared file helpers (support/test_util.h), where plan tests look for them.
using px::testing::slurp;
using px::testing::spit;
using px::testing::temp_path;

// google/iopddl's example.json (Apache License 2.0), as shipped in ../shared/iopddl/. Its
// optimum is 445 with strategies [0, 0, 2, 1, 0].
const std::string& example_json();

struct RandomProblemSpec {
  int32_t nodes = 10;
  int32_t min_strategies = 2;
  int32_t max_strategies = 4;
  int32_t extra_edges = 3;      // beyond a random spanning tree (they close cycles)
  double limit_fraction = 0.4;  // limit = least peak + fraction * (largest peak - least peak)
  bool with_limit = true;
  double prohibitive_fraction = 0.0;  // edge entries set to 1e18 (incompatible), as in the contest
};

// Deterministic for a seed; always has a feasible choice when with_limit.
ShardingProblem random_problem(uint64_t seed, const RandomProblemSpec& spec = {});

struct BruteForce {
  bool feasible = false;
  double cost = 0;  // the least cost over feasible choices (over all choices when none is feasible)
  Choice choice;
};

// Exhaustive search with pruning (usages are >= 0); for small problems only.
BruteForce brute_force(const ShardingProblem& problem);

// The exact solver (CBC) with a 60 s limit.
SolveOptions exact_solver();

}  // namespace px::plan::testing
