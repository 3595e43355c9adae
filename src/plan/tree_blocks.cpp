#include "plan/tree_blocks.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace px::plan {
namespace {}  // namespace

TreeBlockSolver::TreeBlockSolver(const Model& model)
    : model_(model),
      position_(model.num_nodes(), -1),
      inside_count_(model.num_nodes(), 0),
      covered_(model.num_nodes(), 0) {}

void TreeBlockSolver::grow(int32_t root, BlockLimits limits) {
  order_.clear();
  parent_incidence_.clear();
  const auto admit = [&](int32_t node, int64_t incidence_to_parent) {
    position_[node] = static_cast<int32_t>(order_.size());
    order_.push_back(node);
    parent_incidence_.push_back(incidence_to_parent);
    for (int64_t i = model_.incidence_offset[node]; i < model_.incidence_offset[node + 1]; ++i) {
      const int32_t other = model_.incidence[i].other;
      if (inside_count_[other]++ == 0) touched_.push_back(other);
    }
  };
  admit(root, -1);
  for (size_t head = 0; head < order_.size(); ++head) {
    const int32_t node = order_[head];
    for (int64_t i = model_.incidence_offset[node]; i < model_.incidence_offset[node + 1]; ++i) {
      if (static_cast<int32_t>(order_.size()) >= limits.max_size) return;
      const int32_t other = model_.incidence[i].other;
      // Exactly one neighbour inside (this node): the induced subgraph stays a tree.
      if (position_[other] >= 0 || inside_count_[other] != 1) continue;
      if (model_.incidence_offset[other + 1] - model_.incidence_offset[other] > limits.max_degree) continue;
      admit(other, model_.incidence[i].reverse);
    }
  }
}

void TreeBlockSolver::release() {
  for (int32_t node : order_) position_[node] = -1;
  for (int32_t node : touched_) inside_count_[node] = 0;
  touched_.clear();
}

