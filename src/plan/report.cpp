// Plan reports and explain() (see plan/report.h).

#include "parallax/plan/report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "parallax/core/error.h"
#include "parallax/dtensor/redistribute.h"
#include "plan/plan_text.h"

namespace px::plan {

namespace {

// A padded column: `text` left-aligned in `width`.
std::string pad(const std::string& text, size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

std::string percent(double part, double whole) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buffer;
}

// What runs at a problem time step.
std::string step_name(const JointProgram& program, const PlanProblem& plan, int64_t step) {
  if (step == 0) return "the graph inputs";
  for (size_t p = 0; p < plan.nodes.size(); ++p) {
    if (plan.nodes[p].kind == PlanNode::Kind::Op && plan.problem.nodes[p].start == step) {
      return detail::graph_node_name(program.graph, plan.nodes[p].members[0]);
    }
  }
  return "time step " + std::to_string(step);
}

}  // namespace

std::vector<ParameterRow> parameter_table(const JointProgram& program, const PlanProblem& plan,
                                          const ShardingPlan& sharding) {
  const DecodedPlan decoded = decode(plan, sharding.choice);
  std::vector<ParameterRow> rows;
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    if (program.inputs[i].underlying_kind() != InputDescriptor::Kind::Param) continue;
    const auto p = static_cast<size_t>(plan.input_node[i]);
    const auto s = static_cast<size_t>(sharding.choice[p]);
    ParameterRow row;
    row.input = static_cast<int64_t>(i);
    row.name = program.inputs[i].fqns.empty() ? program.inputs[i].str() : program.inputs[i].fqns.front();
    row.meta = program.graph.meta(program.graph.inputs()[i]);
    row.placements = decoded.inputs[i];
    row.share = parameter_share(row.placements, plan.mesh);
    row.local_bytes = plan.nodes[p].local_bytes[s];
    row.state_bytes = plan.problem.nodes[p].usages[s] / static_cast<double>(plan.nodes[p].live_copies);
    rows.push_back(std::move(row));
  }
  return rows;
}

namespace {

// Every transfer of the real graph under the plan (see the top of report.h), each with the
// parameter it carries: the parameter itself, a value made from it alone (its cast to the compute
// dtype, a view), or its gradient on the way back to it; -1 for activations.
template <typename OnStep>
void walk_transfers(const JointProgram& program, const PlanProblem& plan, const ShardingPlan& sharding,
                    OnStep&& on_step) {
  const ir::Graph& graph = program.graph;
  const DecodedPlan decoded = decode(plan, sharding.choice);
  std::unordered_map<ir::ValueId, const std::vector<Placement>*> placed;
  std::unordered_map<ir::ValueId, int64_t> carried;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    placed[graph.inputs()[i]] = &decoded.inputs[i];
    if (program.inputs[i].underlying_kind() == InputDescriptor::Kind::Param)
      carried[graph.inputs()[i]] = static_cast<int64_t>(i);
  }
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    const ir::Node& node = graph.nodes()[n];
    for (size_t o = 0; o < node.outputs.size(); ++o) placed[node.outputs[o]] = &decoded.nodes[n].outputs[o];
    if (node.inputs.size() == 1 && node.outputs.size() == 1) {
      auto found = carried.find(node.inputs[0]);
      if (found != carried.end()) carried[node.outputs[0]] = found->second;
    }
  }
  std::map<std::string, std::vector<RedistributeStep>> cache;
  auto transfer = [&](ir::ValueId value, const std::vector<Placement>& to, int64_t parameter) {
    const std::vector<Placement>& from = *placed.at(value);
    if (from == to) return;
    const TensorMeta& meta = graph.meta(value);
    const std::string key = meta.str() + placements_str(from) + placements_str(to);
    auto found = cache.find(key);
    if (found == cache.end()) {
      found = cache.emplace(key, plan_redistribute(DTensorSpec{plan.mesh, from, meta}, to, plan.topology).steps).first;
    }
    for (const RedistributeStep& step : found->second) {
      if (step.seconds == 0 && step.bytes == 0) continue;  // local steps
      on_step(step, parameter);
    }
  };
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    const auto& inputs = graph.nodes()[n].inputs;
    for (size_t j = 0; j < inputs.size(); ++j) {
      auto found = carried.find(inputs[j]);
      transfer(inputs[j], decoded.nodes[n].inputs[j], found == carried.end() ? -1 : found->second);
    }
  }
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    if (program.inputs[i].underlying_kind() != InputDescriptor::Kind::Param ||
        !plan.nodes[static_cast<size_t>(plan.input_node[i])].has_gradient)
      continue;
    const int64_t grad = program.grad_output_of(program.inputs[i]);
    if (grad >= 0) {
      transfer(graph.outputs()[static_cast<size_t>(grad)], decoded.inputs[i], static_cast<int64_t>(i));
    }
  }
}

}  // namespace

