// The plan report's activation checkpointing table (plan/report.h).

#include <map>

#include "parallax/plan/report.h"

namespace px::plan {

namespace {

// The set of identical layers a representative node belongs to, by its module path
// ("model.layers.0.attention" is in "model.layers" when layer 0 represents it); -1: none.
int64_t group_of(const PlanProblem& plan, const std::string& module_path) {
  for (size_t g = 0; g < plan.layer_groups.size(); ++g) {
    const LayerGroup& group = plan.layer_groups[g];
    const std::string prefix =
        group.list_path + (group.list_path.empty() ? "" : ".") + std::to_string(group.layers.front());
    if (module_path.compare(0, prefix.size(), prefix) == 0 &&
        (module_path.size() == prefix.size() || module_path[prefix.size()] == '.')) {
      return static_cast<int64_t>(g);
    }
  }
  return -1;
}

// The transfers into problem node p under the choice: the edges to the problem nodes that
// produce its members' inputs.
double transfers_into(const JointProgram& program, const PlanProblem& plan, const Choice& choice, int64_t p) {
  const ir::Graph& graph = program.graph;
  std::map<ir::ValueId, int64_t> producer;
  for (size_t i = 0; i < graph.inputs().size(); ++i) producer[graph.inputs()[i]] = plan.input_node[i];
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    for (ir::ValueId output : graph.nodes()[n].outputs) producer[output] = plan.op_node[n];
  }
  std::map<int64_t, bool> from;
  for (ir::ValueId input : graph.nodes()[static_cast<size_t>(plan.nodes[static_cast<size_t>(p)].members[0])].inputs) {
    if (producer.at(input) != p) from[producer.at(input)] = true;
  }
  double seconds = 0;
  for (const ProblemEdge& edge : plan.problem.edges) {
    const int64_t other = edge.from == p ? edge.to : edge.to == p ? edge.from : -1;
    if (other < 0 || !from.count(other)) continue;
    const size_t width = plan.nodes[static_cast<size_t>(edge.to)].strategies.size();
    seconds += edge.costs[static_cast<size_t>(choice[static_cast<size_t>(edge.from)]) * width +
                          static_cast<size_t>(choice[static_cast<size_t>(edge.to)])];
  }
  return seconds;
}

}  // namespace

std::vector<CheckpointRow> checkpointing_table(const JointProgram& program, const PlanProblem& plan,
                                               const ShardingPlan& sharding) {
  std::vector<CheckpointRow> rows(plan.layer_groups.size());
  std::vector<bool> any(plan.layer_groups.size(), false);
  for (size_t g = 0; g < plan.layer_groups.size(); ++g) {
    rows[g].layers = plan.layer_groups[g].list_path + " x" + std::to_string(plan.layer_groups[g].layers.size());
  }
  for (size_t p = 0; p < plan.nodes.size(); ++p) {
    const PlanNode& node = plan.nodes[p];
    if (node.recompute.empty()) continue;
    const ir::Node& op = program.graph.nodes()[static_cast<size_t>(node.members[0])];
    const int64_t g = group_of(plan, op.provenance.module_path);
    if (g < 0) continue;
    CheckpointRow& row = rows[static_cast<size_t>(g)];
    any[static_cast<size_t>(g)] = true;
    const auto s = static_cast<size_t>(sharding.choice[p]);
    if (!node.recompute[s]) {
      ++row.kept;
      continue;
    }
    const std::string& path = op.provenance.module_path;
    const std::string prefix = plan.layer_groups[static_cast<size_t>(g)].list_path + "." +
                               std::to_string(plan.layer_groups[static_cast<size_t>(g)].layers.front());
    const std::string inner = path.size() > prefix.size() ? path.substr(prefix.size() + 1) : "<layer>";
    row.recomputed.push_back(op.op->name + " @" + inner);
    row.bytes_saved +=
        node.local_bytes[s] * static_cast<double>(std::max<int64_t>(0, node.live_copies - node.recompute_copies));
    // The recomputing strategy's compute and in-transfers count twice; the second time is the cost.
    row.seconds_added +=
        node.compute_seconds[s] / 2 + transfers_into(program, plan, sharding.choice, static_cast<int64_t>(p)) / 2;
  }
  std::vector<CheckpointRow> result;
  for (size_t g = 0; g < rows.size(); ++g) {
    if (any[g]) result.push_back(std::move(rows[g]));
  }
  return result;
}

}  // namespace px::plan
