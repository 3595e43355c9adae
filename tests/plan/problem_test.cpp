#include "parallax/plan/problem.h"

#include <gtest/gtest.h>

#include <cmath>

#include "parallax/core/error.h"
#include "plan/plan_test_util.h"
#include "support/test_util.h"

namespace px::plan {
namespace {

using px::testing::expect_value_error;

ShardingProblem example() { return parse_problem(testing::example_json(), "example.json"); }

TEST(ShardingProblem, ExampleShape) {
  const ShardingProblem problem = example();
  EXPECT_EQ(problem.name, "example");
  ASSERT_EQ(problem.nodes.size(), 5u);
  ASSERT_EQ(problem.edges.size(), 5u);
  EXPECT_EQ(problem.num_strategies(), 1 + 2 + 3 + 2 + 1);
  EXPECT_EQ(problem.nodes[2].start, 50);
  EXPECT_EQ(problem.nodes[2].end, 120);
  EXPECT_EQ(problem.edges[1].costs, (std::vector<double>{50, 10, 40}));
  ASSERT_TRUE(problem.usage_limit.has_value());
  EXPECT_EQ(*problem.usage_limit, 50);
}

TEST(ShardingProblem, EvaluateExampleOptimum) {
  const Evaluation e = evaluate(example(), {0, 0, 2, 1, 0});
  // Nodes 15 + 55 + 35 + 75 + 95; edges 30 + 40 + 10 + 30 + 60.
  EXPECT_EQ(e.cost, 445);
  EXPECT_TRUE(e.feasible);
  EXPECT_EQ(e.peak_usage, 50);  // nodes 0, 1, 2 over [50, 70): 10 + 25 + 15
  EXPECT_EQ(e.peak_step, 50);
  EXPECT_EQ(e.violation, "");
}

TEST(ShardingProblem, EvaluateOverTheLimit) {
  const Evaluation e = evaluate(example(), {0, 0, 1, 1, 0});
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.peak_usage, 55);
  EXPECT_EQ(e.peak_step, 50);
  EXPECT_EQ(e.violation, "usage 55 > limit 50 at time step 50");
  EXPECT_EQ(e.cost, 15 + 55 + 45 + 75 + 95 + 30 + 10 + 10 + 20 + 60);
}

TEST(ShardingProblem, IntervalsAreHalfOpen) {
  ShardingProblem problem;
  problem.nodes = {{"a", 0, 10, {1}, {30}, {}}, {"b", 10, 20, {1}, {30}, {}}, {"never live", 5, 5, {1}, {100}, {}}};
  problem.usage_limit = 30;
  const Evaluation e = evaluate(problem, {0, 0, 0});
  EXPECT_TRUE(e.feasible) << e.violation;  // a ends where b starts; the empty interval is never live
  EXPECT_EQ(e.peak_usage, 30);
  problem.nodes[1].start = 9;
  const Evaluation overlap = evaluate(problem, {0, 0, 0});
  EXPECT_FALSE(overlap.feasible);
  EXPECT_EQ(overlap.violation, "usage 60 > limit 30 at time step 9");
}

TEST(ShardingProblem, NoLimitIsAlwaysFeasible) {
  ShardingProblem problem = example();
  problem.usage_limit.reset();
  const Evaluation e = evaluate(problem, {0, 1, 1, 0, 0});
  EXPECT_TRUE(e.feasible);
  EXPECT_EQ(e.peak_usage, 55);
}

TEST(ShardingProblem, EvaluateRejectsBadChoices) {
  expect_value_error([] { evaluate(example(), {0, 0, 2}); }, "evaluate: the choice has 3 strategies for 5 nodes");
  expect_value_error([] { evaluate(example(), {0, 0, 3, 1, 0}); }, "evaluate: node 2 has strategy 3, expected 0..2");
  ShardingProblem named = example();
  named.nodes[1].name = "mm";
  expect_value_error(
      [&] {
        evaluate(named, {0, -1, 0, 0, 0});
      },
      "evaluate: node 1 (mm) has strategy -1, expected 0..1");
}

TEST(ShardingProblem, LargeIntegerCostsStayExact) {
  // 2^53 + 2 and friends: the sum must not round (contest totals can pass 2^53).
  ShardingProblem problem;
  problem.nodes = {{"", 0, 1, {9007199254740992.0}, {0}, {}}, {"", 0, 1, {2}, {0}, {}}, {"", 0, 1, {2}, {0}, {}}};
  EXPECT_EQ(evaluate(problem, {0, 0, 0}).cost, 9007199254740996.0);
}

TEST(ShardingProblem, ValidateNamesTheProblem) {
  const auto expect = [](const std::function<void(ShardingProblem&)>& edit, const std::string& message) {
    ShardingProblem problem = example();
    edit(problem);
    expect_value_error([&] { problem.validate(); }, "ShardingProblem 'example': " + message);
  };
  expect([](ShardingProblem& p) { p.nodes[3].costs.clear(), p.nodes[3].usages.clear(); }, "node 3 has no strategies");
  expect([](ShardingProblem& p) { p.nodes[2].usages.pop_back(); }, "node 2 has 3 costs but 2 usages");
  expect([](ShardingProblem& p) { p.nodes[1].end = 10; }, "node 1 has the negative interval [40, 10)");
  expect([](ShardingProblem& p) { p.nodes[1].strategy_names = {"R"}; }, "node 1 has 1 strategy names for 2 strategies");
  expect([](ShardingProblem& p) { p.nodes[4].costs[0] = std::nan(""); },
         "node 4 costs[0] is nan, expected a finite number");
  expect([](ShardingProblem& p) { p.nodes[4].usages[0] = INFINITY; },
         "node 4 usages[0] is inf, expected a finite number");
  expect([](ShardingProblem& p) { p.edges[2].to = 7; }, "edge 2 (1 -> 7) names node 7, but there are 5 nodes");
  expect([](ShardingProblem& p) { p.edges[2].to = 1; }, "edge 2 (1 -> 1) is a self edge");
  expect([](ShardingProblem& p) { p.edges[3].costs.push_back(1); }, "edge 3 (2 -> 4) has 4 costs, expected 3 x 1 = 3");
  expect([](ShardingProblem& p) { p.usage_limit = NAN; }, "usage_limit is nan, expected a finite number");
  ShardingProblem fine = example();
  fine.nodes[0].end = fine.nodes[0].start;  // empty intervals are allowed
  EXPECT_NO_THROW(fine.validate());
}

}  // namespace
}  // namespace px::plan
