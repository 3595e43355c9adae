// Constraints on a sharding plan: parameter memory, memory budget, input, output and node
// placements, gradient pairing, and the InfeasiblePlan messages when they cannot be met.

#include "parallax/plan/constraints.h"

#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <variant>

#include "parallax/core/error.h"
#include "parallax/plan/plan.h"
#include "plan/builder_models.h"
#include "plan/plan_test_util.h"
#include "support/test_util.h"

namespace px::plan {
namespace {

using testing::llama_joint;
using testing::mlp_joint;

SolveOptions exact() { return testing::exact_solver(); }

bool is_replicated(const std::vector<Placement>& placements) {
  for (const Placement& placement : placements) {
    if (!std::holds_alternative<Replicate>(placement)) return false;
  }
  return true;
}

JointProgram small_llama() { return llama_joint(testing::even_llama(), 2, 64); }

std::string infeasible_message(const std::function<void()>& run) {
  try {
    run();
  } catch (const InfeasiblePlan& error) {
    return error.what();
  }
  ADD_FAILURE() << "no InfeasiblePlan raised";
  return "";
}

TEST(Constraints, PatternsAndShares) {
  dist::DeviceMesh mesh({2, 4});
  PlacementPattern pattern{Shard{0}, std::nullopt};
  EXPECT_EQ(pattern_str(pattern), "[S(0), *]");
  EXPECT_TRUE(matches(pattern, std::vector<Placement>{Shard{0}, Replicate{}}));
  EXPECT_TRUE(matches(pattern, std::vector<Placement>{Shard{0}, Shard{1}}));
  EXPECT_FALSE(matches(pattern, std::vector<Placement>{Replicate{}, Shard{1}}));
  EXPECT_FALSE(matches(pattern, std::vector<Placement>{Shard{0}}));
  EXPECT_EQ(exactly(std::vector<Placement>{Replicate{}, Shard{1}}), (PlacementPattern{Replicate{}, Shard{1}}));
  EXPECT_DOUBLE_EQ(parameter_share(std::vector<Placement>{Replicate{}, Replicate{}}, mesh), 1.0);
  EXPECT_DOUBLE_EQ(parameter_share(std::vector<Placement>{Shard{0}, Replicate{}}, mesh), 0.5);
  EXPECT_DOUBLE_EQ(parameter_share(std::vector<Placement>{Shard{0}, Shard{1}}, mesh), 0.125);
  EXPECT_DOUBLE_EQ(parameter_share(std::vector<Placement>{Shard{0}, Shard{0}}, mesh), 0.125);
}

TEST(Constraints, NamesFindInputsAndOutputs) {
  JointProgram mlp = mlp_joint(16, 8, 32, 4);
  EXPECT_EQ(input_index(mlp, "mlp.fc1.weight"), 0);
  EXPECT_EQ(input_index(mlp, "Param(mlp.fc1.weight)"), 0);
  const int64_t x = input_index(mlp, "UserInput([0])");
  EXPECT_EQ(mlp.inputs[static_cast<size_t>(x)].kind, InputDescriptor::Kind::UserInput);
  EXPECT_EQ(output_index(mlp, "UserOutput(<root>)"), 0);
  EXPECT_EQ(output_index(mlp, "Grad(of: Param(mlp.fc1.weight))"), mlp.grad_output_of(mlp.inputs[0]));
  EXPECT_NE(px::testing::error_message([&] { input_index(mlp, "mlp.fc3.weight"); }).find("mlp.fc3.weight"),
            std::string::npos);
  EXPECT_THROW(output_index(mlp, "UserOutput([7])"), ValueError);
}

// Acceptance: a 1-D mesh of 8 with parameter memory high = 1/8 shards every parameter.
TEST(Constraints, ParameterMemoryOneEighthShardsEveryParameter) {
  JointProgram llama = small_llama();
  PlanProblem plan = build_problem(llama, dist::DeviceMesh({8}));
  ShardingPlan free = solve_plan(llama, plan, {}, exact());
  PlanConstraints constraints;
  constraints.parameter_memory = ParameterMemory{0, 1.0 / 8};
  ShardingPlan sharded = solve_plan(llama, plan, constraints, exact());
  ASSERT_TRUE(sharded.evaluation.feasible);
  ASSERT_FALSE(sharded.notes.empty());
  EXPECT_NE(sharded.notes[0].find("parameter memory [0, 1/8]"), std::string::npos) << sharded.notes[0];
  DecodedPlan decoded = decode(plan, sharded.choice);
  int64_t params = 0;
  for (size_t i = 0; i < llama.inputs.size(); ++i) {
    if (llama.inputs[i].kind != InputDescriptor::Kind::Param) continue;
    ++params;
    EXPECT_DOUBLE_EQ(parameter_share(decoded.inputs[i], plan.mesh), 1.0 / 8)
        << llama.inputs[i].str() << " " << placements_str(decoded.inputs[i]);
  }
  EXPECT_GT(params, 10);
  // Without the constraint this small model replicates its parameters; sharding costs time.
  EXPECT_GE(sharded.evaluation.cost, free.evaluation.cost * (1 - 1e-9));
  std::cout << "[ llama 1/8 ] free " << free.evaluation.cost * 1e6 << " us, peak " << free.evaluation.peak_usage / 1e6
            << " MB; sharded " << sharded.evaluation.cost * 1e6 << " us, peak " << sharded.evaluation.peak_usage / 1e6
            << " MB\n";
  EXPECT_LT(sharded.evaluation.peak_usage, free.evaluation.peak_usage);

  // low = 1 is the opposite: every parameter whole on every device.
  constraints.parameter_memory = ParameterMemory{1, 1};
  ShardingPlan whole = solve_plan(llama, plan, constraints, exact());
  DecodedPlan replicated = decode(plan, whole.choice);
  for (size_t i = 0; i < llama.inputs.size(); ++i) {
    if (llama.inputs[i].kind == InputDescriptor::Kind::Param) {
      EXPECT_TRUE(is_replicated(replicated.inputs[i]));
    }
  }
}

TEST(Constraints, ParameterMemoryHoldsUnshardableParametersAndTightensTheRest) {
  // fc2.bias is [2]: on 2x4 it splits over mesh dim 0 only (share 1/2 at best). With high = 1/4,
  // it is held at 1/2, and the others go down to 1/8 so that the sum stays within 1/4.
  JointProgram mlp = mlp_joint(64, 64, 256, 2);
  PlanProblem plan = build_problem(mlp, dist::DeviceMesh({2, 4}));
  PlanConstraints constraints;
  constraints.parameter_memory = ParameterMemory{0, 0.25};
  ConstrainedProblem constrained = apply_constraints(mlp, plan, constraints);
  ASSERT_EQ(constrained.notes.size(), 1u);
  EXPECT_NE(constrained.notes[0].find("held at their nearest share: Param(mlp.fc2.bias) at 1/2; to keep the sum "
                                      "within, the others at or below 1/8"),
            std::string::npos)
      << constrained.notes[0];
  for (size_t i = 0; i < mlp.inputs.size(); ++i) {
    const auto p = static_cast<size_t>(plan.input_node[i]);
    for (int64_t s : constrained.kept[p]) {
      if (mlp.inputs[i].kind != InputDescriptor::Kind::Param) continue;
      double share = parameter_share(plan.nodes[p].strategies[static_cast<size_t>(s)].outputs[0], plan.mesh);
      if (mlp.inputs[i].fqns[0] == "mlp.fc2.bias") {
        EXPECT_DOUBLE_EQ(share, 0.5);
      } else {
        EXPECT_LE(share, 0.125);
      }
    }
  }
  // The sum stays within high whatever the solver picks among what is kept.
  ShardingPlan result = solve_plan(mlp, plan, constraints, exact());
  double local = 0, total = 0;
  DecodedPlan decoded = decode(plan, result.choice);
  for (size_t i = 0; i < mlp.inputs.size(); ++i) {
    if (mlp.inputs[i].kind != InputDescriptor::Kind::Param) continue;
    double bytes = static_cast<double>(mlp.graph.meta(mlp.graph.inputs()[i]).nbytes());
    total += bytes;
    local += bytes * parameter_share(decoded.inputs[i], plan.mesh);
  }
  EXPECT_LE(local, 0.25 * total);
}

TEST(Constraints, UnreachableParameterMemoryNamesTheParameter) {
  // On a 1-D mesh of 8, fc2.bias [4] cannot be sharded at all: the smallest share reachable is
  // 1/8 for everything else and 1 for it.
  JointProgram mlp = mlp_joint(64, 64, 256, 4);
  PlanProblem plan = build_problem(mlp, dist::DeviceMesh({8}));
  PlanConstraints constraints;
  constraints.parameter_memory = ParameterMemory{0, 1.0 / 8};
  const std::string message = infeasible_message([&] { apply_constraints(mlp, plan, constraints); });
  std::cout << "[ message ] " << message << "\n";
  EXPECT_NE(message.find("InfeasiblePlan: parameter memory high = 1/8 of 70.7 KB (8.83 KB per device)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("the smallest reachable is 0.1252 (8.85 KB)"), std::string::npos) << message;
  EXPECT_NE(message.find("parameter Param(mlp.fc2.bias) (16 B) has no strategy below 1"), std::string::npos) << message;

  constraints.parameter_memory = ParameterMemory{0.5, 0.25};
  EXPECT_THROW(apply_constraints(mlp, plan, constraints), ValueError);
}

TEST(Constraints, InputOutputAndNodePlacements) {
  JointProgram mlp = mlp_joint(64, 32, 128, 16);
  PlanProblem plan = build_problem(mlp, dist::DeviceMesh({4}));
  const int64_t x = input_index(mlp, "UserInput([0])");
  const int64_t loss = output_index(mlp, "UserOutput(<root>)");
  PlanConstraints constraints;
  constraints.inputs.push_back({x, {Shard{1}}});
  constraints.inputs.push_back({input_index(mlp, "mlp.fc1.weight"), {Shard{0}}});
  constraints.outputs.push_back({loss, {Replicate{}}});
  // The first graph node (fc1's linear) must give its output whole.
  constraints.nodes.push_back({0, {}, {PlacementPattern{Replicate{}}}});
  ShardingPlan result = solve_plan(mlp, plan, constraints, exact());
  DecodedPlan decoded = decode(plan, result.choice);
  EXPECT_EQ(decoded.inputs[static_cast<size_t>(x)], std::vector<Placement>{Shard{1}});
  EXPECT_EQ(decoded.inputs[0], std::vector<Placement>{Shard{0}});
  EXPECT_EQ(decoded.nodes[0].outputs[0], std::vector<Placement>{Replicate{}});
  const ValueSource& source = plan.outputs[static_cast<size_t>(loss)];
  EXPECT_EQ(plan.nodes[static_cast<size_t>(source.node)]
                .strategies[static_cast<size_t>(result.choice[static_cast<size_t>(source.node)])]
                .outputs[static_cast<size_t>(source.output)],
            std::vector<Placement>{Replicate{}});
  // Constraints can only cost more than the free optimum.
  ShardingPlan free = solve_plan(mlp, plan, {}, exact());
  EXPECT_GE(result.evaluation.cost, free.evaluation.cost * (1 - 1e-9));

  // The constrained problem maps choices both ways.
  ConstrainedProblem constrained = apply_constraints(mlp, plan, constraints);
  std::optional<Choice> back = constrained.from_original(result.choice);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(constrained.to_original(*back), result.choice);
  EXPECT_FALSE(constrained.from_original(Choice(plan.nodes.size(), 0)).has_value());
}

TEST(Constraints, ImpossiblePlacementsRaiseInfeasiblePlan) {
  JointProgram mlp = mlp_joint(64, 32, 128, 4);
  PlanProblem plan = build_problem(mlp, dist::DeviceMesh({8}));
  // fc2.bias is [4]: Shard(0) over 8 devices would leave four of them empty.
  PlanConstraints constraints;
  constraints.inputs.push_back({input_index(mlp, "mlp.fc2.bias"), {Shard{0}}});
  std::string message = infeasible_message([&] { apply_constraints(mlp, plan, constraints); });
  EXPECT_NE(message.find("input Param(mlp.fc2.bias) = [S(0)]: graph input Param(mlp.fc2.bias) (f32[4]) has no such "
                         "strategy; its strategies: [R]"),
            std::string::npos)
      << message;

  // Two constraints on one value that contradict each other name both.
  constraints.inputs = {{0, {Shard{0}}}, {0, {Shard{1}}}};
  message = infeasible_message([&] { apply_constraints(mlp, plan, constraints); });
  EXPECT_NE(message.find("input Param(mlp.fc1.weight) = [S(1)]"), std::string::npos) << message;
  EXPECT_NE(message.find("once cut by input Param(mlp.fc1.weight) = [S(0)]"), std::string::npos) << message;

  // Malformed constraints are ValueErrors, not infeasibility.
  constraints.inputs = {{0, {Shard{0}, Replicate{}}}};
  EXPECT_THROW(apply_constraints(mlp, plan, constraints), ValueError);
  constraints.inputs = {{999, {Shard{0}}}};
  EXPECT_THROW(apply_constraints(mlp, plan, constraints), ValueError);
  constraints.inputs.clear();
  constraints.memory_budget_bytes = -1;
  EXPECT_THROW(apply_constraints(mlp, plan, constraints), ValueError);
  constraints.memory_budget_bytes.reset();
  constraints.nodes.push_back({0, {}, {PlacementPattern{Shard{0}}, PlacementPattern{Shard{0}}}});
  EXPECT_THROW(apply_constraints(mlp, plan, constraints), ValueError);  // linear has one output
}

TEST(Constraints, MemoryBudgetBelowTheLeastMemoryPlan) {
  JointProgram mlp = mlp_joint(4096, 512, 2048, 512);
  PlanProblem plan = build_problem(mlp, dist::DeviceMesh({4}));
  // The least any plan needs: every node at its smallest usage.
  double least = 0;
  {
    std::vector<double> delta;
    for (const ProblemNode& node : plan.problem.nodes) {
      if (delta.size() < static_cast<size_t>(node.end) + 1) delta.resize(static_cast<size_t>(node.end) + 1, 0);
      double smallest = *std::min_element(node.usages.begin(), node.usages.end());
      delta[static_cast<size_t>(node.start)] += smallest;
      delta[static_cast<size_t>(node.end)] -= smallest;
    }
    double usage = 0;
    for (double d : delta) least = std::max(least, usage += d);
  }
  PlanConstraints constraints;
  constraints.memory_budget_bytes = 0.9 * least;
  const std::string message = infeasible_message([&] { solve_plan(mlp, plan, constraints, exact()); });
  std::cout << "[ message ] " << message << "\n";
  EXPECT_NE(message.find("InfeasiblePlan: memory budget "), std::string::npos) << message;
  EXPECT_NE(message.find(": the least-memory plan needs "), std::string::npos) << message;
  EXPECT_NE(message.find(" at time step "), std::string::npos) << message;
  EXPECT_NE(message.find("of parameters with their gradients and optimizer states"), std::string::npos) << message;

  // Just above it, a plan exists, and it fits.
  constraints.memory_budget_bytes = 1.001 * least;
  ShardingPlan fitted = solve_plan(mlp, plan, constraints, exact());
  EXPECT_TRUE(fitted.evaluation.feasible) << fitted.evaluation.violation;
  EXPECT_LE(fitted.evaluation.peak_usage, *constraints.memory_budget_bytes);
  EXPECT_EQ(fitted.memory_budget, constraints.memory_budget_bytes);
}

TEST(Constraints, GradientsProducedInTheirParametersPlacement) {
  JointProgram mlp = mlp_joint(256, 64, 256, 64);
  PlanProblem plan = build_problem(mlp, dist::DeviceMesh({4}));
  PlanConstraints constraints;
  constraints.gradients = GradientPairing::Produced;
  ShardingPlan paired = solve_plan(mlp, plan, constraints, exact());
  ShardingPlan free = solve_plan(mlp, plan, {}, exact());
  EXPECT_GE(paired.evaluation.cost, free.evaluation.cost * (1 - 1e-9));
  DecodedPlan decoded = decode(plan, paired.choice);
  const ir::Graph& graph = mlp.graph;
  for (size_t i = 0; i < mlp.inputs.size(); ++i) {
    if (mlp.inputs[i].kind != InputDescriptor::Kind::Param) continue;
    const int64_t grad = mlp.grad_output_of(mlp.inputs[i]);
    ASSERT_GE(grad, 0);
    const ir::ValueId value = graph.outputs()[static_cast<size_t>(grad)];
    bool found = false;
    for (size_t n = 0; n < graph.nodes().size() && !found; ++n) {
      const auto& outputs = graph.nodes()[n].outputs;
      for (size_t o = 0; o < outputs.size(); ++o) {
        if (outputs[o] != value) continue;
        found = true;
        EXPECT_EQ(decoded.nodes[n].outputs[o], decoded.inputs[i]) << mlp.inputs[i].str();
      }
    }
    EXPECT_TRUE(found);
  }
}

}  // namespace
}  // namespace px::plan
