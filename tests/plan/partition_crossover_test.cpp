// Partition crossover (src/plan/partition_crossover.h): the components where two solutions differ
// are disconnected from each other, their gains are exact and add up, and switching every one of
// them turns one solution into the other; a cross keeps whole gaining parts that fit the limit.

#include "plan/partition_crossover.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "plan/model.h"
#include "plan/plan_test_util.h"
#include "plan/search_state.h"

namespace px::plan {
namespace {

using testing::random_problem;
using testing::RandomProblemSpec;

std::vector<int32_t> random_solution(const Model& model, std::mt19937_64& rng) {
  std::vector<int32_t> x(model.num_nodes());
  for (int32_t k = 0; k < model.num_nodes(); ++k) {
    x[k] = std::uniform_int_distribution<int32_t>(0, model.num_strategies(k) - 1)(rng);
  }
  return x;
}

TEST(PartitionCrossover, ComponentsAreSeparateAndTheirGainsExact) {
  int64_t components_seen = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    RandomProblemSpec spec;
    spec.nodes = 40;
    spec.extra_edges = 12;  // cycles
    const Model model = build_model(random_problem(seed, spec));
    std::mt19937_64 rng(seed);
    const std::vector<int32_t> base = random_solution(model, rng);
    // `other` agrees with base on about half the nodes, so the differences split into parts.
    std::vector<int32_t> other = random_solution(model, rng);
    for (int32_t k = 0; k < model.num_nodes(); ++k) {
      if (rng() % 2 == 0) other[k] = base[k];
    }
    const std::vector<DifferenceComponent> parts = difference_components(model, base, other);

    std::vector<int32_t> part_of(model.num_nodes(), -1);
    for (size_t p = 0; p < parts.size(); ++p) {
      ASSERT_FALSE(parts[p].nodes.empty());
      for (int32_t node : parts[p].nodes) {
        ASSERT_NE(base[node], other[node]) << "seed " << seed;
        ASSERT_EQ(part_of[node], -1) << "node " << node << " in two parts, seed " << seed;
        part_of[node] = static_cast<int32_t>(p);
      }
    }
    const double base_cost = model_cost(model, base);
    std::vector<int32_t> all_switched = base;
    double gains = 0;
    for (size_t p = 0; p < parts.size(); ++p) {
      if (p > 0) {
        EXPECT_GE(parts[p - 1].gain, parts[p].gain) << "largest gain first";
      }
      std::vector<int32_t> switched = base;
      for (int32_t node : parts[p].nodes) {
        switched[node] = other[node];
        all_switched[node] = other[node];
      }
      EXPECT_NEAR(base_cost - model_cost(model, switched), parts[p].gain, 1e-9 * std::max(1.0, base_cost))
          << "seed " << seed << ", part " << p;
      gains += parts[p].gain;
    }
    components_seen += static_cast<int64_t>(parts.size());
    // Every differing node is in a part, and the gains add up: the parts do not interact.
    EXPECT_EQ(all_switched, other) << "seed " << seed;
    EXPECT_NEAR(base_cost - model_cost(model, other), gains, 1e-9 * std::max(1.0, base_cost)) << "seed " << seed;
    // No edge joins two parts.
    for (const ModelEdge& edge : model.edges) {
      if (part_of[edge.u] >= 0 && part_of[edge.v] >= 0) {
        EXPECT_EQ(part_of[edge.u], part_of[edge.v]) << "seed " << seed;
      }
    }
  }
  EXPECT_GT(components_seen, 60) << "the random pairs should split into several parts each";
}

// The least-usage strategy of every node: the least peak, so feasible whenever anything is.
std::vector<int32_t> least_usage_solution(const Model& model) {
  std::vector<int32_t> x(model.num_nodes());
  for (int32_t k = 0; k < model.num_nodes(); ++k) {
    const double* usage = model.node_usages(k);
    x[k] = static_cast<int32_t>(std::min_element(usage, usage + model.num_strategies(k)) - usage);
  }
  return x;
}

TEST(PartitionCrossover, CrossKeepsWholeGainingPartsThatFit) {
  int64_t undone = 0;
  for (const bool with_limit : {false, true}) {
    for (uint64_t seed = 1; seed <= 30; ++seed) {
      RandomProblemSpec spec;
      spec.nodes = 40;
      spec.extra_edges = 12;
      spec.with_limit = with_limit;
      spec.limit_fraction = 0.2;
      const Model model = build_model(random_problem(seed, spec));
      std::mt19937_64 rng(seed);
      const std::vector<int32_t> base = least_usage_solution(model);
      const std::vector<int32_t> other = random_solution(model, rng);
      const std::vector<DifferenceComponent> parts = difference_components(model, base, other);

      SearchState state(model);
      state.assign(base);
      ASSERT_TRUE(state.feasible()) << "seed " << seed;
      const int64_t kept = cross_into(model, state, other, 0.0);
      EXPECT_TRUE(state.feasible()) << "seed " << seed;

      // Every part is switched whole or not at all; only gaining ones are, and the cost falls by
      // exactly their gains.
      int64_t switched_parts = 0;
      double kept_gains = 0;
      for (const DifferenceComponent& part : parts) {
        int64_t switched = 0;
        for (int32_t node : part.nodes) switched += state.x()[node] == other[node];
        ASSERT_TRUE(switched == 0 || switched == static_cast<int64_t>(part.nodes.size())) << "seed " << seed;
        if (switched == 0) {
          if (part.gain > 0) ++undone;
          EXPECT_TRUE(with_limit || part.gain <= 0) << "without a limit every gaining part fits, seed " << seed;
          continue;
        }
        EXPECT_GT(part.gain, 0) << "seed " << seed;
        ++switched_parts;
        kept_gains += part.gain;
      }
      for (int32_t k = 0; k < model.num_nodes(); ++k) {
        if (base[k] == other[k]) {
          EXPECT_EQ(state.x()[k], base[k]);
        }
      }
      EXPECT_EQ(kept, switched_parts) << "seed " << seed;
      const double base_cost = model_cost(model, base);
      EXPECT_NEAR(model_cost(model, state.x()), base_cost - kept_gains, 1e-9 * std::max(1.0, base_cost))
          << "seed " << seed;
      if (!with_limit) {
        EXPECT_LE(model_cost(model, state.x()), std::min(base_cost, model_cost(model, other)) + 1e-9 * base_cost)
            << "seed " << seed;
      }
    }
  }
  EXPECT_GT(undone, 0) << "some gaining part should overflow the limit and be undone";
}

TEST(PartitionCrossover, EqualSolutionsHaveNoParts) {
  const Model model = build_model(random_problem(7));
  const std::vector<int32_t> x(model.num_nodes(), 0);
  EXPECT_TRUE(difference_components(model, x, x).empty());
}

}  // namespace
}  // namespace px::plan