std::vector<CollectiveRow> collectives(const JointProgram& program, const PlanProblem& plan,
                                       const ShardingPlan& sharding) {
  std::map<std::pair<std::string, int64_t>, CollectiveRow> rows;
  walk_transfers(program, plan, sharding, [&](const RedistributeStep& step, int64_t) {
    CollectiveRow& row = rows[{redistribute_kind_name(step.kind), step.mesh_dim}];
    row.kind = redistribute_kind_name(step.kind);
    row.mesh_dim = step.mesh_dim;
    row.count += 1;
    row.bytes += step.bytes;
    row.seconds += step.seconds;
  });
  std::vector<CollectiveRow> result;
  for (auto& [key, row] : rows) result.push_back(row);
  std::stable_sort(result.begin(), result.end(),
                   [](const CollectiveRow& a, const CollectiveRow& b) { return a.seconds > b.seconds; });
  return result;
}

void add_parameter_communication(const JointProgram& program, const PlanProblem& plan, const ShardingPlan& sharding,
                                 std::vector<ParameterRow>& rows) {
  std::unordered_map<int64_t, ParameterRow*> by_input;
  for (ParameterRow& row : rows) {
    row.communication_seconds = 0;
    row.communication_bytes = 0;
    by_input[row.input] = &row;
  }
  walk_transfers(program, plan, sharding, [&](const RedistributeStep& step, int64_t parameter) {
    auto found = by_input.find(parameter);
    if (found == by_input.end()) return;
    found->second->communication_seconds += step.seconds;
    found->second->communication_bytes += step.bytes;
  });
}

MemoryBreakdown memory_breakdown(const JointProgram& program, const PlanProblem& plan, const ShardingPlan& sharding) {
  MemoryBreakdown memory;
  const PredictedPeak peak = predicted_peak(plan, sharding.choice);
  memory.peak_bytes = peak.bytes;
  memory.peak_step = peak.step;
  memory.budget_check_bytes = sharding.evaluation.peak_usage;
  memory.peak_at = step_name(program, plan, memory.peak_step);
  memory.budget = sharding.memory_budget;
  memory.capacity_bytes = plan.options.device.memory_capacity_bytes;
  for (size_t p = 0; p < plan.nodes.size(); ++p) {
    const ProblemNode& node = plan.problem.nodes[p];
    if (!(node.start <= memory.peak_step && memory.peak_step < node.end)) continue;
    const double usage = node.usages[static_cast<size_t>(sharding.choice[p])];
    if (plan.nodes[p].kind == PlanNode::Kind::Op) {
      memory.activation_bytes += usage;
    } else if (plan.nodes[p].input_kind != InputDescriptor::Kind::Param) {
      memory.other_input_bytes += usage;
    }
  }
  memory.parameter_bytes = peak.parameter_bytes;
  return memory;
}

PlanReport make_report(const JointProgram& program, const PlanProblem& plan, const ShardingPlan& sharding) {
  PlanReport report;
  report.label = sharding.label;
  report.step_seconds = sharding.evaluation.cost;
  report.compute_seconds = sharding.compute_seconds;
  report.communication_seconds = sharding.communication_seconds;
  report.memory = memory_breakdown(program, plan, sharding);
  report.parameters = parameter_table(program, plan, sharding);
  add_parameter_communication(program, plan, sharding, report.parameters);
  report.collectives = collectives(program, plan, sharding);
  report.checkpointing = checkpointing_table(program, plan, sharding);
  report.notes = sharding.notes;
  return report;
}

