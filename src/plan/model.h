#pragma once
// The solvers' compact form of a ShardingProblem (internal).
//
// Everything that cannot change the decision is folded away first, so that both solvers work on
// less: nodes with one strategy become constants (their cost, their edges' costs as unary costs of
// the other end, their usage as a fixed usage profile); parallel edges merge into one matrix; and
// time is compressed to the steps where some interval starts (usage only rises there, so checking
// those steps checks them all). Arrays are flat (offsets into one buffer) for the solvers' inner
// loops.

#include <chrono>
#include <cstdint>
#include <limits>
#include <vector>

#include "parallax/plan/problem.h"

namespace px::plan {

// The solvers' deadlines are on this clock.
using Clock = std::chrono::steady_clock;

// A cost or bound the solvers have not found yet (unlike kForbiddenCost, which is a finite price).
inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

struct ModelEdge {
  int32_t u = 0;  // model node indices, u < v
  int32_t v = 0;
  int64_t offset = 0;  // into Model::edge_costs: |S_u| x |S_v|, row-major (s_u * |S_v| + s_v)
};

struct ModelIncidence {
  int32_t edge = 0;
  int32_t other = 0;    // the node at the other end
  bool is_u = false;    // this node is the row (u) side of the edge's matrix
  int64_t reverse = 0;  // the same edge's incidence at the other node
};

struct Model {
  // Model node k is original node `original[k]` (only nodes with two or more strategies).
  std::vector<int32_t> original;
  std::vector<int32_t> model_of;         // original node -> model node, or -1 for a fixed one
  std::vector<int64_t> strategy_offset;  // size num_nodes()+1: node k's strategies are [off[k], off[k+1])
  std::vector<double> cost;              // per strategy: node cost plus costs of edges to fixed nodes
  std::vector<double> usage;             // per strategy
  std::vector<int32_t> lo;               // per node: live over compressed steps [lo, hi) (lo == hi: never live)
  std::vector<int32_t> hi;
  std::vector<ModelEdge> edges;
  std::vector<double> edge_costs;
  std::vector<int64_t> incidence_offset;  // size num_nodes()+1
  std::vector<ModelIncidence> incidence;
  // Per compressed step: the usage limit minus the usage of fixed nodes live then (+inf without a limit).
  std::vector<double> capacity;
  std::vector<int64_t> step_time;  // compressed step -> original time step
  double constant_cost = 0;        // fixed nodes and edges between them
  bool has_limit = false;

  int32_t num_nodes() const { return static_cast<int32_t>(original.size()); }
  int32_t num_steps() const { return static_cast<int32_t>(capacity.size()); }
  int32_t num_strategies(int32_t k) const { return static_cast<int32_t>(strategy_offset[k + 1] - strategy_offset[k]); }
  const double* node_costs(int32_t k) const { return cost.data() + strategy_offset[k]; }
  const double* node_usages(int32_t k) const { return usage.data() + strategy_offset[k]; }
  const double* matrix(const ModelEdge& edge) const { return edge_costs.data() + edge.offset; }
  // The cost of edge `inc.edge` with this node at strategy `mine` and the other at `theirs`.
  double edge_cost(const ModelIncidence& inc, int32_t mine, int32_t theirs) const {
    const ModelEdge& e = edges[inc.edge];
    return inc.is_u ? edge_costs[e.offset + int64_t{mine} * num_strategies(e.v) + theirs]
                    : edge_costs[e.offset + int64_t{theirs} * num_strategies(e.v) + mine];
  }
};

Model build_model(const ShardingProblem& problem);

// Model strategies (one per model node) -> a choice for the whole problem (fixed nodes get 0).
Choice expand_choice(const Model& model, const std::vector<int32_t>& strategies);
std::vector<int32_t> restrict_choice(const Model& model, const Choice& choice);

// The model's objective (including the constant) for model strategies.
double model_cost(const Model& model, const std::vector<int32_t>& strategies);

}  // namespace px::plan
