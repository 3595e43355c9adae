// apply_constraints: cutting a PlanProblem's strategies to a constraint set (see plan/constraints.h).

#include "parallax/plan/constraints.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <variant>

#include "parallax/core/error.h"
#include "plan/plan_text.h"

namespace px::plan {

namespace {

std::string input_name(const JointProgram& program, int64_t input) {
  return program.inputs[static_cast<size_t>(input)].str();
}

// Strategy flags and, per problem node, what has cut them so far (for messages).
class Cutter {
 public:
  explicit Cutter(const PlanProblem& plan) : plan_(plan) {
    for (const PlanNode& node : plan.nodes) keep_.emplace_back(node.strategies.size(), true);
    reasons_.resize(plan.nodes.size());
  }

  template <class Predicate>
  void cut(int64_t p, const std::string& constraint, const std::string& subject, Predicate keeps) {
    auto& flags = keep_[static_cast<size_t>(p)];
    std::vector<bool> next(flags.size());
    bool any = false;
    for (size_t s = 0; s < flags.size(); ++s) {
      next[s] = flags[s] && keeps(plan_.nodes[static_cast<size_t>(p)].strategies[s]);
      any = any || next[s];
    }
    if (!any) {
      std::string message = constraint + ": " + subject + " has no such strategy";
      const auto& earlier = reasons_[static_cast<size_t>(p)];
      if (!earlier.empty()) {
        message += " once cut by ";
        for (size_t k = 0; k < earlier.size(); ++k) message += (k > 0 ? "; " : "") + earlier[k];
      }
      message += describe_choices(p);
      if (plan_.nodes[static_cast<size_t>(p)].members.size() > 1) {
        message += " (problem node '" + plan_.problem.nodes[static_cast<size_t>(p)].name +
                   "' decides for every repeated layer: build with cluster_layers = false to constrain "
                   "one layer alone)";
      }
      throw InfeasiblePlan(message);
    }
    flags = std::move(next);
    reasons_[static_cast<size_t>(p)].push_back(constraint);
  }

  std::vector<std::vector<bool>>& keep() { return keep_; }
  const std::vector<bool>& keep(int64_t p) const { return keep_[static_cast<size_t>(p)]; }

 private:
  // "; its strategies: [R], [S(0)]" (the first few).
  std::string describe_choices(int64_t p) const {
    const PlanNode& node = plan_.nodes[static_cast<size_t>(p)];
    const auto& names = plan_.problem.nodes[static_cast<size_t>(p)].strategy_names;
    std::string text = "; its strategies: ";
    const size_t shown = std::min<size_t>(node.strategies.size(), 8);
    for (size_t s = 0; s < shown; ++s) {
      text += (s > 0 ? ", " : "") +
              (s < names.size() ? names[s]
                                : (node.kind == PlanNode::Kind::Input ? placements_str(node.strategies[s].outputs[0])
                                                                      : nd_strategy_str(node.strategies[s])));
    }
    if (shown < node.strategies.size()) text += ", ... (" + std::to_string(node.strategies.size()) + " in all)";
    return text;
  }

