// Where each gradient is reduced under a mixed-precision policy (PlanOptions::precision).
//
// Under a policy the capture casts every floating parameter to the compute dtype, so the
// backward ends each parameter's gradient with the cast back to the parameter's (master) dtype.
// A gradient that is Partial before that cast can be reduced on either side of it: on the edge
// into the cast (in the compute dtype) or on the edge from the cast to the parameter (in the
// master dtype; cast passes Partial(sum) through when it widens). The policy's reduce dtype picks
// the side, and the other side's transfers are forbidden on the edge into the cast.

#include <algorithm>
#include <map>

#include "parallax/core/error.h"
#include "plan/builder_internal.h"

namespace px::plan::detail {

namespace {

bool any_partial(const std::vector<Placement>& placements) {
  return std::any_of(placements.begin(), placements.end(), [](const Placement& p) { return is_partial(p); });
}

// Some mesh dim where `from` is Partial and `to` is not: the transfer reduces there.
bool reduces(const std::vector<Placement>& from, const std::vector<Placement>& to) {
  for (size_t d = 0; d < from.size() && d < to.size(); ++d) {
    if (is_partial(from[d]) && !is_partial(to[d])) return true;
  }
  return false;
}

}  // namespace

void place_gradient_reductions(PlanProblem& plan, const JointProgram& program,
                               const std::vector<int64_t>& grad_output_of_input) {
  const MixedPrecisionPolicy& precision = plan.options.precision;
  if (!precision.param_dtype && !precision.reduce_dtype) return;
  const ir::Graph& graph = program.graph;
  std::map<ir::ValueId, int64_t> producer_node;  // value -> graph node index
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    for (ir::ValueId value : graph.nodes()[n].outputs) producer_node[value] = static_cast<int64_t>(n);
  }
  std::map<std::pair<int64_t, int64_t>, size_t> edge_of;
  for (size_t e = 0; e < plan.problem.edges.size(); ++e) {
    edge_of[{plan.problem.edges[e].from, plan.problem.edges[e].to}] = e;
  }
  std::map<std::pair<int64_t, int64_t>, bool> done;  // (cast's problem node, its input's) -> done
  for (size_t i = 0; i < grad_output_of_input.size(); ++i) {
    if (grad_output_of_input[i] < 0) continue;
    auto found = producer_node.find(graph.outputs()[static_cast<size_t>(grad_output_of_input[i])]);
    if (found == producer_node.end()) continue;
    const ir::Node& cast = graph.nodes()[static_cast<size_t>(found->second)];
    if (cast.op->name != "cast") continue;
    const DType compute = graph.meta(cast.inputs[0]).dtype, master = graph.meta(cast.outputs[0]).dtype;
    if (compute == master || !is_floating(compute)) continue;
    const DType reduce = precision.reduce_dtype_for(master);
    if (reduce != compute && reduce != master) {
      throw ValueError("build_problem: the gradient of " + program.inputs[i].str() + " is computed in " +
                       std::string(dtype_name(compute)) + " for a " + std::string(dtype_name(master)) +
                       " parameter; reduce_dtype " + std::string(dtype_name(reduce)) + " must be one of the two");
    }
    const bool after_cast = reduce == master;
    // The problem nodes of the cast and of what feeds it.
    const int64_t v = plan.op_node[static_cast<size_t>(found->second)];
    int64_t u = -1, output = 0;
    for (size_t k = 0; k < graph.inputs().size() && u < 0; ++k) {
      if (graph.inputs()[k] == cast.inputs[0]) u = plan.input_node[k];
    }
    if (u < 0) {
      const int64_t n = producer_node.at(cast.inputs[0]);
      u = plan.op_node[static_cast<size_t>(n)];
      const auto& outputs = graph.nodes()[static_cast<size_t>(n)].outputs;
      output = std::find(outputs.begin(), outputs.end(), cast.inputs[0]) - outputs.begin();
    }
    if (u == v || !done.emplace(std::make_pair(v, u), true).second) continue;
    auto edge = edge_of.find({std::min(u, v), std::max(u, v)});
    if (edge == edge_of.end()) continue;
    ProblemEdge& matrix = plan.problem.edges[edge->second];
    const PlanNode &from_node = plan.nodes[static_cast<size_t>(u)], &to_node = plan.nodes[static_cast<size_t>(v)];
    const bool u_is_row = matrix.from == u;
    const size_t width = plan.nodes[static_cast<size_t>(matrix.to)].strategies.size();
    bool any_allowed = false;
    for (size_t a = 0; a < from_node.strategies.size(); ++a) {
      const std::vector<Placement>& from = from_node.strategies[a].outputs[static_cast<size_t>(output)];
      for (size_t b = 0; b < to_node.strategies.size(); ++b) {
        const std::vector<Placement>& to = to_node.strategies[b].inputs[0];
        const bool forbidden = after_cast ? reduces(from, to) : any_partial(to);
        if (forbidden) {
          matrix.costs[u_is_row ? a * width + b : b * width + a] = kForbiddenCost;
        } else {
          any_allowed = true;
        }
      }
    }
    if (!any_allowed) {
      throw InfeasiblePlan("build_problem: no placement of the gradient of " + program.inputs[i].str() +
                           " reduces it in " + std::string(dtype_name(reduce)) + " as the mixed-precision policy says");
    }
  }
}

}  // namespace px::plan::detail
