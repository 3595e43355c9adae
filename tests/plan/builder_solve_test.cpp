// Solving built problems: a small model without a memory limit is data parallel (and pays its
// gradient all-reduce); a tight memory budget forces its parameters to be sharded.

#include <gtest/gtest.h>

#include <iostream>
#include <variant>

#include "parallax/plan/builder.h"
#include "parallax/plan/solver.h"
#include "plan/builder_models.h"

namespace px::plan {
namespace {

using testing::mlp_joint;

bool is_replicated(const std::vector<Placement>& placements) {
  for (const Placement& placement : placements) {
    if (!std::holds_alternative<Replicate>(placement)) return false;
  }
  return true;
}

SolveResult solve_exactly(const ShardingProblem& problem) {
  SolveOptions options;
  options.solver = SolverKind::Ilp;
  options.time_limit_s = 60;
  return solve(problem, options);
}

// The problem edge between problem nodes a and b, and the cost it adds under `choice`.
double edge_cost(const PlanProblem& plan, int64_t a, int64_t b, const Choice& choice) {
  for (const ProblemEdge& edge : plan.problem.edges) {
    if (edge.from != std::min(a, b) || edge.to != std::max(a, b)) continue;
    size_t width = plan.nodes[static_cast<size_t>(edge.to)].strategies.size();
    return edge.costs[static_cast<size_t>(choice[static_cast<size_t>(edge.from)]) * width +
                      static_cast<size_t>(choice[static_cast<size_t>(edge.to)])];
  }
  return -1;
}

// The problem node of the graph node producing graph output `output`.
int64_t producer_node(const PlanProblem& plan, const JointProgram& program, int64_t output) {
  ir::ValueId value = program.graph.outputs()[static_cast<size_t>(output)];
  for (size_t n = 0; n < program.graph.nodes().size(); ++n) {
    for (ir::ValueId v : program.graph.nodes()[n].outputs) {
      if (v == value) return plan.op_node[n];
    }
  }
  return -1;
}

TEST(BuilderSolve, SmallModelWithoutMemoryLimitIsDataParallel) {
  // Activations (32768 rows) outweigh parameters (2 x 1M): splitting the batch beats splitting
  // the weights, and replicated weights beat gathered ones.
  JointProgram mlp = mlp_joint(32768, 512, 2048, 512);
  const int64_t ranks = 4;
  PlanProblem plan = build_problem(mlp, dist::DeviceMesh({ranks}));
  SolveResult result = solve_exactly(plan.problem);
  std::cout << "[ mlp dp ] " << plan.nodes.size() << " nodes, cost " << result.evaluation.cost * 1e6 << " us ("
            << result.solver << (result.optimal ? ", optimal" : "") << ", " << result.wall_s << " s)\n";
  ASSERT_TRUE(result.evaluation.feasible);
  DecodedPlan decoded = decode(plan, result.choice);

  // Every weight replicated; its gradient all-reduced into it; fc1 runs on a batch shard. (A bias
  // is read once, by the forward linear: sharding it costs a reduce-scatter and an all-gather,
  // exactly an all-reduce in the ring model, so either placement is optimal for it.)
  double all_reduces = 0;
  for (size_t i = 0; i < mlp.inputs.size(); ++i) {
    if (mlp.inputs[i].kind != InputDescriptor::Kind::Param || mlp.graph.meta(mlp.graph.inputs()[i]).ndim() != 2) {
      continue;
    }
    SCOPED_TRACE(mlp.inputs[i].str());
    EXPECT_TRUE(is_replicated(decoded.inputs[i])) << placements_str(decoded.inputs[i]);
    int64_t grad = mlp.grad_output_of(mlp.inputs[i]);
    int64_t producer = producer_node(plan, mlp, grad);
    ASSERT_GE(producer, 0);
    double bytes = static_cast<double>(mlp.graph.meta(mlp.graph.inputs()[i]).nbytes());
    double expected = dist::all_reduce_cost(ranks, bytes, plan.topology.link(0));
    EXPECT_NEAR(edge_cost(plan, producer, plan.input_node[i], result.choice), expected, 1e-9 * expected);
    all_reduces += expected;
  }
  const NdStrategy& fc1 = decoded.nodes.front();  // the first node is fc1's linear
  EXPECT_EQ(mlp.graph.nodes().front().op->name, "linear");
  EXPECT_EQ(fc1.inputs[0], std::vector<Placement>{Shard{0}});
  EXPECT_EQ(fc1.outputs[0], std::vector<Placement>{Shard{0}});
  EXPECT_GT(result.evaluation.cost, all_reduces);

  // Data parallelism beats running everything replicated (the same compute on every rank).
  Choice replicated(plan.nodes.size(), 0);
  EXPECT_LT(result.evaluation.cost, 0.5 * evaluate(plan.problem, replicated).cost);
}

TEST(BuilderSolve, MemoryBudgetForcesShardedParameters) {
  // The model of the test above, whose optimum without a limit is data parallel.
  JointProgram mlp = mlp_joint(32768, 512, 2048, 512);
  dist::DeviceMesh mesh({4});
  PlanProblem unlimited = build_problem(mlp, mesh);
  SolveResult free = solve_exactly(unlimited.problem);
  // Replicated, the two weights take W (with gradients and AdamW states); sharding one saves
  // 0.375 W, both 0.75 W. A budget of the data-parallel peak less 0.5 W needs both sharded.
  double weights = 0;
  std::vector<size_t> weight_inputs;
  for (size_t i = 0; i < mlp.inputs.size(); ++i) {
    if (mlp.graph.meta(mlp.graph.inputs()[i]).ndim() == 2 && mlp.inputs[i].kind == InputDescriptor::Kind::Param) {
      weights += unlimited.problem.nodes[static_cast<size_t>(unlimited.input_node[i])].usages[0];
      weight_inputs.push_back(i);
    }
  }
  ASSERT_EQ(weight_inputs.size(), 2u);
  DecodedPlan data_parallel = decode(unlimited, free.choice);
  for (size_t i : weight_inputs) ASSERT_TRUE(is_replicated(data_parallel.inputs[i]));

  // The smallest peak of any plan with replicated weights (plans of equal cost differ in memory:
  // a replicated input sliced locally costs what a sharded one does), by bisection on the limit.
  std::vector<std::vector<bool>> keep;
  for (const PlanNode& node : unlimited.nodes) keep.emplace_back(node.strategies.size(), true);
  for (size_t i : weight_inputs) {
    auto& flags = keep[static_cast<size_t>(unlimited.input_node[i])];
    std::fill(flags.begin() + 1, flags.end(), false);  // strategy 0: Replicate
  }
  PlanProblem replicated = restrict_strategies(unlimited, keep);
  double low = 0, high = free.evaluation.peak_usage;
  for (int step = 0; step < 20; ++step) {
    double middle = 0.5 * (low + high);
    replicated.problem.usage_limit = middle;
    (solve_exactly(replicated.problem).evaluation.feasible ? high : low) = middle;
  }
  PlanOptions options;
  options.memory_limit_bytes = high - 0.5 * weights;
  PlanProblem plan = build_problem(mlp, mesh, options);
  SolveResult result = solve_exactly(plan.problem);
  std::cout << "[ mlp budget ] data parallel peak " << free.evaluation.peak_usage / 1e6 << " MB (at least "
            << high / 1e6 << "), weights " << weights / 1e6 << " MB, limit " << *options.memory_limit_bytes / 1e6
            << " MB, peak " << result.evaluation.peak_usage / 1e6 << " MB, cost " << free.evaluation.cost * 1e6
            << " -> " << result.evaluation.cost * 1e6 << " us\n";
  ASSERT_TRUE(result.evaluation.feasible) << result.evaluation.violation;
  DecodedPlan decoded = decode(plan, result.choice);
  for (size_t i : weight_inputs) {
    std::cout << "               " << mlp.inputs[i].str() << ": " << placements_str(decoded.inputs[i]) << "\n";
    EXPECT_FALSE(is_replicated(decoded.inputs[i])) << mlp.inputs[i].str();
  }
  EXPECT_GE(result.evaluation.cost, free.evaluation.cost * (1 - 1e-9));
}

}  // namespace
}  // namespace px::plan
