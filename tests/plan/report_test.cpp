// Plan reports (parameter table, collectives, time split, memory), plans as JSON, and explain().

#include "parallax/plan/report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "parallax/core/error.h"
#include "parallax/plan/baselines.h"
#include "plan/builder_models.h"
#include "plan/plan_test_util.h"
#include "support/test_util.h"

namespace px::plan {
namespace {

using testing::llama_joint;
using testing::mlp_joint;

SolveOptions exact() { return testing::exact_solver(); }

JointProgram small_llama(int64_t layers = 2) { return llama_joint(testing::even_llama(layers), 8, 64); }

void expect_near_relative(double actual, double expected, double tolerance = 1e-9) {
  EXPECT_NEAR(actual, expected, tolerance * std::max(std::fabs(expected), 1e-12));
}

// The report's parts add up: compute + communication = cost, the collectives' seconds = the
// communication, the memory categories = the peak.
void check_consistent(const JointProgram& program, const PlanProblem& plan, const ShardingPlan& sharding) {
  PlanReport report = make_report(program, plan, sharding);
  SCOPED_TRACE(report.label);
  expect_near_relative(report.compute_seconds + report.communication_seconds, report.step_seconds);
  double collective_seconds = 0;
  for (const CollectiveRow& row : report.collectives) {
    EXPECT_GT(row.count, 0);
    EXPECT_GT(row.bytes, 0);
    collective_seconds += row.seconds;
  }
  expect_near_relative(collective_seconds, report.communication_seconds, 1e-6);
  const MemoryBreakdown& memory = report.memory;
  expect_near_relative(memory.parameter_bytes + memory.activation_bytes + memory.other_input_bytes, memory.peak_bytes,
                       1e-9);
  int64_t params = 0;
  for (const InputDescriptor& input : program.inputs) params += input.kind == InputDescriptor::Kind::Param ? 1 : 0;
  EXPECT_EQ(static_cast<int64_t>(report.parameters.size()), params);
  // The predicted peak times the gradients: between the budget check (every gradient held all
  // step) less every gradient, and the budget check itself.
  double gradients = 0;
  for (const ParameterRow& row : report.parameters) gradients += row.local_bytes;
  EXPECT_LE(memory.peak_bytes, memory.budget_check_bytes * (1 + 1e-12));
  EXPECT_GE(memory.peak_bytes, (memory.budget_check_bytes - gradients) * (1 - 1e-12));
  expect_near_relative(memory.budget_check_bytes, sharding.evaluation.peak_usage);
}

TEST(Report, DataParallelMlp) {
  JointProgram mlp = mlp_joint(32768, 512, 2048, 512);
  PlanProblem plan = build_problem(mlp, dist::DeviceMesh({8}));
  // Parameters whole on every device: left free, the solver shards the biases, whose
  // all-reduce costs what a reduce-scatter and an all-gather cost and whose update is then an
  // eighth.
  PlanConstraints replicated;
  replicated.parameter_memory = ParameterMemory{1, 1};
  ShardingPlan sharding = solve_plan(mlp, plan, replicated, exact());
  check_consistent(mlp, plan, sharding);
  PlanReport report = make_report(mlp, plan, sharding);
  std::cout << format_report(report);
  // Data parallel: one all-reduce per parameter gradient, of its full size, and nothing else.
  ASSERT_EQ(report.collectives.size(), 1u);
  EXPECT_EQ(report.collectives[0].kind, "all_reduce");
  EXPECT_EQ(report.collectives[0].mesh_dim, 0);
  EXPECT_EQ(report.collectives[0].count, 4);
  double param_bytes = 0;
  for (const ParameterRow& row : report.parameters) {
    EXPECT_EQ(row.placements, std::vector<Placement>{Replicate{}});
    EXPECT_DOUBLE_EQ(row.share, 1.0);
    EXPECT_DOUBLE_EQ(row.local_bytes, static_cast<double>(row.meta.nbytes()));
    EXPECT_DOUBLE_EQ(row.state_bytes, 4 * row.local_bytes);  // parameter, gradient, two AdamW states
    param_bytes += row.local_bytes;
  }
  EXPECT_DOUBLE_EQ(report.collectives[0].bytes, param_bytes);
  EXPECT_EQ(report.parameters[0].name, "mlp.fc1.weight");
  const std::string text = format_report(report);
  EXPECT_NE(text.find("plan 'solver': step "), std::string::npos);
  EXPECT_NE(text.find("all_reduce      mesh dim 0  4x"), std::string::npos) << text;
  EXPECT_NE(text.find("mlp.fc1.weight  f32[2048,512]"), std::string::npos) << text;
}

TEST(Report, ShardedPlansOnTwoDimensionalMeshesAddUp) {
  JointProgram llama = small_llama();
  PlanProblem plan = build_problem(llama, dist::DeviceMesh({2, 4}));
  SolveOptions fast;
  fast.solver = SolverKind::Fast;
  fast.time_limit_s = 20;
  check_consistent(llama, plan, solve_plan(llama, plan, {}, fast));
  for (const BaselineKind kind : baseline_kinds(plan.mesh)) {
    Baseline baseline = make_baseline(kind, llama, plan);
    check_consistent(llama, plan, solve_plan(llama, plan, baseline.constraints, fast, baseline.name));
  }
  // A clustered plan reports what the same plan reports unclustered: collectives count every layer.
  PlanOptions flat_options;
  flat_options.cluster_layers = false;
  PlanProblem flat = build_problem(llama, plan.mesh, flat_options);
  ShardingPlan clustered = solve_plan(llama, plan, make_baseline(BaselineKind::Fsdp, llama, plan).constraints, fast);
  ShardingPlan lifted = plan_from_json(llama, flat, plan_to_json(llama, plan, clustered));
  expect_near_relative(lifted.evaluation.cost, clustered.evaluation.cost, 1e-9);
  PlanReport a = make_report(llama, plan, clustered), b = make_report(llama, flat, lifted);
  ASSERT_EQ(a.collectives.size(), b.collectives.size());
  for (size_t k = 0; k < a.collectives.size(); ++k) {
    EXPECT_EQ(a.collectives[k].count, b.collectives[k].count);
    expect_near_relative(a.collectives[k].bytes, b.collectives[k].bytes);
  }
}

TEST(Report, PlansRoundTripThroughJson) {
  JointProgram llama = small_llama();
  PlanProblem plan = build_problem(llama, dist::DeviceMesh({4}));
  PlanConstraints constraints;
  constraints.parameter_memory = ParameterMemory{0, 0.25};
  ShardingPlan sharding = solve_plan(llama, plan, constraints, exact());
  const std::string json = plan_to_json(llama, plan, sharding);
  EXPECT_NE(json.find("\"format\": \"parallax-plan\""), std::string::npos);
  EXPECT_NE(json.find("\"graph\": \"llama.joint\""), std::string::npos);
  EXPECT_NE(json.find("\"placements\": \"[S("), std::string::npos);
  ShardingPlan loaded = plan_from_json(llama, plan, json);
  EXPECT_EQ(loaded.choice, sharding.choice);
  EXPECT_DOUBLE_EQ(loaded.evaluation.cost, sharding.evaluation.cost);
  EXPECT_EQ(loaded.label, "solver");
  EXPECT_EQ(loaded.solver, "loaded");

  // Files, gzipped too.
  const auto dir = std::filesystem::temp_directory_path() / ("px_plan_report_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const char* name : {"plan.json", "plan.json.gz"}) {
    const std::string path = (dir / name).string();
    save_plan(llama, plan, sharding, path);
    EXPECT_EQ(load_plan(llama, plan, path).choice, sharding.choice) << name;
  }
  std::filesystem::remove_all(dir);

  // Another model, another mesh: refused, naming both.
  JointProgram other = small_llama(3);
  PlanProblem other_plan = build_problem(other, dist::DeviceMesh({4}));
  std::string message = px::testing::error_message([&] { plan_from_json(other, other_plan, json); });
  EXPECT_NE(message.find("ValueError: plan_from_json: the plan was made for graph 'llama.joint' (hash "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("24 inputs, 198 nodes) on mesh [d0=4], not for this problem's graph 'llama.joint' (hash "),
            std::string::npos)
      << message;
  EXPECT_EQ(fingerprint(llama, plan).graph, "llama.joint");
  EXPECT_NE(fingerprint(llama, plan).graph_hash, fingerprint(other, other_plan).graph_hash);
  PlanProblem other_mesh = build_problem(llama, dist::DeviceMesh({2, 2}));
  message = px::testing::error_message([&] { plan_from_json(llama, other_mesh, json); });
  EXPECT_NE(message.find("on mesh [d0=4], not for this problem's graph 'llama.joint'"), std::string::npos) << message;
  EXPECT_NE(message.find("on mesh [d0=2, d1=2]"), std::string::npos) << message;

  // Malformed files.
  // Malformed files: a ParseError at the line and column of the entry, naming its JSON path.
  EXPECT_THROW(plan_from_json(llama, plan, "{"), ParseError);
  message = px::testing::error_message([&] { plan_from_json(llama, plan, "{\n \"format\": \"something else\"}"); });
  EXPECT_NE(message.find("ParseError at 2:12: plan_from_json: plan.format: not a Parallax plan"), std::string::npos)
      << message;
  std::string broken = json;
  const std::string good = "\"placements\": \"[S(";
  const size_t at = broken.find(good);
  broken.replace(at, good.size(), "\"placements\": \"[X(");
  try {
    plan_from_json(llama, plan, broken);
    ADD_FAILURE() << "a plan with an unknown placement loaded";
  } catch (const ParseError& error) {
    const std::string before = broken.substr(0, at);
    const int64_t line = static_cast<int64_t>(std::count(before.begin(), before.end(), '\n')) + 1;
    EXPECT_EQ(error.line(), line);
    EXPECT_NE(error.detail().find("plan_from_json: plan.inputs["), std::string::npos) << error.what();
    EXPECT_NE(error.detail().find("].placements: "), std::string::npos) << error.what();
  }
  std::string short_nodes = json;
  short_nodes.replace(short_nodes.find("\"nodes\": ["), 10, "\"nodes\": [], \"unused\": [");
  message = px::testing::error_message([&] { plan_from_json(llama, plan, short_nodes); });
  EXPECT_NE(message.find("plan.nodes: lists 0 nodes; the graph has 198"), std::string::npos) << message;
}

TEST(Report, ExplainComparesTheChosenStrategyWithItsAlternatives) {
  JointProgram mlp = mlp_joint(32768, 512, 2048, 512);
  PlanProblem plan = build_problem(mlp, dist::DeviceMesh({8}));
  ShardingPlan sharding = solve_plan(mlp, plan, {}, exact());
  const int64_t weight = find_plan_node(mlp, plan, "mlp.fc1.weight");
  EXPECT_EQ(weight, plan.input_node[0]);
  Explanation explanation = explain(plan, sharding, weight);
  ASSERT_EQ(explanation.strategies.size(), 3u);  // R, S(0), S(1)
  EXPECT_TRUE(explanation.strategies[0].chosen);
  EXPECT_EQ(explanation.strategies[0].name, "[R]");
  for (const StrategyCost& cost : explanation.strategies) {
    // The ILP's optimum: no single change makes it cheaper.
    EXPECT_GE(cost.delta_seconds, -1e-12) << cost.name;
    EXPECT_NEAR(cost.total_seconds, cost.node_seconds + cost.edge_seconds, 1e-15);
    EXPECT_TRUE(cost.fits);
    if (!cost.chosen) {
      EXPECT_LT(cost.usage, explanation.strategies[0].usage);
    }
  }
  const std::string text = explanation.str();
  std::cout << text;
  EXPECT_NE(text.find("explain 'Param(mlp.fc1.weight)':"), std::string::npos) << text;
  EXPECT_NE(text.find("* [R] "), std::string::npos) << text;
  EXPECT_NE(text.find("chosen"), std::string::npos) << text;

  // Under a budget and constraints: alternatives that overflow or were cut say so.
  PlanConstraints constraints;
  constraints.inputs.push_back({0, {Replicate{}}});
  constraints.memory_budget_bytes = sharding.evaluation.peak_usage;
  ConstrainedProblem constrained = apply_constraints(mlp, plan, constraints);
  ShardingPlan budgeted = solve_plan(mlp, plan, constraints, exact());
  Explanation cut = explain(plan, budgeted, weight, &constrained);
  for (const StrategyCost& cost : cut.strategies) EXPECT_EQ(cost.allowed, cost.name == "[R]") << cost.name;
  EXPECT_NE(cut.str().find("(cut by the constraints)"), std::string::npos);

  // A graph node by its name, or a unique part of it.
  const int64_t linear = find_plan_node(mlp, plan, "linear @mlp.fc1 (forward)");
  EXPECT_EQ(linear, plan.op_node[0]);
  EXPECT_NE(explain(plan, sharding, linear).str().find("explain 'linear @mlp.fc1 (forward)'"), std::string::npos);
  EXPECT_THROW(find_plan_node(mlp, plan, "@mlp.fc1"), ValueError);  // many nodes
  EXPECT_THROW(find_plan_node(mlp, plan, "no such node"), ValueError);
  EXPECT_THROW(explain(plan, sharding, -1), ValueError);
}

TEST(Report, PriceGivenChoicesAndCompare) {
  JointProgram mlp = mlp_joint(4096, 256, 1024, 256);
  PlanProblem plan = build_problem(mlp, dist::DeviceMesh({4}));
  ShardingPlan replicated = price_plan(plan, Choice(plan.nodes.size(), 0), "replicated");
  EXPECT_EQ(replicated.solver, "given");
  EXPECT_DOUBLE_EQ(replicated.communication_seconds, 0.0);  // all-Replicate moves nothing
  EXPECT_GT(replicated.compute_seconds, 0);
  ShardingPlan solved = solve_plan(mlp, plan, {}, exact());
  const std::string table = format_comparison({make_report(mlp, plan, solved), make_report(mlp, plan, replicated)});
  std::cout << table;
  EXPECT_NE(table.find("solver "), std::string::npos);
  EXPECT_NE(table.find("replicated "), std::string::npos);
  EXPECT_NE(table.find("1x"), std::string::npos);
  EXPECT_THROW(price_plan(plan, Choice(3, 0)), ValueError);
}

}  // namespace
}  // namespace px::plan
