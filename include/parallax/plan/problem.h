#pragma once
// ShardingProblem: the optimization problem the planner solves, with the
// semantics of the public IOPDDL contest format (../shared/iopddl/README.md):
//   - nodes, each with strategies; strategy s of node i costs costs[i][s] and uses
//     usages[i][s] memory while the node is live, over [start, end) time steps (an empty
//     interval, start == end, is allowed: the contest instances have thousands of them);
//   - edges (u, v), each with a |S_u| x |S_v| cost matrix (row-major);
//   - an optional usage limit: at every time step the summed usage of the chosen
//     strategies of all nodes live then must not exceed it.
// A solution picks one strategy per node; its cost is the sum of the chosen node
// costs and edge costs. Values are doubles: the planner's own problems are in
// seconds and bytes, and IOPDDL's int64 values convert exactly (those below 2^53, and
// the 1e18 the contest uses to mark incompatible strategy pairs).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace px::plan {

// The cost that marks a forbidden strategy pair: what the contest files write, and what the
// planner writes where a constraint rules a pair out.
inline constexpr double kForbiddenCost = 1e18;
// Costs from this size up are forbidden marks, not real ones (the planner's costs are seconds,
// the contest's stay below 2^53): the solvers leave them out where they can and never let their
// size steer a step size or a numerical tolerance, and a solution whose cost reaches it breaks a
// constraint. Well below the mark, so that a mark that went through sums and differences with
// real costs (the fast solver's incremental cost) still counts.
inline constexpr double kForbiddenCostThreshold = 1e15;
inline bool is_forbidden_cost(double cost) { return cost >= kForbiddenCostThreshold; }

struct ProblemNode {
  std::string name;   // optional; our own problems name the graph value
  int64_t start = 0;  // live over [start, end)
  int64_t end = 0;
  std::vector<double> costs;                // one per strategy
  std::vector<double> usages;               // one per strategy
  std::vector<std::string> strategy_names;  // optional, one per strategy ("[S(0), R]")
};

struct ProblemEdge {
  int64_t from = 0;
  int64_t to = 0;
  std::vector<double> costs;  // |S_from| x |S_to|, row-major: costs[s_from * |S_to| + s_to]
};

struct ShardingProblem {
  std::string name;
  std::vector<ProblemNode> nodes;
  std::vector<ProblemEdge> edges;
  std::optional<double> usage_limit;

  // ValueError naming the first inconsistency: a node without strategies, costs and usages of
  // different lengths, a negative interval (end < start), an edge to a missing node or a self edge, a
  // cost matrix of the wrong size, a NaN or infinite value, or strategy names of the wrong count.
  void validate() const;
  int64_t num_strategies() const;  // summed over nodes
};

// One strategy index per node.
using Choice = std::vector<int64_t>;

struct Evaluation {
  double cost = 0;
  bool feasible = true;   // within the usage limit at every time step
  double peak_usage = 0;  // the largest summed usage over time steps
  int64_t peak_step = 0;  // a time step where it is reached
  std::string violation;  // empty when feasible: "usage 60 > limit 50 at time step 110"
};

// ValueError for a choice of the wrong length or a strategy index out of range (naming the node).
Evaluation evaluate(const ShardingProblem& problem, const Choice& choice);

// IOPDDL JSON: {"problem": {"name", "nodes": {"intervals", "costs", "usages"}, "edges": {"nodes",
// "costs"}, "usage_limit"}}; our own extras ("names", "strategy_names") are optional. A ".gz" path is
// read and written gzip-compressed. ParseError naming the file and the JSON path of the problem
// ("problem.edges.costs[3]: expected 6 values, got 5") for malformed or inconsistent input.
ShardingProblem read_problem(const std::string& path);
ShardingProblem parse_problem(const std::string& json_text, const std::string& source = "<string>");
void write_problem(const ShardingProblem& problem, const std::string& path);
std::string problem_to_json(const ShardingProblem& problem);

// Solutions as JSON: {"name": ..., "strategies": [..]} (what `parallax solve --out` writes and
// `--evaluate` reads).
Choice read_choice(const std::string& path);
void write_choice(const ShardingProblem& problem, const Choice& choice, const std::string& path);

}  // namespace px::plan
