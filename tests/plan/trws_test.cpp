// TRW-S (src/plan/trws.h) on trees, where its messages converge to exact min-marginals and the
// decoded solution is optimal: the messages must follow new unary costs (the fast solver's
// prices change every round), the leaves' cached ones included.

#include "plan/trws.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "plan/model.h"
#include "plan/plan_test_util.h"

namespace px::plan {
namespace {

using testing::brute_force;
using testing::random_problem;
using testing::RandomProblemSpec;

TEST(Trws, DecodesTheTreeOptimumAndFollowsNewUnaryCosts) {
  for (uint64_t seed = 41; seed <= 48; ++seed) {
    RandomProblemSpec spec;
    spec.nodes = 11;
    spec.extra_edges = 0;  // a random spanning tree: several leaves
    spec.with_limit = false;
    const ShardingProblem before = random_problem(seed, spec);
    // The same tree with other node costs, large enough (edges cost 0-50) to move the optimum.
    ShardingProblem after = before;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> shift(0, 400);
    for (ProblemNode& node : after.nodes) {
      for (double& cost : node.costs) cost += shift(rng);
    }
    const Model model_before = build_model(before);
    const Model model_after = build_model(after);
    ASSERT_EQ(model_before.num_nodes(), static_cast<int32_t>(before.nodes.size())) << "every node has a choice";
    int32_t leaves = 0;
    for (int32_t k = 0; k < model_before.num_nodes(); ++k) {
      leaves += model_before.incidence_offset[k + 1] - model_before.incidence_offset[k] == 1 ? 1 : 0;
    }
    ASSERT_GE(leaves, 2) << "seed " << seed;

    Trws trws(model_before);
    std::vector<int32_t> x(model_before.num_nodes(), 0);
    for (int pass = 0; pass < 20; ++pass) trws.iterate(model_before.cost, x);
    const double optimum_before = brute_force(before).cost;
    EXPECT_NEAR(model_cost(model_before, x), optimum_before, 1e-9 * optimum_before) << "seed " << seed;

    for (int pass = 0; pass < 20; ++pass) trws.iterate(model_after.cost, x);
    const double optimum_after = brute_force(after).cost;
    EXPECT_NEAR(model_cost(model_after, x), optimum_after, 1e-9 * optimum_after) << "seed " << seed;
  }
}

}  // namespace
}  // namespace px::plan
