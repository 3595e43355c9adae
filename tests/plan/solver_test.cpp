#include "parallax/plan/solver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "parallax/core/error.h"
#include "plan/plan_test_util.h"
#include "support/test_util.h"

namespace px::plan {
namespace {

using px::testing::expect_value_error;
using testing::brute_force;
using testing::random_problem;
using testing::RandomProblemSpec;

SolveResult run(const ShardingProblem& problem, SolverKind kind, double time_limit_s = 20, uint64_t seed = 0) {
  SolveOptions options;
  options.solver = kind;
  options.time_limit_s = time_limit_s;
  options.seed = seed;
  return solve(problem, options);
}

TEST(Solve, ExampleOptimalByIlpFastAndBruteForce) {
  const ShardingProblem problem = parse_problem(testing::example_json());
  const testing::BruteForce exact = brute_force(problem);
  ASSERT_TRUE(exact.feasible);
  EXPECT_EQ(exact.cost, 445);
  EXPECT_EQ(exact.choice, (Choice{0, 0, 2, 1, 0}));

  const SolveResult ilp = run(problem, SolverKind::Ilp);
  EXPECT_EQ(ilp.solver, "ilp");
  EXPECT_TRUE(ilp.optimal);
  EXPECT_TRUE(ilp.evaluation.feasible);
  EXPECT_EQ(ilp.evaluation.cost, 445);
  EXPECT_EQ(ilp.choice, exact.choice);
  ASSERT_TRUE(ilp.bound.has_value());
  EXPECT_EQ(*ilp.bound, 445);
  ASSERT_TRUE(ilp.gap.has_value());
  EXPECT_EQ(*ilp.gap, 0);

  const SolveResult fast = run(problem, SolverKind::Fast);
  EXPECT_EQ(fast.solver, "fast");
  EXPECT_TRUE(fast.evaluation.feasible);
  EXPECT_EQ(fast.evaluation.cost, 445);
  ASSERT_TRUE(fast.bound.has_value());  // the fast solver's dual bound (dual_bound.h)
  EXPECT_LE(*fast.bound, 445 + 1e-6);

  EXPECT_EQ(run(problem, SolverKind::Auto).solver, "ilp");  // small: auto takes the exact solver
}

// Random small problems: the ILP matches exhaustive search; the fast solver is feasible and close.
class RandomSmall : public ::testing::TestWithParam<uint64_t> {};

TEST_P(RandomSmall, IlpExactFastClose) {
  const uint64_t seed = GetParam();
  RandomProblemSpec spec;
  spec.nodes = 8 + static_cast<int32_t>(seed % 5);
  spec.min_strategies = 2;
  spec.max_strategies = spec.nodes > 10 ? 3 : 4;
  spec.limit_fraction = 0.15 + 0.1 * static_cast<double>(seed % 4);
  spec.prohibitive_fraction = seed % 3 == 0 ? 0.2 : 0.0;
  const ShardingProblem problem = random_problem(seed, spec);
  const testing::BruteForce exact = brute_force(problem);
  ASSERT_TRUE(exact.feasible);

  const SolveResult ilp = run(problem, SolverKind::Ilp);
  EXPECT_TRUE(ilp.evaluation.feasible) << ilp.evaluation.violation;
  EXPECT_TRUE(ilp.optimal);
  EXPECT_EQ(ilp.evaluation.cost, exact.cost) << "seed " << seed;
  ASSERT_TRUE(ilp.bound.has_value());
  EXPECT_LE(*ilp.bound, exact.cost + 1e-6);

  const SolveResult fast = run(problem, SolverKind::Fast, 10, seed);
  EXPECT_TRUE(fast.evaluation.feasible) << fast.evaluation.violation;
  EXPECT_GE(fast.evaluation.cost, exact.cost);
  EXPECT_LE(fast.evaluation.cost, 1.05 * exact.cost) << "seed " << seed;
  // Its bound holds: below the optimum (prices, forbidden pairs and cycles included).
  ASSERT_TRUE(fast.bound.has_value());
  EXPECT_LE(*fast.bound, exact.cost * (1 + 1e-12) + 1e-9) << "seed " << seed;
  EXPECT_EQ(fast.optimal, fast.evaluation.cost - *fast.bound <= 1e-9 * std::fabs(fast.evaluation.cost));
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomSmall, ::testing::Range<uint64_t>(1, 13));

TEST(Solve, WithoutLimitBothOptimal) {
  for (uint64_t seed : {21, 22, 23}) {
    RandomProblemSpec spec;
    spec.with_limit = false;
    spec.nodes = 10;
    const ShardingProblem problem = random_problem(seed, spec);
    const testing::BruteForce exact = brute_force(problem);
    EXPECT_EQ(run(problem, SolverKind::Ilp).evaluation.cost, exact.cost);
    const SolveResult fast = run(problem, SolverKind::Fast);
    EXPECT_TRUE(fast.evaluation.feasible);
    EXPECT_EQ(fast.evaluation.cost, exact.cost) << "seed " << seed;
  }
}

TEST(Solve, InfeasibleLimit) {
  ShardingProblem problem = parse_problem(testing::example_json());
  problem.usage_limit = 40;  // nodes 0 and 1 alone need 35 over [40, 70), node 2 at least 15 more
  EXPECT_FALSE(brute_force(problem).feasible);
  const Evaluation e = evaluate(problem, {0, 0, 0, 0, 0});
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.violation, "usage 50 > limit 40 at time step 50");
  for (SolverKind kind : {SolverKind::Ilp, SolverKind::Fast}) {
    const SolveResult result = run(problem, kind, 5);
    EXPECT_FALSE(result.evaluation.feasible) << solver_kind_name(kind);
    EXPECT_FALSE(result.optimal);
    EXPECT_EQ(result.evaluation.peak_usage, 50) << "the least infeasible choice";
    EXPECT_NE(result.evaluation.violation, "");
  }
  EXPECT_NE(run(problem, SolverKind::Ilp, 5).solver.find("infeasible"), std::string::npos);
}

SolveResult run_fast(const ShardingProblem& problem, int threads, int64_t stop_after_stall, double time_limit_s) {
  SolveOptions options;
  options.solver = SolverKind::Fast;
  options.time_limit_s = time_limit_s;
  options.seed = 11;
  options.threads = threads;
  options.stop_after_stall = stop_after_stall;
  return solve(problem, options);
}

RandomProblemSpec tight_spec() {
  RandomProblemSpec spec;
  spec.nodes = 150;
  spec.max_strategies = 6;
  spec.extra_edges = 60;
  spec.limit_fraction = 0.2;
  spec.prohibitive_fraction = 0.3;
  return spec;
}

TEST(Solve, FastIsDeterministicForASeed) {
  const ShardingProblem problem = random_problem(5, tight_spec());
  const SolveResult a = run(problem, SolverKind::Fast, 60, 7);
  const SolveResult b = run(problem, SolverKind::Fast, 60, 7);
  EXPECT_LT(a.wall_s, 30) << "should stop by itself, well before the time limit";
  EXPECT_EQ(a.choice, b.choice);
  EXPECT_EQ(a.evaluation.cost, b.evaluation.cost);
  EXPECT_TRUE(a.evaluation.feasible);
}

// Searches side by side: the same answer for a seed and a thread count, whichever thread finishes
// first; thread 0 is the one-thread search, so more threads never answer worse.
TEST(Solve, FastThreadsAreDeterministicAndNoWorse) {
  const ShardingProblem problem = random_problem(6, tight_spec());
  const SolveResult one = run_fast(problem, 1, 50, 60);
  const SolveResult three = run_fast(problem, 3, 50, 60);
  const SolveResult again = run_fast(problem, 3, 50, 60);
  EXPECT_LT(three.wall_s, 30) << "each search should stop by itself, well before the time limit";
  EXPECT_EQ(three.choice, again.choice);
  EXPECT_TRUE(three.evaluation.feasible);
  EXPECT_LE(three.evaluation.cost, one.evaluation.cost);
}

// Without a stall limit the search goes on to the time limit (restarting from perturbed costs and
// prices); it retraces the stall-limited search first, so it never ends worse.
TEST(Solve, FastAnytimeSearchesUntilTheLimit) {
  const ShardingProblem problem = random_problem(8, tight_spec());
  // The anytime search gets twice the time the stall-limited one took (at least 2 s), so that it
  // can retrace it on a slow machine or a sanitizer build too.
  const SolveResult stalled = run_fast(problem, 1, 50, 60);
  const double limit = std::max(2.0, 2 * stalled.wall_s);
  const SolveResult anytime = run_fast(problem, 1, 0, limit);
  EXPECT_GE(anytime.wall_s, limit);
  EXPECT_TRUE(anytime.evaluation.feasible);
  EXPECT_LE(anytime.evaluation.cost, stalled.evaluation.cost);
  // Without a memory limit too: the restarts perturb the costs alone.
  ShardingProblem unlimited = problem;
  unlimited.usage_limit.reset();
  const SolveResult free_stalled = run_fast(unlimited, 1, 50, 60);
  const double free_limit = std::max(1.0, 2 * free_stalled.wall_s);
  const SolveResult free_anytime = run_fast(unlimited, 2, 0, free_limit);
  EXPECT_GE(free_anytime.wall_s, free_limit);
  EXPECT_LE(free_anytime.evaluation.cost, free_stalled.evaluation.cost);
}

// Where the LP relaxation is tight (a tree, no memory limit) the bound meets the optimum, and the
// anytime search, which otherwise runs to its time limit, stops there with a proof.
TEST(Solve, FastBoundProvesOptimaAndStopsTheSearch) {
  for (uint64_t seed : {31, 32, 33}) {
    RandomProblemSpec spec;
    spec.nodes = 12;
    spec.extra_edges = 0;  // a spanning tree
    spec.with_limit = false;
    spec.prohibitive_fraction = seed == 33 ? 0.3 : 0.0;
    const ShardingProblem problem = random_problem(seed, spec);
    const testing::BruteForce exact = brute_force(problem);
    const SolveResult fast = run_fast(problem, 2, 0, 30);
    EXPECT_LT(fast.wall_s, 10) << "seed " << seed << ": the proof should stop the search";
    EXPECT_TRUE(fast.optimal) << "seed " << seed;
    EXPECT_EQ(fast.evaluation.cost, exact.cost) << "seed " << seed;
    ASSERT_TRUE(fast.bound.has_value());
    EXPECT_NEAR(*fast.bound, exact.cost, 1e-9 * exact.cost) << "seed " << seed;
    ASSERT_TRUE(fast.gap.has_value());
    EXPECT_LE(*fast.gap, 1e-9);
    const nlohmann::json json = nlohmann::json::parse(solve_result_json(problem, fast));
    EXPECT_TRUE(json["optimal"].get<bool>());
    EXPECT_TRUE(json.contains("bound"));
  }
  // With cycles, a memory limit and forbidden pairs the bound still holds; the progress callback
  // sees it rise.
  const ShardingProblem problem = random_problem(12, tight_spec());
  SolveOptions options;
  options.solver = SolverKind::Fast;
  options.time_limit_s = 2;
  options.stop_after_stall = 0;
  std::vector<double> bounds;
  options.on_bound = [&](double, double bound) { bounds.push_back(bound); };
  const SolveResult result = solve(problem, options);
  ASSERT_FALSE(bounds.empty());
  for (size_t i = 1; i < bounds.size(); ++i) EXPECT_GT(bounds[i], bounds[i - 1]);
  ASSERT_TRUE(result.bound.has_value());
  EXPECT_LE(*result.bound, result.evaluation.cost);
  EXPECT_DOUBLE_EQ(*result.bound, std::min(bounds.back(), result.evaluation.cost));
}

TEST(Solve, TimeLimitRespected) {
  RandomProblemSpec spec;
  spec.nodes = 20000;
  spec.max_strategies = 8;
  spec.extra_edges = 10000;
  spec.limit_fraction = 0.1;
  spec.prohibitive_fraction = 0.5;
  const ShardingProblem problem = random_problem(9, spec);
  const auto start = std::chrono::steady_clock::now();
  const SolveResult result = run(problem, SolverKind::Fast, 1.0);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(elapsed, 2.5);
  EXPECT_LT(result.wall_s, 2.5);
  EXPECT_EQ(result.choice.size(), problem.nodes.size());
  EXPECT_EQ(run(problem, SolverKind::Auto, 1.0).solver, "fast") << "big: auto takes the fast solver";
}

TEST(Solve, AllNodesFixed) {
  ShardingProblem problem;
  problem.nodes = {{"a", 0, 2, {3}, {1}, {}}, {"b", 1, 3, {4}, {1}, {}}};
  problem.edges = {{0, 1, {5}}};
  problem.usage_limit = 2;
  for (SolverKind kind : {SolverKind::Auto, SolverKind::Ilp, SolverKind::Fast}) {
    const SolveResult result = run(problem, kind);
    EXPECT_EQ(result.evaluation.cost, 12);
    EXPECT_TRUE(result.optimal);
  }
}

TEST(Solve, ParallelEdgesAndFixedNeighbours) {
  // Duplicate edges (both directions) and edges to single-strategy nodes fold into the model.
  ShardingProblem problem = random_problem(31, {.nodes = 9, .extra_edges = 2});
  problem.edges.push_back({problem.edges[0].to, problem.edges[0].from, {}});
  const size_t rows = problem.nodes[problem.edges.back().from].costs.size();
  const size_t columns = problem.nodes[problem.edges.back().to].costs.size();
  for (size_t k = 0; k < rows * columns; ++k) problem.edges.back().costs.push_back(static_cast<double>(k % 7));
  problem.nodes[3].costs.resize(1);
  problem.nodes[3].usages.resize(1);
  for (ProblemEdge& edge : problem.edges) {
    if (edge.from != 3 && edge.to != 3) continue;
    const size_t r = problem.nodes[edge.from].costs.size();
    const size_t c = problem.nodes[edge.to].costs.size();
    edge.costs.resize(r * c);
    for (size_t k = 0; k < edge.costs.size(); ++k) edge.costs[k] = static_cast<double>(3 * k % 11);
  }
  problem.validate();
  const testing::BruteForce exact = brute_force(problem);
  ASSERT_TRUE(exact.feasible);
  EXPECT_EQ(run(problem, SolverKind::Ilp).evaluation.cost, exact.cost);
  EXPECT_EQ(run(problem, SolverKind::Fast).evaluation.cost, exact.cost);
}

TEST(Solve, ProgressReportsImprovements) {
  const ShardingProblem problem = random_problem(4, {.nodes = 12});
  SolveOptions options;
  options.solver = SolverKind::Ilp;
  options.time_limit_s = 10;
  std::vector<double> costs;
  options.on_progress = [&](double elapsed_s, double cost) {
    EXPECT_GE(elapsed_s, 0);
    costs.push_back(cost);
  };
  const SolveResult result = solve(problem, options);
  ASSERT_FALSE(costs.empty());
  EXPECT_EQ(costs.back(), result.evaluation.cost);
}

TEST(Solve, OptionErrors) {
  const ShardingProblem problem = parse_problem(testing::example_json());
  SolveOptions options;
  options.time_limit_s = 0;
  expect_value_error([&] { solve(problem, options); },
                     "solve: the time limit must be a positive number of seconds, got 0");
  options.time_limit_s = 1;
  options.threads = -1;
  expect_value_error([&] { solve(problem, options); }, "solve: threads must be >= 0 (0: all), got -1");
  options.threads = 1;
  options.stop_after_stall = -2;
  expect_value_error([&] { solve(problem, options); }, "solve: stop_after_stall must be >= 0 (0: never), got -2");
  expect_value_error([] { parse_solver_kind("cplex"); }, "unknown solver 'cplex': expected auto, ilp or fast");
  EXPECT_EQ(parse_solver_kind("fast"), SolverKind::Fast);
  EXPECT_EQ(solver_kind_name(SolverKind::Ilp), "ilp");
  ShardingProblem broken = problem;
  broken.edges[0].to = 0;
  EXPECT_THROW(solve(broken), ValueError);
}

TEST(Solve, ResultJson) {
  const ShardingProblem problem = parse_problem(testing::example_json());
  const SolveResult result = run(problem, SolverKind::Ilp);
  const nlohmann::json json = nlohmann::json::parse(solve_result_json(problem, result));
  EXPECT_EQ(json["name"], "example");
  EXPECT_EQ(json["cost"], 445);
  EXPECT_TRUE(json["cost"].is_number_integer());
  EXPECT_EQ(json["feasible"], true);
  EXPECT_EQ(json["peak_usage"], 50);
  EXPECT_EQ(json["solver"], "ilp");
  EXPECT_EQ(json["bound"], 445);
  EXPECT_EQ(json["gap"], 0.0);
  EXPECT_TRUE(json["wall_s"].is_number());
  EXPECT_FALSE(json.contains("violation"));
  const SolveResult fast = run(problem, SolverKind::Fast);
  const nlohmann::json fast_json = nlohmann::json::parse(solve_result_json(problem, fast));
  // The fast solver's bound and gap (dual_bound.h) where it has one; "optimal" as it proved.
  ASSERT_TRUE(fast.bound.has_value());
  EXPECT_EQ(fast_json["bound"].get<double>(), *fast.bound);
  EXPECT_EQ(fast_json["gap"].get<double>(), *fast.gap);
  EXPECT_EQ(fast_json["optimal"].get<bool>(), fast.optimal);
}

}  // namespace
}  // namespace px::plan
