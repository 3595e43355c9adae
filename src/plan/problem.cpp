#include "parallax/plan/problem.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "parallax/core/error.h"
#include "plan/number_format.h"

namespace px::plan {
namespace {

std::string node_label(const ShardingProblem& problem, size_t i) {
  const std::string& name = problem.nodes[i].name;
  return "node " + std::to_string(i) + (name.empty() ? "" : " (" + name + ")");
}

void check_finite(const std::vector<double>& values, const std::string& what) {
  for (size_t k = 0; k < values.size(); ++k) {
    if (!std::isfinite(values[k])) {
      throw ValueError(what + "[" + std::to_string(k) + "] is " + format_number(values[k]) +
                       ", expected a finite number");
    }
  }
}

}  // namespace

void ShardingProblem::validate() const {
  const std::string where = "ShardingProblem" + (name.empty() ? std::string() : " '" + name + "'") + ": ";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ProblemNode& node = nodes[i];
    const std::string label = where + node_label(*this, i);
    if (node.costs.empty()) throw ValueError(label + " has no strategies");
    if (node.usages.size() != node.costs.size()) {
      throw ValueError(label + " has " + std::to_string(node.costs.size()) + " costs but " +
                       std::to_string(node.usages.size()) + " usages");
    }
    if (node.end < node.start) {
      throw ValueError(label + " has the negative interval [" + std::to_string(node.start) + ", " +
                       std::to_string(node.end) + ")");
    }
    if (!node.strategy_names.empty() && node.strategy_names.size() != node.costs.size()) {
      throw ValueError(label + " has " + std::to_string(node.strategy_names.size()) + " strategy names for " +
                       std::to_string(node.costs.size()) + " strategies");
    }
    check_finite(node.costs, label + " costs");
    check_finite(node.usages, label + " usages");
  }
  const auto num_nodes = static_cast<int64_t>(nodes.size());
  for (size_t e = 0; e < edges.size(); ++e) {
    const ProblemEdge& edge = edges[e];
    const std::string label =
        where + "edge " + std::to_string(e) + " (" + std::to_string(edge.from) + " -> " + std::to_string(edge.to) + ")";
    for (int64_t end : {edge.from, edge.to}) {
      if (end < 0 || end >= num_nodes) {
        throw ValueError(label + " names node " + std::to_string(end) + ", but there are " + std::to_string(num_nodes) +
                         " nodes");
      }
    }
    if (edge.from == edge.to) throw ValueError(label + " is a self edge");
    const size_t expected = nodes[edge.from].costs.size() * nodes[edge.to].costs.size();
    if (edge.costs.size() != expected) {
      throw ValueError(label + " has " + std::to_string(edge.costs.size()) + " costs, expected " +
                       std::to_string(nodes[edge.from].costs.size()) + " x " +
                       std::to_string(nodes[edge.to].costs.size()) + " = " + std::to_string(expected));
    }
    check_finite(edge.costs, label + " costs");
  }
  if (usage_limit && !std::isfinite(*usage_limit)) {
    throw ValueError(where + "usage_limit is " + format_number(*usage_limit) + ", expected a finite number");
  }
}

int64_t ShardingProblem::num_strategies() const {
  int64_t total = 0;
  for (const ProblemNode& node : nodes) total += static_cast<int64_t>(node.costs.size());
  return total;
}

Evaluation evaluate(const ShardingProblem& problem, const Choice& choice) {
  if (choice.size() != problem.nodes.size()) {
    throw ValueError("evaluate: the choice has " + std::to_string(choice.size()) + " strategies for " +
                     std::to_string(problem.nodes.size()) + " nodes");
  }
  for (size_t i = 0; i < choice.size(); ++i) {
    const auto count = static_cast<int64_t>(problem.nodes[i].costs.size());
    if (choice[i] < 0 || choice[i] >= count) {
      throw ValueError("evaluate: " + node_label(problem, i) + " has strategy " + std::to_string(choice[i]) +
                       ", expected 0.." + std::to_string(count - 1));
    }
  }
  // Long double: the contest's int64 totals stay exact well past 2^53.
  long double cost = 0;
  std::vector<std::pair<int64_t, long double>> events;
  events.reserve(2 * problem.nodes.size());
  for (size_t i = 0; i < choice.size(); ++i) {
    const ProblemNode& node = problem.nodes[i];
    cost += node.costs[choice[i]];
    if (node.end > node.start) {
      events.emplace_back(node.start, node.usages[choice[i]]);
      events.emplace_back(node.end, -static_cast<long double>(node.usages[choice[i]]));
    }
  }
  for (const ProblemEdge& edge : problem.edges) {
    const size_t columns = problem.nodes[edge.to].costs.size();
    cost += edge.costs[choice[edge.from] * columns + choice[edge.to]];
  }

  Evaluation result;
  result.cost = static_cast<double>(cost);
  // Sweep over [start, end) events: the usage between two event times is constant, so it is
  // enough to look just after each group of events at the same time.
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  long double usage = 0;
  long double peak = 0;
  bool have_peak = false;
  for (size_t k = 0; k < events.size();) {
    const int64_t time = events[k].first;
    for (; k < events.size() && events[k].first == time; ++k) usage += events[k].second;
    if (k < events.size() && (!have_peak || usage > peak)) {
      peak = usage;
      result.peak_step = time;
      have_peak = true;
    }
  }
  result.peak_usage = static_cast<double>(peak);
  if (problem.usage_limit && have_peak && peak > static_cast<long double>(*problem.usage_limit)) {
    result.feasible = false;
    result.violation = "usage " + format_number(result.peak_usage) + " > limit " + format_number(*problem.usage_limit) +
                       " at time step " + std::to_string(result.peak_step);
  }
  return result;
}

}  // namespace px::plan
