#include "plan/partition_crossover.h"

#include <algorithm>

namespace px::plan {

std::vector<DifferenceComponent> difference_components(const Model& model, const std::vector<int32_t>& base,
                                                       const std::vector<int32_t>& other) {
  const int32_t n = model.num_nodes();
  std::vector<int32_t> component(n, -1);
  std::vector<DifferenceComponent> components;
  std::vector<int32_t> stack;
  for (int32_t start = 0; start < n; ++start) {
    if (base[start] == other[start] || component[start] >= 0) continue;
    const int32_t id = static_cast<int32_t>(components.size());
    DifferenceComponent& part = components.emplace_back();
    component[start] = id;
    stack.assign(1, start);
    long double change = 0;  // cost(with other's part) - cost(base)
    while (!stack.empty()) {
      const int32_t node = stack.back();
      stack.pop_back();
      part.nodes.push_back(node);
      const double* own = model.node_costs(node);
      change += static_cast<long double>(own[other[node]]) - own[base[node]];
      for (int64_t i = model.incidence_offset[node]; i < model.incidence_offset[node + 1]; ++i) {
        const ModelIncidence& inc = model.incidence[i];
        const int32_t next = inc.other;
        if (base[next] == other[next]) {
          change += static_cast<long double>(model.edge_cost(inc, other[node], base[next])) -
                    model.edge_cost(inc, base[node], base[next]);
          continue;
        }
        // An edge inside the component: counted once, from its u side.
        if (inc.is_u) {
          change += static_cast<long double>(model.edge_cost(inc, other[node], other[next])) -
                    model.edge_cost(inc, base[node], base[next]);
        }
        if (component[next] < 0) {
          component[next] = id;
          stack.push_back(next);
        }
      }
    }
    std::sort(part.nodes.begin(), part.nodes.end());
    part.gain = static_cast<double>(-change);
  }
  std::sort(components.begin(), components.end(), [](const DifferenceComponent& a, const DifferenceComponent& b) {
    if (a.gain != b.gain) return a.gain > b.gain;
    return a.nodes.front() < b.nodes.front();
  });
  return components;
}

int64_t cross_into(const Model& model, SearchState& state, const std::vector<int32_t>& other, double least_gain) {
  const std::vector<int32_t> base = state.x();
  int64_t kept = 0;
  for (const DifferenceComponent& part : difference_components(model, base, other)) {
    if (part.gain <= least_gain) break;
    for (int32_t node : part.nodes) state.set(node, other[node]);
    if (state.feasible()) {
      ++kept;
      continue;
    }
    for (int32_t node : part.nodes) state.set(node, base[node]);
  }
  return kept;
}

}  // namespace px::plan
