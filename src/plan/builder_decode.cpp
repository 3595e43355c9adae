// From a choice back to placements, and cutting strategies (see plan/builder.h).

#include <algorithm>

#include "parallax/core/error.h"
#include "parallax/plan/builder.h"

namespace px::plan {

namespace {

void check_choice(const PlanProblem& plan, const Choice& choice) {
  if (choice.size() != plan.nodes.size()) {
    throw ValueError("decode: the choice has " + std::to_string(choice.size()) + " strategies for " +
                     std::to_string(plan.nodes.size()) + " problem nodes");
  }
  for (size_t p = 0; p < choice.size(); ++p) {
    auto count = static_cast<int64_t>(plan.nodes[p].strategies.size());
    if (choice[p] < 0 || choice[p] >= count) {
      throw ValueError("decode: strategy " + std::to_string(choice[p]) + " of problem node " + std::to_string(p) +
                       " (" + plan.problem.nodes[p].name + ") is out of range [0, " + std::to_string(count) + ")");
    }
  }
}

template <class T>
std::vector<T> pick(const std::vector<T>& values, const std::vector<int64_t>& indices) {
  std::vector<T> result;
  if (values.empty()) return result;  // optional lists (strategy names) stay absent
  result.reserve(indices.size());
  for (int64_t index : indices) result.push_back(values[static_cast<size_t>(index)]);
  return result;
}

}  // namespace

DecodedPlan decode(const PlanProblem& plan, const Choice& choice) {
  check_choice(plan, choice);
  DecodedPlan decoded;
  decoded.inputs.reserve(plan.input_node.size());
  for (int64_t node : plan.input_node) {
    const PlanNode& chosen = plan.nodes[static_cast<size_t>(node)];
    decoded.inputs.push_back(chosen.strategies[static_cast<size_t>(choice[static_cast<size_t>(node)])].outputs.front());
  }
  decoded.nodes.reserve(plan.op_node.size());
  bool any_recompute = false;
  for (int64_t node : plan.op_node) {
    const PlanNode& chosen = plan.nodes[static_cast<size_t>(node)];
    const auto s = static_cast<size_t>(choice[static_cast<size_t>(node)]);
    decoded.nodes.push_back(chosen.strategies[s]);
    decoded.recompute.push_back(!chosen.recompute.empty() && chosen.recompute[s]);
    any_recompute = any_recompute || decoded.recompute.back();
  }
  if (!any_recompute) decoded.recompute.clear();
  return decoded;
}

std::optional<int64_t> find_input_strategy(const PlanProblem& plan, int64_t input,
                                           std::span<const Placement> placements) {
  if (input < 0 || input >= static_cast<int64_t>(plan.input_node.size())) {
    throw ValueError("find_input_strategy: input " + std::to_string(input) + " out of range [0, " +
                     std::to_string(plan.input_node.size()) + ")");
  }
  const PlanNode& node = plan.nodes[static_cast<size_t>(plan.input_node[static_cast<size_t>(input)])];
  for (size_t s = 0; s < node.strategies.size(); ++s) {
    const std::vector<Placement>& candidate = node.strategies[s].outputs.front();
    if (std::equal(candidate.begin(), candidate.end(), placements.begin(), placements.end())) {
      return static_cast<int64_t>(s);
    }
  }
  return std::nullopt;
}

PlanProblem restrict_strategies(const PlanProblem& plan, const std::vector<std::vector<bool>>& keep,
                                std::vector<std::vector<int64_t>>* kept) {
  if (keep.size() != plan.nodes.size()) {
    throw ValueError("restrict_strategies: " + std::to_string(keep.size()) + " flag lists for " +
                     std::to_string(plan.nodes.size()) + " problem nodes");
  }
  std::vector<std::vector<int64_t>> indices(plan.nodes.size());
  for (size_t p = 0; p < plan.nodes.size(); ++p) {
    if (keep[p].size() != plan.nodes[p].strategies.size()) {
      throw ValueError("restrict_strategies: problem node " + std::to_string(p) + " (" + plan.problem.nodes[p].name +
                       ") has " + std::to_string(plan.nodes[p].strategies.size()) + " strategies, got " +
                       std::to_string(keep[p].size()) + " flags");
    }
    for (size_t s = 0; s < keep[p].size(); ++s) {
      if (keep[p][s]) indices[p].push_back(static_cast<int64_t>(s));
    }
    if (indices[p].empty()) {
      throw ValueError("restrict_strategies: problem node " + std::to_string(p) + " (" + plan.problem.nodes[p].name +
                       ") keeps no strategy");
    }
  }
  PlanProblem result;
  result.input_node = plan.input_node;
  result.op_node = plan.op_node;
  result.outputs = plan.outputs;
  result.layer_groups = plan.layer_groups;
  result.mesh = plan.mesh;
  result.topology = plan.topology;
  result.options = plan.options;
  result.build_seconds = plan.build_seconds;
  result.problem.name = plan.problem.name;
  result.problem.usage_limit = plan.problem.usage_limit;
  for (size_t p = 0; p < plan.nodes.size(); ++p) {
    const PlanNode& node = plan.nodes[p];
    PlanNode cut = node;
    cut.strategies = pick(node.strategies, indices[p]);
    cut.compute_seconds = pick(node.compute_seconds, indices[p]);
    cut.local_bytes = pick(node.local_bytes, indices[p]);
    cut.recompute = pick(node.recompute, indices[p]);
    result.nodes.push_back(std::move(cut));
    const ProblemNode& source = plan.problem.nodes[p];
    result.problem.nodes.push_back(ProblemNode{source.name, source.start, source.end, pick(source.costs, indices[p]),
                                               pick(source.usages, indices[p]),
                                               pick(source.strategy_names, indices[p])});
  }
  for (const ProblemEdge& edge : plan.problem.edges) {
    const auto& rows = indices[static_cast<size_t>(edge.from)];
    const auto& cols = indices[static_cast<size_t>(edge.to)];
    const size_t width = plan.nodes[static_cast<size_t>(edge.to)].strategies.size();
    ProblemEdge cut{edge.from, edge.to, {}};
    cut.costs.reserve(rows.size() * cols.size());
    for (int64_t r : rows) {
      for (int64_t c : cols) cut.costs.push_back(edge.costs[static_cast<size_t>(r) * width + static_cast<size_t>(c)]);
    }
    result.problem.edges.push_back(std::move(cut));
  }
  if (kept != nullptr) *kept = std::move(indices);
  return result;
}

}  // namespace px::plan
