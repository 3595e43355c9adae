// Solving under constraints, pricing, and plans as JSON (see plan/plan.h).

#include "parallax/plan/plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/json_reader.h"
#include "parallax/core/error.h"
#include "parallax/ir/printer.h"
#include "plan/file_io.h"
#include "plan/plan_text.h"

namespace px::plan {

namespace {

Evaluation evaluate_with(const PlanProblem& plan, const Choice& choice, std::optional<double> budget) {
  if (!budget || budget == plan.problem.usage_limit) return evaluate(plan.problem, choice);
  ShardingProblem copy = plan.problem;
  copy.usage_limit = budget;
  return evaluate(copy, choice);
}

double compute_of(const PlanProblem& plan, const Choice& choice) {
  double total = 0;
  for (size_t p = 0; p < choice.size(); ++p) total += plan.nodes[p].compute_seconds[static_cast<size_t>(choice[p])];
  return total;
}

// Every node at its smallest usage (ties: the cheaper strategy).
Choice least_memory_choice(const ShardingProblem& problem) {
  Choice choice(problem.nodes.size(), 0);
  for (size_t p = 0; p < problem.nodes.size(); ++p) {
    const ProblemNode& node = problem.nodes[p];
    for (size_t s = 1; s < node.usages.size(); ++s) {
      const auto best = static_cast<size_t>(choice[p]);
      if (node.usages[s] < node.usages[best] ||
          (node.usages[s] == node.usages[best] && node.costs[s] < node.costs[best])) {
        choice[p] = static_cast<int64_t>(s);
      }
    }
  }
  return choice;
}

uint64_t fnv1a(uint64_t hash, const std::string& text) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001B3ull;
  }
  return hash;
}

// The placements written as "[S(0), R]" in a plan's string `value`.
std::vector<Placement> parse_placements(const JsonValue& value) {
  const std::string text = value.as_text();
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') {
    value.fail("expected placements like \"[S(0), R]\", got \"" + text + "\"");
  }
  std::vector<Placement> result;
  const std::string body = text.substr(1, text.size() - 2);
  size_t begin = 0;
  while (begin <= body.size()) {
    size_t end = body.find(',', begin);
    if (end == std::string::npos) end = body.size();
    std::string item = body.substr(begin, end - begin);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (item.empty() && body.empty()) break;
    try {
      result.push_back(parse_placement(item));
    } catch (const ValueError& error) {
      value.fail(error.message());
    }
    begin = end + 1;
  }
  return result;
}

nlohmann::ordered_json placement_list(const std::vector<std::vector<Placement>>& lists) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& placements : lists) out.push_back(placements_str(placements));
  return out;
}

std::vector<std::vector<Placement>> parse_list(const JsonValue& list) {
  std::vector<std::vector<Placement>> result;
  for (const JsonValue& element : list.elements()) result.push_back(parse_placements(element));
  return result;
}

}  // namespace

ShardingPlan price_plan(const PlanProblem& plan, const Choice& choice, std::string label,
                        std::optional<double> memory_budget) {
  ShardingPlan result;
  result.label = std::move(label);
  result.choice = choice;
  result.evaluation = evaluate_with(plan, choice, memory_budget);  // checks the choice
  result.memory_budget = memory_budget ? memory_budget : plan.problem.usage_limit;
  result.compute_seconds = compute_of(plan, choice);
  // The rest of the cost is communication; a difference at rounding level is none.
  result.communication_seconds = result.evaluation.cost - result.compute_seconds;
  if (std::fabs(result.communication_seconds) <= 1e-12 * std::fabs(result.evaluation.cost)) {
    result.communication_seconds = 0;
  }
  return result;
}

