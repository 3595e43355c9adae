// Activation checkpointing in the sharding problem: candidates get recomputing strategies (twice
// the compute and the transfers in, one copy instead of one per layer), the solver recomputes
// only when the memory budget asks for it, and the report says what each layer group recomputes.

#include <gtest/gtest.h>

#include "parallax/autodiff/training_step.h"
#include "parallax/core/error.h"
#include "parallax/nn/zoo.h"
#include "parallax/plan/plan.h"
#include "parallax/plan/report.h"

namespace px::plan {
namespace {

MixedPrecisionPolicy recipe() { return {DType::BFloat16, DType::Float32, std::nullopt}; }

struct Planned {
  JointProgram program;
  PlanProblem problem;
};

Planned planned(const std::string& model, int64_t batch, int64_t seq, Checkpointing policy,
                const std::vector<int64_t>& mesh = {8, 8}) {
  Planned out{training_step_joint(nn::zoo_model(model), batch, seq, recipe()), {}};
  PlanOptions options;
  options.precision = recipe();
  options.checkpointing = policy;
  out.problem = build_problem(out.program, dist::DeviceMesh(mesh), options);
  return out;
}

PlanConstraints budget(double bytes) {
  PlanConstraints constraints;
  constraints.memory_budget_bytes = bytes;
  return constraints;
}

bool recomputes(const PlanProblem& problem, const ShardingPlan& plan) {
  return !decode(problem, plan.choice).recompute.empty();
}

TEST(CheckpointingPlan, RecomputingStrategiesCostTwiceAndHoldOneCopy) {
  const Planned none = planned("llama3-8b", 16, 2048, Checkpointing::None);
  const Planned autos = planned("llama3-8b", 16, 2048, Checkpointing::Auto);
  ASSERT_EQ(none.problem.nodes.size(), autos.problem.nodes.size());
  int64_t candidates = 0;
  for (size_t p = 0; p < autos.problem.nodes.size(); ++p) {
    const PlanNode& node = autos.problem.nodes[p];
    EXPECT_TRUE(none.problem.nodes[p].recompute.empty());
    if (node.recompute.empty()) continue;
    ++candidates;
    const size_t count = none.problem.nodes[p].strategies.size();
    ASSERT_EQ(node.strategies.size(), 2 * count) << autos.problem.problem.nodes[p].name;
    EXPECT_EQ(node.live_copies, 32);  // every layer's copy waits for the backward
    EXPECT_EQ(node.recompute_copies, 1);
    for (size_t s = 0; s < count; ++s) {
      EXPECT_FALSE(node.recompute[s]);
      EXPECT_TRUE(node.recompute[count + s]);
      EXPECT_DOUBLE_EQ(node.compute_seconds[count + s], 2 * node.compute_seconds[s]);
      const ProblemNode& costs = autos.problem.problem.nodes[p];
      EXPECT_DOUBLE_EQ(costs.usages[count + s] * 32, costs.usages[s]);
    }
  }
  EXPECT_GT(candidates, 5);
}

TEST(CheckpointingPlan, PoliciesFixTheChoice) {
  const Planned selective = planned("llama-mini", 8, 16, Checkpointing::Selective, {2});
  const Planned full = planned("llama-mini", 8, 16, Checkpointing::Full, {2});
  for (const Planned* planned : {&selective, &full}) {
    for (const PlanNode& node : planned->problem.nodes) {
      if (node.recompute.empty()) continue;
      for (bool flag : node.recompute) EXPECT_EQ(flag, node.recompute.front());  // one variant only
    }
  }
  for (size_t p = 0; p < selective.problem.nodes.size(); ++p) {
    const PlanNode& node = selective.problem.nodes[p];
    if (node.recompute.empty()) continue;
    const ir::Node& op = selective.program.graph.nodes()[static_cast<size_t>(node.members[0])];
    EXPECT_EQ(node.recompute.front(), !op.op->traits.matmul_like) << op.op->name;
  }
  EXPECT_THROW(parse_checkpointing("sometimes"), ValueError);
  EXPECT_EQ(parse_checkpointing("selective"), Checkpointing::Selective);
}

// AutoParallel's LLaMA-3-70B recipe (bf16, reduce f32) on 8x8 H100s: without checkpointing no
// plan fits 80 GB; with the choice in the problem the solver finds one that recomputes, and
// says so per layer group. llama3-8b fits as it is: nothing is recomputed.
TEST(CheckpointingPlan, TheBudgetDecidesWhetherToRecompute) {
  const Planned none = planned("llama3-70b", 16, 8192, Checkpointing::None);
  EXPECT_THROW(solve_plan(none.program, none.problem, budget(80e9)), InfeasiblePlan);
  const Planned big = planned("llama3-70b", 16, 8192, Checkpointing::Auto);
  const ShardingPlan fitted = solve_plan(big.program, big.problem, budget(80e9));
  EXPECT_TRUE(fitted.evaluation.feasible);
  EXPECT_LE(fitted.evaluation.peak_usage, 80e9);
  EXPECT_TRUE(recomputes(big.problem, fitted));
  const PlanReport report = make_report(big.program, big.problem, fitted);
  ASSERT_EQ(report.checkpointing.size(), 1u);
  EXPECT_EQ(report.checkpointing[0].layers, "model.layers x80");
  EXPECT_FALSE(report.checkpointing[0].recomputed.empty());
  EXPECT_GT(report.checkpointing[0].bytes_saved, 1e9);
  EXPECT_GT(report.checkpointing[0].seconds_added, 0);
  EXPECT_NE(format_report(report).find("activation checkpointing per layer group:"), std::string::npos);

  const Planned small = planned("llama3-8b", 16, 8192, Checkpointing::Auto);
  const ShardingPlan kept = solve_plan(small.program, small.problem, budget(80e9));
  EXPECT_FALSE(recomputes(small.problem, kept));
}

}  // namespace
}  // namespace px::plan