double TreeBlockSolver::solve_block(int32_t root, const std::vector<double>& unary, const double* usage_cap,
                                    BlockLimits limits, std::vector<int32_t>& x) {
  grow(root, limits);
  const auto count = static_cast<int32_t>(order_.size());
  value_offset_.assign(count + 1, 0);
  choice_offset_.assign(count + 1, 0);
  for (int32_t p = 0; p < count; ++p) {
    const int32_t node = order_[p];
    value_offset_[p + 1] = value_offset_[p] + model_.num_strategies(node);
    const int32_t parent = p == 0 ? -1 : model_.incidence[parent_incidence_[p]].other;
    choice_offset_[p + 1] = choice_offset_[p] + (parent < 0 ? 0 : model_.num_strategies(parent));
  }
  values_.resize(value_offset_[count]);
  best_child_.resize(choice_offset_[count]);

  // Own cost plus the edges to fixed nodes outside the block; also the block's current cost.
  long double old_cost = 0;
  for (int32_t p = 0; p < count; ++p) {
    const int32_t node = order_[p];
    const int32_t strategies = model_.num_strategies(node);
    const int64_t offset = model_.strategy_offset[node];
    double* h = values_.data() + value_offset_[p];
    const double* usage = model_.node_usages(node);
    for (int32_t s = 0; s < strategies; ++s) {
      const bool allowed = usage_cap == nullptr || usage[s] <= usage_cap[node];
      h[s] = allowed ? unary[offset + s] : kInfinity;
    }
    old_cost += unary[offset + x[node]];
    for (int64_t i = model_.incidence_offset[node]; i < model_.incidence_offset[node + 1]; ++i) {
      const ModelIncidence& inc = model_.incidence[i];
      const int32_t other_position = position_[inc.other];
      if (other_position >= 0) {
        // Tree edges are counted once, from the child's side.
        if (i == parent_incidence_[p]) old_cost += model_.edge_cost(inc, x[node], x[inc.other]);
        continue;
      }
      const ModelEdge& e = model_.edges[inc.edge];
      const double* matrix = model_.matrix(e);
      const int32_t theirs = x[inc.other];
      if (inc.is_u) {
        const int32_t columns = model_.num_strategies(e.v);
        for (int32_t s = 0; s < strategies; ++s) h[s] += matrix[int64_t{s} * columns + theirs];
      } else {
        const double* row = matrix + int64_t{theirs} * strategies;
        for (int32_t s = 0; s < strategies; ++s) h[s] += row[s];
      }
      old_cost += model_.edge_cost(inc, x[node], theirs);
    }
  }

  // Leaves to root: each child's best subtree cost for every strategy of its parent.
  for (int32_t p = count - 1; p > 0; --p) {
    const int32_t node = order_[p];
    const ModelIncidence& up = model_.incidence[parent_incidence_[p]];
    const int32_t parent = up.other;
    const int32_t parent_position = position_[parent];
    const int32_t mine = model_.num_strategies(node);
    const int32_t theirs = model_.num_strategies(parent);
    const double* h = values_.data() + value_offset_[p];
    double* parent_h = values_.data() + value_offset_[parent_position];
    int32_t* best = best_child_.data() + choice_offset_[p];
    const ModelEdge& e = model_.edges[up.edge];
    const double* matrix = model_.matrix(e);
    const int32_t current = x[node];
    for (int32_t t = 0; t < theirs; ++t) {
      // The edge's entries for parent strategy t, over this node's strategies.
      double best_value;
      int32_t best_s = current;
      if (up.is_u) {  // this node is the row side: entries matrix[s * theirs + t]
        best_value = h[current] + matrix[int64_t{current} * theirs + t];
        for (int32_t s = 0; s < mine; ++s) {
          const double value = h[s] + matrix[int64_t{s} * theirs + t];
          if (value < best_value) {
            best_value = value;
            best_s = s;
          }
        }
      } else {
        const double* row = matrix + int64_t{t} * mine;
        best_value = h[current] + row[current];
        for (int32_t s = 0; s < mine; ++s) {
          const double value = h[s] + row[s];
          if (value < best_value) {
            best_value = value;
            best_s = s;
          }
        }
      }
      best[t] = best_s;
      parent_h[t] += best_value;
    }
  }

  // Root to leaves.
  previous_.resize(count);
  for (int32_t p = 0; p < count; ++p) previous_[p] = x[order_[p]];
  const int32_t root_node = order_[0];
  const double* root_h = values_.data();
  int32_t root_best = x[root_node];
  for (int32_t s = 0; s < model_.num_strategies(root_node); ++s) {
    if (root_h[s] < root_h[root_best]) root_best = s;
  }
  const double new_cost = root_h[root_best];
  x[root_node] = root_best;
  for (int32_t p = 1; p < count; ++p) {
    const int32_t parent = model_.incidence[parent_incidence_[p]].other;
    x[order_[p]] = best_child_[choice_offset_[p] + x[parent]];
  }
  release();
  return static_cast<double>(new_cost - old_cost);
}

int64_t TreeBlockSolver::sweep(const std::vector<double>& unary, const double* usage_cap, BlockLimits limits,
                               std::vector<int32_t>& x, std::mt19937_64& rng, Clock::time_point deadline) {
  const int32_t n = model_.num_nodes();
  std::vector<int32_t> roots(n);
  std::iota(roots.begin(), roots.end(), 0);
  std::shuffle(roots.begin(), roots.end(), rng);
  std::fill(covered_.begin(), covered_.end(), 0);
  int64_t changed = 0;
  for (int32_t i = 0; i < n; ++i) {
    if ((i & 63) == 0 && Clock::now() >= deadline) break;
    const int32_t root = roots[i];
    if (covered_[root]) continue;
    solve_block(root, unary, usage_cap, limits, x);
    for (size_t p = 0; p < order_.size(); ++p) {
      covered_[order_[p]] = 1;
      changed += x[order_[p]] != previous_[p] ? 1 : 0;
    }
  }
  return changed;
}

}  // namespace px::plan