ShardingPlan solve_plan(const JointProgram& program, const PlanProblem& plan, const PlanConstraints& constraints,
                        const SolveOptions& options, std::string label) {
  ConstrainedProblem constrained = apply_constraints(program, plan, constraints);
  const SolveResult solved = solve(constrained.plan.problem, options);
  Choice restricted = solved.choice;
  std::vector<std::string> notes = constrained.notes;
  notes.insert(notes.end(), plan.notes.begin(), plan.notes.end());
  const std::optional<double> budget = constrained.plan.problem.usage_limit;
  if (!solved.evaluation.feasible) {
    const Choice least = least_memory_choice(constrained.plan.problem);
    const Evaluation fallback = evaluate(constrained.plan.problem, least);
    if (!fallback.feasible || is_forbidden_cost(fallback.cost)) {
      throw InfeasiblePlan("memory budget " + detail::format_bytes(budget.value_or(0)) + ": the " + solved.solver +
                           " solver found no plan within it (its best needs " +
                           detail::format_bytes(solved.evaluation.peak_usage) + " at time step " +
                           std::to_string(solved.evaluation.peak_step) + ", " +
                           detail::format_bytes(solved.evaluation.peak_usage - budget.value_or(0)) +
                           " over), and the least-memory plan does not fit either (" + fallback.violation + ")");
    }
    notes.push_back("the " + solved.solver + " solver found no plan within the memory budget (its best needs " +
                    detail::format_bytes(solved.evaluation.peak_usage) +
                    "): this is the least-memory plan, which fits (" + detail::format_bytes(fallback.peak_usage) + ")");
    restricted = least;
  }
  ShardingPlan result = price_plan(plan, constrained.to_original(restricted), std::move(label), budget);
  if (is_forbidden_cost(evaluate(constrained.plan.problem, restricted).cost)) {
    throw InfeasiblePlan(
        "gradient pairing (produced in the parameter's placement): the solver found no plan that produces every "
        "gradient in its parameter's placement");
  }
  result.notes = std::move(notes);
  result.solver = solved.solver;
  result.solve_seconds = solved.wall_s;
  if (restricted == solved.choice) {
    result.bound = solved.bound;
    result.gap = solved.gap;
    result.optimal = solved.optimal;
  }
  return result;
}

std::string PlanFingerprint::str() const {
  std::string text = "graph '" + graph + "' (hash " + graph_hash + ", " + std::to_string(inputs) + " inputs, " +
                     std::to_string(nodes) + " nodes) on mesh [";
  for (size_t d = 0; d < mesh.size(); ++d) {
    text += (d > 0 ? ", " : "") + (d < mesh_dims.size() && !mesh_dims[d].empty() ? mesh_dims[d] + "=" : "") +
            std::to_string(mesh[d]);
  }
  return text + "]";
}

PlanFingerprint fingerprint(const JointProgram& program, const PlanProblem& plan) {
  uint64_t hash = 0xCBF29CE484222325ull;
  hash = fnv1a(hash, ir::print(program.graph));
  for (const InputDescriptor& input : program.inputs) hash = fnv1a(hash, input.str() + "\n");
  for (const OutputDescriptor& output : program.outputs) hash = fnv1a(hash, output.str() + "\n");
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  PlanFingerprint result;
  result.graph = program.graph.name();
  result.graph_hash = hex;
  result.inputs = static_cast<int64_t>(program.graph.inputs().size());
  result.nodes = static_cast<int64_t>(program.graph.nodes().size());
  result.mesh = plan.mesh.shape();
  result.mesh_dims = plan.mesh.dim_names();
  return result;
}

std::string plan_to_json(const JointProgram& program, const PlanProblem& plan, const ShardingPlan& sharding) {
  const DecodedPlan decoded = decode(plan, sharding.choice);
  const PlanFingerprint print = fingerprint(program, plan);
  nlohmann::ordered_json out;
  out["format"] = "parallax-plan";
  out["version"] = 1;
  out["fingerprint"] = {{"graph", print.graph},   {"graph_hash", print.graph_hash},
                        {"inputs", print.inputs}, {"nodes", print.nodes},
                        {"mesh", print.mesh},     {"mesh_dims", print.mesh_dims}};
  out["label"] = sharding.label;
  out["device"] = plan.options.device.name;
  out["cost"] = sharding.evaluation.cost;
  out["compute_seconds"] = sharding.compute_seconds;
  out["communication_seconds"] = sharding.communication_seconds;
  out["peak_bytes"] = sharding.evaluation.peak_usage;
  out["solver"] = sharding.solver;
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
  for (size_t i = 0; i < decoded.inputs.size(); ++i) {
    inputs.push_back({{"name", program.inputs[i].str()}, {"placements", placements_str(decoded.inputs[i])}});
  }
  out["inputs"] = std::move(inputs);
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (size_t n = 0; n < decoded.nodes.size(); ++n) {
    nodes.push_back({{"name", detail::graph_node_name(program.graph, static_cast<int64_t>(n))},
                     {"inputs", placement_list(decoded.nodes[n].inputs)},
                     {"outputs", placement_list(decoded.nodes[n].outputs)}});
  }
  out["nodes"] = std::move(nodes);
  return out.dump(1);
}

