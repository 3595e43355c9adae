#include "plan/model.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "parallax/core/error.h"

namespace px::plan {

Model build_model(const ShardingProblem& problem) {
  Model model;
  const auto num_original = static_cast<int32_t>(problem.nodes.size());
  model.model_of.assign(num_original, -1);
  model.strategy_offset.push_back(0);
  for (int32_t i = 0; i < num_original; ++i) {
    const ProblemNode& node = problem.nodes[i];
    if (node.costs.size() < 2) {
      model.constant_cost += node.costs[0];
      continue;
    }
    model.model_of[i] = static_cast<int32_t>(model.original.size());
    model.original.push_back(i);
    model.cost.insert(model.cost.end(), node.costs.begin(), node.costs.end());
    model.usage.insert(model.usage.end(), node.usages.begin(), node.usages.end());
    model.strategy_offset.push_back(static_cast<int64_t>(model.cost.size()));
  }

  // Time: the steps where some interval starts.
  std::vector<int64_t>& steps = model.step_time;
  for (const ProblemNode& node : problem.nodes) {
    if (node.end > node.start) steps.push_back(node.start);
  }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  const auto step_of = [&](int64_t time) {
    return static_cast<int32_t>(std::lower_bound(steps.begin(), steps.end(), time) - steps.begin());
  };
  const auto num_steps = static_cast<int32_t>(steps.size());
  model.has_limit = problem.usage_limit.has_value();
  const double limit = model.has_limit ? *problem.usage_limit : std::numeric_limits<double>::infinity();
  std::vector<long double> fixed_delta(num_steps + 1, 0);
  for (int32_t i = 0; i < num_original; ++i) {
    const ProblemNode& node = problem.nodes[i];
    const int32_t lo = node.end > node.start ? step_of(node.start) : 0;
    const int32_t hi = node.end > node.start ? step_of(node.end) : 0;
    if (model.model_of[i] >= 0) {
      model.lo.push_back(lo);
      model.hi.push_back(hi);
    } else if (hi > lo) {
      fixed_delta[lo] += node.usages[0];
      fixed_delta[hi] -= node.usages[0];
    }
  }
  model.capacity.resize(num_steps);
  long double fixed = 0;
  for (int32_t k = 0; k < num_steps; ++k) {
    fixed += fixed_delta[k];
    model.capacity[k] = static_cast<double>(static_cast<long double>(limit) - fixed);
  }

  // Edges: fold those touching fixed nodes, merge parallel ones.
  std::unordered_map<uint64_t, int32_t> edge_index;
  for (const ProblemEdge& edge : problem.edges) {
    const int32_t a = model.model_of[edge.from];
    const int32_t b = model.model_of[edge.to];
    const auto columns = static_cast<int64_t>(problem.nodes[edge.to].costs.size());
    if (a < 0 && b < 0) {
      model.constant_cost += edge.costs[0];
    } else if (b < 0) {
      double* unary = model.cost.data() + model.strategy_offset[a];
      for (int32_t s = 0; s < model.num_strategies(a); ++s) unary[s] += edge.costs[s * columns];
    } else if (a < 0) {
      double* unary = model.cost.data() + model.strategy_offset[b];
      for (int32_t s = 0; s < model.num_strategies(b); ++s) unary[s] += edge.costs[s];
    } else {
      const int32_t u = std::min(a, b);
      const int32_t v = std::max(a, b);
      const uint64_t key = (static_cast<uint64_t>(u) << 32) | static_cast<uint32_t>(v);
      auto [it, inserted] = edge_index.try_emplace(key, static_cast<int32_t>(model.edges.size()));
      if (inserted) {
        model.edges.push_back({u, v, static_cast<int64_t>(model.edge_costs.size())});
        model.edge_costs.resize(model.edge_costs.size() + size_t(model.num_strategies(u)) * model.num_strategies(v));
      }
      double* matrix = model.edge_costs.data() + model.edges[it->second].offset;
      const int32_t su = model.num_strategies(u);
      const int32_t sv = model.num_strategies(v);
      for (int32_t x = 0; x < su; ++x) {
        for (int32_t y = 0; y < sv; ++y) {
          // The problem's matrix is (from, to); the model's is (u, v) with u < v.
          matrix[int64_t{x} * sv + y] +=
              a == u ? edge.costs[int64_t{x} * columns + y] : edge.costs[int64_t{y} * columns + x];
        }
      }
    }
  }

  const int32_t n = model.num_nodes();
  model.incidence_offset.assign(n + 1, 0);
  for (const ModelEdge& e : model.edges) {
    ++model.incidence_offset[e.u + 1];
    ++model.incidence_offset[e.v + 1];
  }
  for (int32_t k = 0; k < n; ++k) model.incidence_offset[k + 1] += model.incidence_offset[k];
  model.incidence.resize(model.incidence_offset[n]);
  std::vector<int64_t> fill(model.incidence_offset.begin(), model.incidence_offset.end() - 1);
  for (int32_t e = 0; e < static_cast<int32_t>(model.edges.size()); ++e) {
    const ModelEdge& edge = model.edges[e];
    const int64_t at_u = fill[edge.u]++;
    const int64_t at_v = fill[edge.v]++;
    model.incidence[at_u] = {e, edge.v, true, at_v};
    model.incidence[at_v] = {e, edge.u, false, at_u};
  }
  return model;
}

Choice expand_choice(const Model& model, const std::vector<int32_t>& strategies) {
  PX_ASSERT(static_cast<int32_t>(strategies.size()) == model.num_nodes());
  Choice choice(model.model_of.size(), 0);
  for (int32_t k = 0; k < model.num_nodes(); ++k) choice[model.original[k]] = strategies[k];
  return choice;
}

std::vector<int32_t> restrict_choice(const Model& model, const Choice& choice) {
  std::vector<int32_t> strategies(model.num_nodes());
  for (int32_t k = 0; k < model.num_nodes(); ++k) strategies[k] = static_cast<int32_t>(choice[model.original[k]]);
  return strategies;
}

double model_cost(const Model& model, const std::vector<int32_t>& strategies) {
  long double total = model.constant_cost;
  for (int32_t k = 0; k < model.num_nodes(); ++k) total += model.node_costs(k)[strategies[k]];
  for (const ModelEdge& e : model.edges) {
    total += model.matrix(e)[int64_t{strategies[e.u]} * model.num_strategies(e.v) + strategies[e.v]];
  }
  return static_cast<double>(total);
}

}  // namespace px::plan
