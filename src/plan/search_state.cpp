#include "plan/search_state.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace px::plan {
namespace {

void insert_segments(std::vector<std::vector<int32_t>>& segments, int32_t node, int32_t lo, int32_t hi, int32_t a,
                     int32_t b, int32_t item) {
  if (a <= lo && hi <= b) {
    segments[node].push_back(item);
    return;
  }
  const int32_t mid = (lo + hi) / 2;
  if (a < mid) insert_segments(segments, 2 * node, lo, mid, a, b, item);
  if (b > mid) insert_segments(segments, 2 * node + 1, mid, hi, a, b, item);
}

}  // namespace

SearchState::SearchState(const Model& model) : model_(model) {
  const int32_t steps = model.num_steps();
  if (model.has_limit && steps > 0) {
    segment_nodes_.resize(4 * size_t(steps));
    for (int32_t k = 0; k < model.num_nodes(); ++k) {
      if (model.lo[k] < model.hi[k]) insert_segments(segment_nodes_, 1, 0, steps, model.lo[k], model.hi[k], k);
    }
  }
}

void SearchState::assign(const std::vector<int32_t>& x) {
  x_ = x;
  cost_ = model_cost(model_, x_);
  if (!model_.has_limit) return;
  std::vector<double> delta(model_.num_steps() + 1, 0.0);
  for (int32_t k = 0; k < model_.num_nodes(); ++k) {
    if (model_.lo[k] == model_.hi[k]) continue;
    const double u = model_.node_usages(k)[x_[k]];
    delta[model_.lo[k]] += u;
    delta[model_.hi[k]] -= u;
  }
  std::vector<double> excess(model_.num_steps());
  double usage = 0;
  for (int32_t j = 0; j < model_.num_steps(); ++j) {
    usage += delta[j];
    excess[j] = usage - model_.capacity[j];
  }
  tree_ = ExcessTree(excess);
}

double SearchState::slack(int32_t node) const {
  if (!model_.has_limit || model_.lo[node] == model_.hi[node]) return kInfinity;
  return -tree_.max(model_.lo[node], model_.hi[node]);
}

void SearchState::local_costs(int32_t node, const double* unary, std::vector<double>& out) const {
  const int32_t strategies = model_.num_strategies(node);
  const double* own = unary != nullptr ? unary + model_.strategy_offset[node] : model_.node_costs(node);
  out.assign(own, own + strategies);
  for (int64_t i = model_.incidence_offset[node]; i < model_.incidence_offset[node + 1]; ++i) {
    const ModelIncidence& inc = model_.incidence[i];
    const ModelEdge& e = model_.edges[inc.edge];
    const double* matrix = model_.matrix(e);
    const int32_t theirs = x_[inc.other];
    if (inc.is_u) {
      const int32_t columns = model_.num_strategies(e.v);
      for (int32_t s = 0; s < strategies; ++s) out[s] += matrix[int64_t{s} * columns + theirs];
    } else {
      const double* row = matrix + int64_t{theirs} * strategies;
      for (int32_t s = 0; s < strategies; ++s) out[s] += row[s];
    }
  }
}

void SearchState::set(int32_t node, int32_t strategy) {
  const int32_t old = x_[node];
  if (old == strategy) return;
  long double delta = static_cast<long double>(model_.node_costs(node)[strategy]) - model_.node_costs(node)[old];
  for (int64_t i = model_.incidence_offset[node]; i < model_.incidence_offset[node + 1]; ++i) {
    const ModelIncidence& inc = model_.incidence[i];
    delta += static_cast<long double>(model_.edge_cost(inc, strategy, x_[inc.other])) -
             model_.edge_cost(inc, old, x_[inc.other]);
  }
  cost_ += delta;
  x_[node] = strategy;
  if (model_.has_limit) {
    const double* usage = model_.node_usages(node);
    tree_.add(model_.lo[node], model_.hi[node], usage[strategy] - usage[old]);
  }
}

void SearchState::nodes_at(int32_t step, std::vector<int32_t>& out) const {
  out.clear();
  int32_t node = 1;
  int32_t lo = 0;
  int32_t hi = model_.num_steps();
  for (;;) {
    out.insert(out.end(), segment_nodes_[node].begin(), segment_nodes_[node].end());
    if (hi - lo == 1) break;
    const int32_t mid = (lo + hi) / 2;
    if (step < mid) {
      node = 2 * node;
      hi = mid;
    } else {
      node = 2 * node + 1;
      lo = mid;
    }
  }
}

double SearchState::descend(Clock::time_point deadline, std::mt19937_64& rng) {
  std::vector<int32_t> order(model_.num_nodes());
  std::iota(order.begin(), order.end(), 0);
  std::vector<double>& costs = scratch_;
  const long double start_cost = cost_;
  for (bool improved = true; improved;) {
    improved = false;
    std::shuffle(order.begin(), order.end(), rng);
    for (int32_t node : order) {
      if ((node & 255) == 0 && Clock::now() > deadline) return static_cast<double>(start_cost - cost_);
      local_costs(node, nullptr, costs);
      const int32_t current = x_[node];
      const double room = slack(node);
      const double* usage = model_.node_usages(node);
      int32_t best = current;
      for (int32_t s = 0; s < model_.num_strategies(node); ++s) {
        if (costs[s] < costs[best] && usage[s] - usage[current] <= room) best = s;
      }
      if (best != current) {
        set(node, best);
        improved = true;
      }
    }
  }
  return static_cast<double>(start_cost - cost_);
}

}  // namespace px::plan