  const PlanProblem& plan_;
  std::vector<std::vector<bool>> keep_;
  std::vector<std::vector<std::string>> reasons_;
};

void check_pattern(const PlacementPattern& pattern, const dist::DeviceMesh& mesh, const std::string& what) {
  if (static_cast<int64_t>(pattern.size()) != mesh.ndim()) {
    throw ValueError("apply_constraints: " + what + " gives " + std::to_string(pattern.size()) +
                     " placements for the " + std::to_string(mesh.ndim()) + "-D mesh " + mesh.str());
  }
}

void check_index(int64_t index, size_t count, const std::string& what) {
  if (index < 0 || index >= static_cast<int64_t>(count)) {
    throw ValueError("apply_constraints: " + what + " " + std::to_string(index) + " out of range [0, " +
                     std::to_string(count) + ")");
  }
}

void apply_placements(Cutter& cutter, const JointProgram& program, const PlanProblem& plan,
                      const PlanConstraints& constraints) {
  const ir::Graph& graph = program.graph;
  for (const InputConstraint& constraint : constraints.inputs) {
    check_index(constraint.input, plan.input_node.size(), "input constraint: graph input");
    const std::string name = input_name(program, constraint.input);
    check_pattern(constraint.placements, plan.mesh, "the input constraint on " + name);
    const PlacementPattern& pattern = constraint.placements;
    cutter.cut(
        plan.input_node[static_cast<size_t>(constraint.input)], "input " + name + " = " + pattern_str(pattern),
        "graph input " + name + " (" + graph.meta(graph.inputs()[static_cast<size_t>(constraint.input)]).str() + ")",
        [&](const NdStrategy& strategy) { return matches(pattern, strategy.outputs[0]); });
  }
  for (const OutputConstraint& constraint : constraints.outputs) {
    check_index(constraint.output, plan.outputs.size(), "output constraint: graph output");
    std::string name = "graph output " + std::to_string(constraint.output);
    for (size_t d = 0; d < program.outputs.size(); ++d) {
      if (program.graph_output[d] == constraint.output) {
        name = program.outputs[d].str();
        break;
      }
    }
    check_pattern(constraint.placements, plan.mesh, "the output constraint on " + name);
    const ValueSource& source = plan.outputs[static_cast<size_t>(constraint.output)];
    const PlacementPattern& pattern = constraint.placements;
    cutter.cut(source.node, "output " + name + " = " + pattern_str(pattern),
               "its producer '" + plan.problem.nodes[static_cast<size_t>(source.node)].name + "'",
               [&](const NdStrategy& strategy) {
                 return matches(pattern, strategy.outputs[static_cast<size_t>(source.output)]);
               });
  }
  for (const NodeConstraint& constraint : constraints.nodes) {
    check_index(constraint.node, plan.op_node.size(), "node constraint: graph node");
    const ir::Node& node = graph.nodes()[static_cast<size_t>(constraint.node)];
    const std::string name =
        "graph node " + std::to_string(constraint.node) + " (" + detail::graph_node_name(graph, constraint.node) + ")";
    if (constraint.inputs.size() > node.inputs.size() || constraint.outputs.size() > node.outputs.size()) {
      throw ValueError("apply_constraints: the node constraint on " + name + " gives patterns for " +
                       std::to_string(constraint.inputs.size()) + " inputs and " +
                       std::to_string(constraint.outputs.size()) + " outputs; the node has " +
                       std::to_string(node.inputs.size()) + " and " + std::to_string(node.outputs.size()));
    }
    std::string text;
    auto describe = [&](const std::vector<std::optional<PlacementPattern>>& patterns, const char* side) {
      for (size_t k = 0; k < patterns.size(); ++k) {
        if (!patterns[k]) continue;
        check_pattern(*patterns[k], plan.mesh, "the node constraint on " + name);
        text += (text.empty() ? "" : ", ") + std::string(side) + " " + std::to_string(k) + " = " +
                pattern_str(*patterns[k]);
      }
    };
    describe(constraint.inputs, "input");
    describe(constraint.outputs, "output");
    auto fits = [](const std::vector<std::optional<PlacementPattern>>& patterns,
                   const std::vector<std::vector<Placement>>& lists) {
      for (size_t k = 0; k < patterns.size(); ++k) {
        if (patterns[k] && !matches(*patterns[k], lists[k])) return false;
      }
      return true;
    };
    cutter.cut(plan.op_node[static_cast<size_t>(constraint.node)], "node " + name + ": " + text, name,
               [&](const NdStrategy& strategy) {
                 return fits(constraint.inputs, strategy.inputs) && fits(constraint.outputs, strategy.outputs);
               });
  }
}

// Per-parameter filtering for ParameterMemory (the reasoning is in plan/constraints.h).
// A parameter's candidate shares of its full size per device, from its kept strategies.
struct ParameterShares {
  int64_t node = 0;
  double bytes = 0;          // all members, full size
  std::vector<double> kept;  // distinct shares of the kept strategies, ascending
  double min() const { return kept.empty() ? std::numeric_limits<double>::infinity() : kept.front(); }
  double max() const { return kept.empty() ? 0.0 : kept.back(); }
  // The largest kept share at most t, else the smallest (the parameter cannot go that low).
  double at_most(double t, double tolerance) const {
    auto it = std::upper_bound(kept.begin(), kept.end(), t * (1 + tolerance));
    return it == kept.begin() ? min() : *std::prev(it);
  }
  // The smallest kept share at least t, else the largest (the parameter cannot go that high).
  double at_least(double t, double tolerance) const {
    auto it = std::lower_bound(kept.begin(), kept.end(), t * (1 - tolerance));
    return it == kept.end() ? max() : *it;
  }
};

// Which bound a parameter misses: it has no share below the high bound, or none above the low one.
enum class Miss : uint8_t { NoneBelow, NoneAbove };

void apply_parameter_memory(Cutter& cutter, const JointProgram& program, const PlanProblem& plan,
                            const ParameterMemory& bounds, std::vector<std::string>& notes) {
  if (!(bounds.low >= 0) || !(bounds.high > 0) || bounds.low > bounds.high || !std::isfinite(bounds.high)) {
    throw ValueError("apply_constraints: parameter memory bounds must satisfy 0 <= low <= high, high > 0; got low " +
                     detail::format_significant(bounds.low) + ", high " + detail::format_significant(bounds.high));
  }
  std::vector<ParameterShares> params;
  std::vector<double> levels;  // every kept share of every parameter, ascending and distinct
  double total = 0;
  for (size_t p = 0; p < plan.nodes.size(); ++p) {
    const PlanNode& node = plan.nodes[p];
    if (node.kind != PlanNode::Kind::Input || node.input_kind != InputDescriptor::Kind::Param) continue;
    ParameterShares param{static_cast<int64_t>(p), node.local_bytes[0] * static_cast<double>(node.members.size()), {}};
    for (size_t s = 0; s < node.strategies.size(); ++s) {
      if (cutter.keep(param.node)[s]) param.kept.push_back(parameter_share(node.strategies[s].outputs[0], plan.mesh));
    }
    std::sort(param.kept.begin(), param.kept.end());
    param.kept.erase(std::unique(param.kept.begin(), param.kept.end()), param.kept.end());
    levels.insert(levels.end(), param.kept.begin(), param.kept.end());
    total += param.bytes;
    params.push_back(std::move(param));
  }
  if (params.empty() || total <= 0) return;
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  // Shares are ratios of integers (1 / devices); this only absorbs the rounding of their sums.
  const double tolerance = 1e-9;
  auto name_of = [&](const ParameterShares& param) {
    const PlanNode& node = plan.nodes[static_cast<size_t>(param.node)];
    std::string name = program.inputs[static_cast<size_t>(node.members[0])].str();
    if (node.members.size() > 1) name += " x" + std::to_string(node.members.size());
    return name;
  };

  auto header = [&](const char* bound, double value) {
    return std::string("parameter memory ") + bound + " = " + detail::format_share(value) + " of " +
           detail::format_bytes(total) + " (" + detail::format_bytes(value * total) + " per device)";
  };
  // Unreachable bounds: name the parameters that miss them by the most bytes.
  double least = 0, most = 0;
  for (const ParameterShares& param : params) {
    least += param.bytes * param.min();
    most += param.bytes * param.max();
  }
  auto worst = [&](auto excess, Miss miss) {
    std::vector<const ParameterShares*> order;
    for (const ParameterShares& param : params) {
      if (excess(param) > 0) order.push_back(&param);
    }
    std::sort(order.begin(), order.end(), [&](const auto* a, const auto* b) { return excess(*a) > excess(*b); });
    std::string text;
    for (size_t k = 0; k < std::min<size_t>(order.size(), 3); ++k) {
      const ParameterShares& param = *order[k];
      text += (k > 0 ? "; " : "") + std::string("parameter ") + name_of(param) + " (" +
              detail::format_bytes(param.bytes) + ") has no strategy " +
              (miss == Miss::NoneBelow ? "below " + detail::format_share(param.min())
                                       : "above " + detail::format_share(param.max()));
    }
    if (order.size() > 3) text += "; and " + std::to_string(order.size() - 3) + " more";
    return text;
  };
  if (least > bounds.high * total * (1 + tolerance)) {
    throw InfeasiblePlan(
        header("high", bounds.high) + ": the smallest reachable is " + detail::format_share(least / total) + " (" +
        detail::format_bytes(least) +
        "): " + worst([&](const ParameterShares& p) { return p.bytes * (p.min() - bounds.high); }, Miss::NoneBelow));
  }
  if (most < bounds.low * total * (1 - tolerance)) {
    throw InfeasiblePlan(
        header("low", bounds.low) + ": the largest reachable is " + detail::format_share(most / total) + " (" +
        detail::format_bytes(most) +
        "): " + worst([&](const ParameterShares& p) { return p.bytes * (bounds.low - p.max()); }, Miss::NoneAbove));
  }
  // Thresholds: the largest level t <= high whose worst case fits under high, the smallest
  // t' >= low whose best case reaches low (both exist: see the checks above).
  double high_level = levels.front();
  for (double level : levels) {
    if (level > bounds.high * (1 + tolerance)) break;
    double sum = 0;
    for (const ParameterShares& param : params) sum += param.bytes * param.at_most(level, tolerance);
    if (sum <= bounds.high * total * (1 + tolerance)) high_level = level;
  }
  double low_level = levels.back();
  for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
    if (*it < bounds.low * (1 - tolerance)) break;
    double sum = 0;
    for (const ParameterShares& param : params) sum += param.bytes * param.at_least(*it, tolerance);
    if (sum >= bounds.low * total * (1 - tolerance)) low_level = *it;
  }
  std::vector<std::string> held;
  for (const ParameterShares& param : params) {
    const double hi = param.at_most(high_level, tolerance), lo = param.at_least(low_level, tolerance);
    if (param.min() > bounds.high * (1 + tolerance)) held.push_back(name_of(param) + " at " + detail::format_share(hi));
    if (param.max() < bounds.low * (1 - tolerance)) held.push_back(name_of(param) + " at " + detail::format_share(lo));
    std::string constraint = "parameter memory [" + detail::format_share(bounds.low) + ", " +
                             detail::format_share(bounds.high) + "] (per parameter: shares within [" +
                             detail::format_share(lo) + ", " + detail::format_share(hi) + "])";
    cutter.cut(param.node, constraint, "parameter " + name_of(param), [&](const NdStrategy& strategy) {
      double share = parameter_share(strategy.outputs[0], plan.mesh);
      return share <= hi * (1 + tolerance) && share >= lo * (1 - tolerance);
    });
  }
  std::string note = "parameter memory [" + detail::format_share(bounds.low) + ", " +
                     detail::format_share(bounds.high) + "] of " + detail::format_bytes(total) +
                     ": every parameter's share kept within [" + detail::format_share(std::max(bounds.low, 0.0)) +
                     ", " + detail::format_share(bounds.high) + "]";
  if (!held.empty()) {
    note += "; held at their nearest share: ";
    for (size_t k = 0; k < held.size(); ++k) note += (k > 0 ? ", " : "") + held[k];
  }
  // The levels the bounds would give without the parameters held at their nearest share: the
  // largest level within high and the smallest within low (the ends when none is).
  auto within_high = std::upper_bound(levels.begin(), levels.end(), bounds.high * (1 + tolerance));
  const double natural_high = within_high == levels.begin() ? levels.front() : *std::prev(within_high);
  auto within_low = std::lower_bound(levels.begin(), levels.end(), bounds.low * (1 - tolerance));
  const double natural_low = within_low == levels.end() ? levels.back() : *within_low;
  if (high_level < natural_high) {
    note += "; to keep the sum within, the others at or below " + detail::format_share(high_level);
  }
  if (low_level > natural_low) {
    note += "; to keep the sum within, the others at or above " + detail::format_share(low_level);
  }
  notes.push_back(std::move(note));
}

// The least memory any plan needs: every node at its smallest kept usage (edges never forbid a
// combination, so that choice exists), at the step where the sum peaks.
void check_budget(const JointProgram& program, const PlanProblem& plan, double budget) {
  const ShardingProblem& problem = plan.problem;
  int64_t steps = 0;
  for (const ProblemNode& node : problem.nodes) steps = std::max(steps, node.end);
  std::vector<double> delta(static_cast<size_t>(steps) + 1, 0.0), params(static_cast<size_t>(steps) + 1, 0.0);
  for (size_t p = 0; p < problem.nodes.size(); ++p) {
    const ProblemNode& node = problem.nodes[p];
    if (node.start == node.end) continue;
    double least = *std::min_element(node.usages.begin(), node.usages.end());
    delta[static_cast<size_t>(node.start)] += least;
    delta[static_cast<size_t>(node.end)] -= least;
    if (plan.nodes[p].kind == PlanNode::Kind::Input && plan.nodes[p].input_kind == InputDescriptor::Kind::Param) {
      params[static_cast<size_t>(node.start)] += least;
      params[static_cast<size_t>(node.end)] -= least;
    }
  }
  double usage = 0, param_usage = 0, peak = -1, peak_params = 0;
  int64_t peak_step = 0;
  for (int64_t t = 0; t < steps; ++t) {
    usage += delta[static_cast<size_t>(t)];
    param_usage += params[static_cast<size_t>(t)];
    if (usage > peak) {
      peak = usage;
      peak_params = param_usage;
      peak_step = t;
    }
  }
  if (peak <= budget) return;
  std::string where = "time step " + std::to_string(peak_step);
  if (peak_step == 0) {
    where += " (the graph inputs)";
  } else {
    for (size_t p = 0; p < problem.nodes.size(); ++p) {
      if (plan.nodes[p].kind == PlanNode::Kind::Op && problem.nodes[p].start == peak_step) {
        where += " (" + detail::graph_node_name(program.graph, plan.nodes[p].members[0]) + ")";
        break;
      }
    }
  }
  throw InfeasiblePlan("memory budget " + detail::format_bytes(budget) + ": the least-memory plan needs " +
                       detail::format_bytes(peak) + " at " + where + ", " + detail::format_bytes(peak - budget) +
                       " over: " + detail::format_bytes(peak_params) +
                       " of parameters with their gradients and optimizer states, " +
                       detail::format_bytes(peak - peak_params) + " of activations and inputs");
}

// GradientPairing::Produced: forbid every pair (gradient producer, parameter) whose placements differ.
void pair_gradients(const JointProgram& program, PlanProblem& plan) {
  std::map<std::pair<int64_t, int64_t>, size_t> edge_of;
  for (size_t e = 0; e < plan.problem.edges.size(); ++e) {
    edge_of[{plan.problem.edges[e].from, plan.problem.edges[e].to}] = e;
  }
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const int64_t param = plan.input_node[i];
    const PlanNode& param_node = plan.nodes[static_cast<size_t>(param)];
    if (param_node.input_kind != InputDescriptor::Kind::Param || !param_node.has_gradient ||
        param_node.members[0] != static_cast<int64_t>(i)) {
      continue;
    }
    const int64_t grad = program.grad_output_of(program.inputs[i]);
    if (grad < 0) continue;
    const ValueSource& source = plan.outputs[static_cast<size_t>(grad)];
    const PlanNode& producer = plan.nodes[static_cast<size_t>(source.node)];
    auto found = edge_of.find({std::min(source.node, param), std::max(source.node, param)});
    if (found == edge_of.end()) continue;  // no transfer priced: nothing to pair
    ProblemEdge& edge = plan.problem.edges[found->second];
    const bool producer_is_row = edge.from == source.node;
    const size_t width = plan.nodes[static_cast<size_t>(edge.to)].strategies.size();
    bool any = false;
    for (size_t a = 0; a < producer.strategies.size(); ++a) {
      for (size_t b = 0; b < param_node.strategies.size(); ++b) {
        const bool same =
            producer.strategies[a].outputs[static_cast<size_t>(source.output)] == param_node.strategies[b].outputs[0];
        any = any || same;
        if (!same) edge.costs[producer_is_row ? a * width + b : b * width + a] = kForbiddenCost;
      }
    }
    if (!any) {
      throw InfeasiblePlan("gradient pairing (produced in the parameter's placement): no strategy of '" +
                           plan.problem.nodes[static_cast<size_t>(source.node)].name + "' gives the gradient of " +
                           program.inputs[i].str() + " in any placement the parameter may take");
    }
  }
}

}  // namespace

