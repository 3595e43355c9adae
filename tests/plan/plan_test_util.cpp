#include "plan/plan_test_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <random>

namespace px::plan::testing {

const std::string& example_json() {
  // From google/iopddl (Apache License 2.0): example.json, verbatim.
  static const std::string text = R"({
  "problem": {
    "name": "example",
    "nodes": {
      "intervals": [
        [30, 70],
        [40, 70],
        [50, 120],
        [110, 140],
        [110, 150]
      ],
      "costs": [
        [15],
        [55, 65],
        [25, 45, 35],
        [85, 75],
        [95]
      ],
      "usages": [
        [10],
        [25, 25],
        [15, 20, 15],
        [10, 10],
        [15]
      ]
    },
    "edges": {
      "nodes": [
        [0, 1],
        [0, 2],
        [1, 3],
        [2, 4],
        [3, 4]
      ],
      "costs": [
        [30, 40],
        [50, 10, 40],
        [90, 10, 20, 80],
        [60, 20, 30],
        [70, 60]
      ]
    },
    "usage_limit": 50
  }
}
)";
  return text;
}

namespace {

// The peak over time of per-node usages picked by `pick` (least or largest usage).
double peak_of(const ShardingProblem& problem, const std::function<double(const ProblemNode&)>& pick) {
  Choice choice(problem.nodes.size());
  ShardingProblem copy = problem;
  copy.usage_limit.reset();
  for (size_t i = 0; i < copy.nodes.size(); ++i) {
    ProblemNode& node = copy.nodes[i];
    const double target = pick(node);
    choice[i] = std::find(node.usages.begin(), node.usages.end(), target) - node.usages.begin();
  }
  return evaluate(copy, choice).peak_usage;
}

}  // namespace

ShardingProblem random_problem(uint64_t seed, const RandomProblemSpec& spec) {
  std::mt19937_64 rng(seed);
  const auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  ShardingProblem problem;
  problem.name = "random-" + std::to_string(seed);
  const int64_t horizon = 2 * int64_t{spec.nodes} + 2;
  for (int32_t i = 0; i < spec.nodes; ++i) {
    ProblemNode node;
    node.start = uniform(0, horizon - 1);
    node.end = std::min<int64_t>(horizon, node.start + uniform(0, spec.nodes / 2 + 2));
    const int64_t strategies = uniform(spec.min_strategies, spec.max_strategies);
    for (int64_t s = 0; s < strategies; ++s) {
      node.costs.push_back(static_cast<double>(uniform(0, 100)));
      node.usages.push_back(static_cast<double>(uniform(1, 20)));
    }
    problem.nodes.push_back(std::move(node));
  }
  const auto add_edge = [&](int64_t from, int64_t to) {
    ProblemEdge edge{from, to, {}};
    const size_t entries = problem.nodes[from].costs.size() * problem.nodes[to].costs.size();
    for (size_t k = 0; k < entries; ++k) {
      const bool prohibitive = std::uniform_real_distribution<double>(0, 1)(rng) < spec.prohibitive_fraction;
      edge.costs.push_back(prohibitive ? 1e18 : static_cast<double>(uniform(0, 50)));
    }
    problem.edges.push_back(std::move(edge));
  };
  for (int32_t i = 1; i < spec.nodes; ++i) add_edge(uniform(0, i - 1), i);
  for (int32_t k = 0; k < spec.extra_edges && spec.nodes > 2; ++k) {
    const int64_t a = uniform(0, spec.nodes - 1);
    int64_t b = uniform(0, spec.nodes - 2);
    if (b >= a) ++b;
    add_edge(a, b);
  }
  if (spec.with_limit) {
    const double least =
        peak_of(problem, [](const ProblemNode& n) { return *std::min_element(n.usages.begin(), n.usages.end()); });
    const double most =
        peak_of(problem, [](const ProblemNode& n) { return *std::max_element(n.usages.begin(), n.usages.end()); });
    problem.usage_limit = std::floor(least + spec.limit_fraction * (most - least));
  }
  return problem;
}

namespace {

struct Search {
  const ShardingProblem& problem;
  bool use_limit;
  std::vector<int64_t> steps;                                       // distinct interval starts
  std::vector<std::vector<std::pair<size_t, bool>>> earlier_edges;  // per node: (edge, node is "to")
  std::vector<double> usage;                                        // per step
  Choice current, best;
  double best_cost = std::numeric_limits<double>::infinity();

  void run(size_t node, double cost) {
    if (cost >= best_cost) return;
    if (node == problem.nodes.size()) {
      best_cost = cost;
      best = current;
      return;
    }
    const ProblemNode& n = problem.nodes[node];
    for (size_t s = 0; s < n.costs.size(); ++s) {
      current[node] = static_cast<int64_t>(s);
      double extra = n.costs[s];
      for (const auto& [e, is_to] : earlier_edges[node]) {
        const ProblemEdge& edge = problem.edges[e];
        const size_t columns = problem.nodes[edge.to].costs.size();
        extra += edge.costs[current[edge.from] * columns + current[edge.to]];
      }
      bool fits = true;
      for (size_t k = 0; k < steps.size(); ++k) {
        if (steps[k] >= n.start && steps[k] < n.end) {
          usage[k] += n.usages[s];
          fits = fits && (!use_limit || usage[k] <= *problem.usage_limit);
        }
      }
      if (fits) run(node + 1, cost + extra);
      for (size_t k = 0; k < steps.size(); ++k) {
        if (steps[k] >= n.start && steps[k] < n.end) usage[k] -= n.usages[s];
      }
    }
  }
};

}  // namespace

BruteForce brute_force(const ShardingProblem& problem) {
  BruteForce result;
  for (bool use_limit : {true, false}) {
    Search search{problem, use_limit && problem.usage_limit.has_value(), {}, {}, {}, {}, {}};
    for (const ProblemNode& node : problem.nodes) {
      if (node.end > node.start) search.steps.push_back(node.start);
    }
    search.earlier_edges.resize(problem.nodes.size());
    for (size_t e = 0; e < problem.edges.size(); ++e) {
      const ProblemEdge& edge = problem.edges[e];
      const auto later = static_cast<size_t>(std::max(edge.from, edge.to));
      search.earlier_edges[later].emplace_back(e, later == static_cast<size_t>(edge.to));
    }
    search.usage.assign(search.steps.size(), 0.0);
    search.current.assign(problem.nodes.size(), 0);
    search.run(0, 0.0);
    if (!search.best.empty() || problem.nodes.empty()) {
      result.feasible = use_limit || !problem.usage_limit.has_value();
      result.cost = search.best_cost;
      result.choice = search.best;
      if (problem.nodes.empty()) result.cost = 0;
      return result;
    }
  }
  return result;
}

SolveOptions exact_solver() {
  SolveOptions options;
  options.solver = SolverKind::Ilp;
  options.time_limit_s = 60;
  return options;
}

}  // namespace px::plan::testing