std::string format_report(const PlanReport& report, size_t max_parameters) {
  std::string text = "plan '" + report.label + "': step " + detail::format_seconds(report.step_seconds) +
                     " = compute " + detail::format_seconds(report.compute_seconds) + " (" +
                     percent(report.compute_seconds, report.step_seconds) + ") + communication " +
                     detail::format_seconds(report.communication_seconds) + " (" +
                     percent(report.communication_seconds, report.step_seconds) + ")\n";
  const MemoryBreakdown& memory = report.memory;
  text += "peak memory per device " + detail::format_bytes(memory.peak_bytes) + " at " + memory.peak_at + ": " +
          detail::format_bytes(memory.parameter_bytes) +
          " parameters with optimizer states and the gradients made so far, " +
          detail::format_bytes(memory.activation_bytes) + " activations, " +
          detail::format_bytes(memory.other_input_bytes) + " other inputs";
  if (memory.budget) text += "; budget " + detail::format_bytes(*memory.budget);
  if (memory.budget && memory.budget_check_bytes > memory.peak_bytes) {
    text += " (checked against " + detail::format_bytes(memory.budget_check_bytes) +
            ", every gradient counted for the whole step)";
  }
  text += "; device " + detail::format_bytes(memory.capacity_bytes) +
          (memory.peak_bytes > memory.capacity_bytes ? " (does not fit)" : "") + "\n";
  for (const std::string& note : report.notes) text += "note: " + note + "\n";
  text += "collectives per step:\n";
  if (report.collectives.empty()) text += "  none\n";
  for (const CollectiveRow& row : report.collectives) {
    text += "  " + pad(row.kind, 16) + pad("mesh dim " + std::to_string(row.mesh_dim), 12) +
            pad(std::to_string(row.count) + "x", 8) + pad(detail::format_bytes(row.bytes), 10) +
            detail::format_seconds(row.seconds) + "\n";
  }
  size_t width = 10;
  for (const ParameterRow& row : report.parameters) width = std::max(width, row.name.size() + 2);
  if (!report.checkpointing.empty()) text += "activation checkpointing per layer group:\n";
  for (const CheckpointRow& row : report.checkpointing) {
    text += "  " + row.layers + ": keeps " + std::to_string(row.kept) + ", recomputes " +
            std::to_string(row.recomputed.size()) + " of its activations, " + detail::format_bytes(row.bytes_saved) +
            " less at the start of the backward for " + detail::format_seconds(row.seconds_added) + " more per step\n";
    if (row.recomputed.empty()) continue;
    std::string list;
    for (const std::string& name : row.recomputed) list += (list.empty() ? "" : ", ") + name;
    text += "    recomputed: " + list + "\n";
  }
  text += "parameters:\n";
  const size_t shown =
      max_parameters == 0 ? report.parameters.size() : std::min(max_parameters, report.parameters.size());
  for (size_t k = 0; k < shown; ++k) {
    const ParameterRow& row = report.parameters[k];
    text += "  " + pad(row.name, width) + pad(row.meta.str(), 22) + pad(placements_str(row.placements), 16) +
            pad(detail::format_share(row.share), 8) + detail::format_bytes(row.state_bytes) + " with state\n";
  }
  if (shown < report.parameters.size()) {
    text += "  ... " + std::to_string(report.parameters.size() - shown) + " more\n";
  }
  return text;
}

std::string format_comparison(const std::vector<PlanReport>& reports) {
  size_t width = 12;
  for (const PlanReport& report : reports) width = std::max(width, report.label.size() + 2);
  std::string text =
      pad("plan", width) + pad("step", 12) + pad("compute", 12) + pad("comm", 12) + pad("peak mem", 12) + "vs first\n";
  for (const PlanReport& report : reports) {
    const double ratio = reports.front().step_seconds > 0 ? report.step_seconds / reports.front().step_seconds : 1;
    text += pad(report.label, width) + pad(detail::format_seconds(report.step_seconds), 12) +
            pad(detail::format_seconds(report.compute_seconds), 12) +
            pad(detail::format_seconds(report.communication_seconds), 12) +
            pad(detail::format_bytes(report.memory.peak_bytes), 12) + detail::format_significant(ratio) + "x" +
            (report.memory.peak_bytes > report.memory.capacity_bytes ? "  (over device memory)" : "") + "\n";
  }
  return text;
}

