#pragma once
// A solution of the model being improved by the fast solver (internal): the strategies, their
// exact cost, and the memory excess over time (ExcessTree), kept up to date move by move, with
// feasibility-keeping single-node descent.

#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "plan/excess_tree.h"
#include "plan/model.h"

namespace px::plan {

class SearchState {
 public:
  explicit SearchState(const Model& model);

  void assign(const std::vector<int32_t>& x);
  const std::vector<int32_t>& x() const { return x_; }
  double cost() const { return static_cast<double>(cost_); }
  bool feasible() const { return !model_.has_limit || tree_.max_all() <= 0; }
  // The largest excess of usage over capacity (<= 0 when feasible; -inf without a limit).
  double max_excess() const { return model_.has_limit ? tree_.max_all() : -1e300; }
  // How much more node k may use at every step of its interval (+inf when it is never live).
  double slack(int32_t node) const;
  const ExcessTree& excess() const { return tree_; }

  void set(int32_t node, int32_t strategy);

  // out[s] = the cost of strategy s of `node` with its own cost and the edges to its neighbours at
  // their current strategies (unary: per-strategy node costs to use instead of the model's).
  void local_costs(int32_t node, const double* unary, std::vector<double>& out) const;

  // The nodes live at a compressed step.
  void nodes_at(int32_t step, std::vector<int32_t>& out) const;
  // Single-node descent on the true cost, only through moves that keep every step within capacity
  // (call on a feasible state). Returns the cost decrease.
  double descend(Clock::time_point deadline, std::mt19937_64& rng);

 private:
  const Model& model_;
  std::vector<int32_t> x_;
  long double cost_ = 0;  // long: prohibitive (1e18) terms come and go without eating the rest
  ExcessTree tree_;
  // Interval stabbing: node k is listed at the O(log steps) canonical segments covering [lo, hi).
  std::vector<std::vector<int32_t>> segment_nodes_;
  mutable std::vector<double> scratch_;
};

}  // namespace px::plan