namespace {

PlanFingerprint read_fingerprint(const JsonValue& saved) {
  PlanFingerprint print;
  print.graph = saved.text("graph");
  print.graph_hash = saved.text("graph_hash");
  print.inputs = saved.integer("inputs");
  print.nodes = saved.integer("nodes");
  for (const JsonValue& size : saved.array("mesh")) print.mesh.push_back(size.as_integer());
  for (const JsonValue& name : saved.array("mesh_dims")) print.mesh_dims.push_back(name.as_text());
  return print;
}

}  // namespace

ShardingPlan plan_from_json(const JointProgram& program, const PlanProblem& plan, const std::string& json_text,
                            std::optional<double> memory_budget) {
  const JsonReader reader(json_text, "plan_from_json", "plan");
  const JsonValue root = reader.root();
  if (!root.raw().is_object() || !root.has("format") || root.at("format").raw() != "parallax-plan") {
    root.fail_at("format", "not a Parallax plan (no \"format\": \"parallax-plan\")");
  }
  if (root.integer("version") != 1) {
    root.fail_at("version", "unsupported plan version " + std::to_string(root.integer("version")));
  }
  const PlanFingerprint theirs = read_fingerprint(root.object("fingerprint"));
  const PlanFingerprint ours = fingerprint(program, plan);
  if (!(theirs == ours)) {
    throw ValueError("plan_from_json: the plan was made for " + theirs.str() + ", not for this problem's " +
                     ours.str());
  }
  const std::vector<JsonValue> inputs = root.array("inputs");
  const std::vector<JsonValue> nodes = root.array("nodes");
  if (inputs.size() != plan.input_node.size()) {
    root.fail_at("inputs", "lists " + std::to_string(inputs.size()) + " inputs; the graph has " +
                               std::to_string(plan.input_node.size()));
  }
  if (nodes.size() != plan.op_node.size()) {
    root.fail_at("nodes", "lists " + std::to_string(nodes.size()) + " nodes; the graph has " +
                              std::to_string(plan.op_node.size()));
  }
  Choice choice(plan.nodes.size(), -1);
  // The strategy of problem node p given to a member; every member must give the same one.
  auto assign = [&](int64_t p, const NdStrategy& wanted, bool input_only, const JsonValue& member,
                    const std::string& what) {
    const PlanNode& node = plan.nodes[static_cast<size_t>(p)];
    int64_t index = -1;
    for (size_t s = 0; s < node.strategies.size() && index < 0; ++s) {
      const NdStrategy& candidate = node.strategies[s];
      if (input_only ? candidate.outputs[0] == wanted.outputs[0] : candidate == wanted) index = static_cast<int64_t>(s);
    }
    if (index < 0) {
      member.fail("(" + what + ") strategy " +
                  (input_only ? placements_str(wanted.outputs[0]) : nd_strategy_str(wanted)) +
                  " is not one of this problem's (node '" + plan.problem.nodes[static_cast<size_t>(p)].name + "')");
    }
    int64_t& slot = choice[static_cast<size_t>(p)];
    if (slot >= 0 && slot != index) {
      member.fail("(" + what + ") differs from the repeated layer it shares a decision with ('" +
                  plan.problem.nodes[static_cast<size_t>(p)].name +
                  "'): rebuild the problem with cluster_layers = false to load this plan");
    }
    slot = index;
  };
  for (size_t i = 0; i < plan.input_node.size(); ++i) {
    NdStrategy wanted;
    wanted.outputs.push_back(parse_placements(inputs[i].at("placements")));
    assign(plan.input_node[i], wanted, true, inputs[i], program.inputs[i].str());
  }
  for (size_t n = 0; n < plan.op_node.size(); ++n) {
    NdStrategy wanted{parse_list(nodes[n].at("inputs")), parse_list(nodes[n].at("outputs"))};
    assign(plan.op_node[n], wanted, false, nodes[n], detail::graph_node_name(program.graph, static_cast<int64_t>(n)));
  }
  ShardingPlan result = price_plan(plan, choice, root.has("label") ? root.text("label") : std::string(), memory_budget);
  result.solver = "loaded";
  return result;
}

void save_plan(const JointProgram& program, const PlanProblem& plan, const ShardingPlan& sharding,
               const std::string& path) {
  write_text_file(path, plan_to_json(program, plan, sharding) + "\n");
}

ShardingPlan load_plan(const JointProgram& program, const PlanProblem& plan, const std::string& path,
                       std::optional<double> memory_budget) {
  try {
    return plan_from_json(program, plan, read_text_file(path), memory_budget);
  } catch (const Error& error) {
    error.rethrow_with_context(path + ": ");
  }
}

}  // namespace px::plan