PlacementPattern exactly(std::span<const Placement> placements) {
  return PlacementPattern(placements.begin(), placements.end());
}

bool matches(const PlacementPattern& pattern, std::span<const Placement> placements) {
  if (pattern.size() != placements.size()) return false;
  for (size_t d = 0; d < pattern.size(); ++d) {
    if (pattern[d] && !(*pattern[d] == placements[d])) return false;
  }
  return true;
}

std::string pattern_str(const PlacementPattern& pattern) {
  std::string text = "[";
  for (size_t d = 0; d < pattern.size(); ++d) {
    text += (d > 0 ? ", " : "") + (pattern[d] ? placement_str(*pattern[d]) : std::string("*"));
  }
  return text + "]";
}

double parameter_share(std::span<const Placement> placements, const dist::DeviceMesh& mesh) {
  double share = 1;
  for (size_t d = 0; d < placements.size(); ++d) {
    if (std::holds_alternative<Shard>(placements[d])) share /= static_cast<double>(mesh.size(static_cast<int64_t>(d)));
  }
  return share;
}

Choice ConstrainedProblem::to_original(const Choice& choice) const {
  if (choice.size() != kept.size()) {
    throw ValueError("ConstrainedProblem::to_original: " + std::to_string(choice.size()) + " strategies for " +
                     std::to_string(kept.size()) + " nodes");
  }
  Choice original(choice.size());
  for (size_t p = 0; p < choice.size(); ++p) {
    if (choice[p] < 0 || choice[p] >= static_cast<int64_t>(kept[p].size())) {
      throw ValueError("ConstrainedProblem::to_original: strategy " + std::to_string(choice[p]) + " of node " +
                       std::to_string(p) + " out of range [0, " + std::to_string(kept[p].size()) + ")");
    }
    original[p] = kept[p][static_cast<size_t>(choice[p])];
  }
  return original;
}