Explanation explain(const PlanProblem& plan, const ShardingPlan& sharding, int64_t node,
                    const ConstrainedProblem* constraints) {
  if (node < 0 || node >= static_cast<int64_t>(plan.nodes.size())) {
    throw ValueError("explain: problem node " + std::to_string(node) + " out of range [0, " +
                     std::to_string(plan.nodes.size()) + ")");
  }
  const auto p = static_cast<size_t>(node);
  const ProblemNode& problem_node = plan.problem.nodes[p];
  const PlanNode& plan_node = plan.nodes[p];
  Explanation result;
  result.node = node;
  result.name = problem_node.name;
  result.members = static_cast<int64_t>(plan_node.members.size());
  const int64_t chosen = sharding.choice[p];
  const double base = sharding.evaluation.cost;
  ShardingProblem budgeted;
  const ShardingProblem* problem = &plan.problem;
  if (sharding.memory_budget != plan.problem.usage_limit) {
    budgeted = plan.problem;
    budgeted.usage_limit = sharding.memory_budget;
    problem = &budgeted;
  }
  Choice changed = sharding.choice;
  for (size_t s = 0; s < plan_node.strategies.size(); ++s) {
    StrategyCost cost;
    cost.strategy = static_cast<int64_t>(s);
    cost.name = s < problem_node.strategy_names.size() ? problem_node.strategy_names[s]
                                                       : nd_strategy_str(plan_node.strategies[s]);
    cost.node_seconds = problem_node.costs[s];
    for (const ProblemEdge& edge : plan.problem.edges) {
      if (edge.from != node && edge.to != node) continue;
      const size_t width = plan.nodes[static_cast<size_t>(edge.to)].strategies.size();
      const size_t row = edge.from == node ? s : static_cast<size_t>(sharding.choice[static_cast<size_t>(edge.from)]);
      const size_t col = edge.to == node ? s : static_cast<size_t>(sharding.choice[static_cast<size_t>(edge.to)]);
      cost.edge_seconds += edge.costs[row * width + col];
    }
    cost.total_seconds = cost.node_seconds + cost.edge_seconds;
    changed[p] = static_cast<int64_t>(s);
    const Evaluation evaluation = evaluate(*problem, changed);
    cost.delta_seconds = evaluation.cost - base;
    cost.fits = evaluation.feasible;
    cost.usage = problem_node.usages[s];
    cost.chosen = static_cast<int64_t>(s) == chosen;
    if (constraints != nullptr) {
      const auto& kept = constraints->kept[p];
      cost.allowed = std::find(kept.begin(), kept.end(), static_cast<int64_t>(s)) != kept.end();
    }
    result.strategies.push_back(std::move(cost));
  }
  std::stable_sort(result.strategies.begin(), result.strategies.end(),
                   [](const StrategyCost& a, const StrategyCost& b) {
                     if (a.chosen != b.chosen) return a.chosen;
                     return a.total_seconds < b.total_seconds;
                   });
  return result;
}

std::string Explanation::str(size_t max_rows) const {
  std::string text = "explain '" + name + "'";
  if (members > 1) text += " (one decision for " + std::to_string(members) + " repeated members)";
  text += ":\n  " + pad("strategy", 40) + pad("own", 11) + pad("edges", 11) + pad("total", 11) + pad("vs chosen", 12) +
          "memory\n";
  const size_t shown = std::min(max_rows == 0 ? strategies.size() : max_rows, strategies.size());
  for (size_t k = 0; k < shown; ++k) {
    const StrategyCost& cost = strategies[k];
    std::string delta =
        cost.chosen ? "chosen" : (cost.delta_seconds >= 0 ? "+" : "") + detail::format_seconds(cost.delta_seconds);
    text += (cost.chosen ? "* " : "  ") + pad(cost.name, 40) + pad(detail::format_seconds(cost.node_seconds), 11) +
            pad(detail::format_seconds(cost.edge_seconds), 11) + pad(detail::format_seconds(cost.total_seconds), 11) +
            pad(delta, 12) + detail::format_bytes(cost.usage) + (cost.fits ? "" : "  (over the memory budget)") +
            (cost.allowed ? "" : "  (cut by the constraints)") + "\n";
  }
  if (shown < strategies.size()) text += "  ... " + std::to_string(strategies.size() - shown) + " more\n";
  return text;
}

int64_t find_plan_node(const JointProgram& program, const PlanProblem& plan, std::string_view name) {
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const InputDescriptor& input = program.inputs[i];
    bool named = input.str() == name;
    for (const std::string& fqn : input.fqns) named = named || fqn == name;
    if (named) return plan.input_node[i];
  }
  std::vector<int64_t> partial;
  for (size_t p = 0; p < plan.problem.nodes.size(); ++p) {
    const std::string& candidate = plan.problem.nodes[p].name;
    if (candidate == name) return static_cast<int64_t>(p);
    if (candidate.find(name) != std::string::npos) partial.push_back(static_cast<int64_t>(p));
  }
  if (partial.size() == 1) return partial.front();
  std::string candidates;
  for (size_t k = 0; k < partial.size() && k < 8; ++k) {
    candidates += (k > 0 ? "; " : "") + plan.problem.nodes[static_cast<size_t>(partial[k])].name;
  }
  if (partial.empty()) {
    throw ValueError("find_plan_node: no graph input or problem node is named '" + std::string(name) + "'");
  }
  throw ValueError("find_plan_node: '" + std::string(name) + "' names " + std::to_string(partial.size()) +
                   " problem nodes: " + candidates + (partial.size() > 8 ? "; ..." : ""));
}

}  // namespace px::plan