std::optional<Choice> ConstrainedProblem::from_original(const Choice& choice) const {
  if (choice.size() != kept.size()) return std::nullopt;
  Choice restricted(choice.size());
  for (size_t p = 0; p < choice.size(); ++p) {
    auto found = std::find(kept[p].begin(), kept[p].end(), choice[p]);
    if (found == kept[p].end()) return std::nullopt;
    restricted[p] = found - kept[p].begin();
  }
  return restricted;
}

ConstrainedProblem apply_constraints(const JointProgram& program, const PlanProblem& plan,
                                     const PlanConstraints& constraints) {
  if (program.inputs.size() != plan.input_node.size() || program.graph.nodes().size() != plan.op_node.size()) {
    throw ValueError("apply_constraints: the program (" + std::to_string(program.inputs.size()) + " inputs, " +
                     std::to_string(program.graph.nodes().size()) + " nodes) is not the one the problem '" +
                     plan.problem.name + "' was built from (" + std::to_string(plan.input_node.size()) + " inputs, " +
                     std::to_string(plan.op_node.size()) + " nodes)");
  }
  if (constraints.memory_budget_bytes &&
      !(*constraints.memory_budget_bytes > 0 && std::isfinite(*constraints.memory_budget_bytes))) {
    throw ValueError("apply_constraints: the memory budget must be a positive number of bytes, got " +
                     detail::format_significant(*constraints.memory_budget_bytes));
  }
  ConstrainedProblem result;
  Cutter cutter(plan);
  apply_placements(cutter, program, plan, constraints);
  if (constraints.parameter_memory) {
    apply_parameter_memory(cutter, program, plan, *constraints.parameter_memory, result.notes);
  }
  result.plan = restrict_strategies(plan, cutter.keep(), &result.kept);
  if (constraints.memory_budget_bytes) result.plan.problem.usage_limit = *constraints.memory_budget_bytes;
  if (result.plan.problem.usage_limit) check_budget(program, result.plan, *result.plan.problem.usage_limit);
  if (constraints.gradients == GradientPairing::Produced) pair_gradients(program, result.plan);
  return result;
}

int64_t input_index(const JointProgram& program, std::string_view name) {
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const InputDescriptor& input = program.inputs[i];
    if (input.str() == name) return static_cast<int64_t>(i);
    for (const std::string& fqn : input.fqns) {
      if (fqn == name) return static_cast<int64_t>(i);
    }
  }
  std::string names;
  for (size_t i = 0; i < program.inputs.size() && i < 12; ++i) names += (i > 0 ? ", " : "") + program.inputs[i].str();
  if (program.inputs.size() > 12) names += ", ...";
  throw ValueError("no graph input is named '" + std::string(name) + "'; the inputs: " + names);
}

int64_t output_index(const JointProgram& program, std::string_view name) {
  for (size_t d = 0; d < program.outputs.size(); ++d) {
    if (program.outputs[d].str() == name) {
      if (program.graph_output[d] < 0) {
        throw ValueError("output " + std::string(name) + " is an explicit none: it has no graph output");
      }
      return program.graph_output[d];
    }
  }
  std::string names;
  for (size_t d = 0; d < program.outputs.size() && d < 12; ++d) {
    names += (d > 0 ? ", " : "") + program.outputs[d].str();
  }
  if (program.outputs.size() > 12) names += ", ...";
  throw ValueError("no graph output is named '" + std::string(name) + "'; the outputs: " + names);
}

}  // namespace px::plan
