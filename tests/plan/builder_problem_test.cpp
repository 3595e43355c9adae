// build_problem on small models: problem shape, strategies, memory, edges, decode and
// restrict_strategies; device profiles and the roofline.

#include <gtest/gtest.h>

#include <algorithm>
#include <variant>

#include "parallax/capture/capture.h"
#include "parallax/core/error.h"
#include "parallax/dtensor/redistribute.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/factory.h"
#include "parallax/ops/reduction.h"
#include "parallax/ops/registry.h"
#include "parallax/plan/builder.h"
#include "parallax/plan/plan.h"
#include "plan/builder_models.h"

namespace px::plan {
namespace {

using testing::gpt_joint;
using testing::mlp_joint;

bool all_replicate(const std::vector<std::vector<Placement>>& lists) {
  for (const auto& placements : lists) {
    for (const Placement& placement : placements) {
      if (!std::holds_alternative<Replicate>(placement)) return false;
    }
  }
  return true;
}

// Checks what every problem must satisfy, whatever the model and mesh.
void check_problem(const PlanProblem& plan, const JointProgram& program) {
  SCOPED_TRACE(plan.problem.name);
  EXPECT_NO_THROW(plan.problem.validate());
  ASSERT_EQ(plan.nodes.size(), plan.problem.nodes.size());
  ASSERT_EQ(plan.input_node.size(), program.graph.inputs().size());
  ASSERT_EQ(plan.op_node.size(), program.graph.nodes().size());
  ASSERT_EQ(plan.outputs.size(), program.graph.outputs().size());
  for (const ValueSource& source : plan.outputs) {
    ASSERT_GE(source.node, 0);
    ASSERT_LT(source.node, static_cast<int64_t>(plan.nodes.size()));
    EXPECT_LT(source.output,
              static_cast<int64_t>(plan.nodes[static_cast<size_t>(source.node)].strategies[0].outputs.size()));
  }
  for (size_t p = 0; p < plan.nodes.size(); ++p) {
    const PlanNode& node = plan.nodes[p];
    SCOPED_TRACE(plan.problem.nodes[p].name);
    ASSERT_FALSE(node.strategies.empty());
    EXPECT_EQ(node.strategies.size(), plan.problem.nodes[p].costs.size());
    EXPECT_EQ(node.compute_seconds.size(), node.strategies.size());
    EXPECT_EQ(node.local_bytes.size(), node.strategies.size());
    // Strategy 0 is all-Replicate, for inputs and graph nodes alike.
    EXPECT_TRUE(all_replicate(node.strategies[0].inputs));
    EXPECT_TRUE(all_replicate(node.strategies[0].outputs));
    EXPECT_LE(plan.problem.nodes[p].start, plan.problem.nodes[p].end);
    for (double cost : plan.problem.nodes[p].costs) EXPECT_GE(cost, 0.0);
    for (double usage : plan.problem.nodes[p].usages) EXPECT_GE(usage, 0.0);
  }
  for (const ProblemEdge& edge : plan.problem.edges) EXPECT_LT(edge.from, edge.to);
  EXPECT_GT(plan.problem.num_strategies(), static_cast<int64_t>(plan.nodes.size()));
  EXPECT_LT(plan.problem.num_strategies(), static_cast<int64_t>(plan.nodes.size()) * 200);
}

TEST(BuilderProblem, SmallModelsOnSmallMeshes) {
  JointProgram mlp = mlp_joint(16, 8, 32, 4);
  JointProgram gpt = gpt_joint(nn::gpt_mini(), 4, 16);
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2}, {4}, {2, 2}}) {
    dist::DeviceMesh mesh(shape);
    PlanProblem mlp_plan = build_problem(mlp, mesh);
    check_problem(mlp_plan, mlp);
    // No layers in an MLP: one problem node per graph input and per graph node.
    EXPECT_EQ(mlp_plan.nodes.size(), mlp.graph.inputs().size() + mlp.graph.nodes().size());
    EXPECT_TRUE(mlp_plan.layer_groups.empty());
    PlanProblem gpt_plan = build_problem(gpt, mesh);
    check_problem(gpt_plan, gpt);
    ASSERT_EQ(gpt_plan.layer_groups.size(), 1u);
    EXPECT_EQ(gpt_plan.layer_groups[0].list_path, "model.h");
    EXPECT_EQ(gpt_plan.layer_groups[0].layers, (std::vector<int64_t>{0, 1}));
    EXPECT_LT(gpt_plan.nodes.size(), gpt.graph.inputs().size() + gpt.graph.nodes().size());
  }
}

TEST(BuilderProblem, InputStrategiesAreEveryNonEmptyShardCombination) {
  JointProgram mlp = mlp_joint(16, 8, 32, 4);
  // fc1.weight is [32, 8]: on a 2x2 mesh R/S(0)/S(1) per dim, all 9 combinations non-empty.
  PlanProblem plan = build_problem(mlp, dist::DeviceMesh({2, 2}));
  const PlanNode& weight = plan.nodes[static_cast<size_t>(plan.input_node[0])];
  EXPECT_EQ(plan.problem.nodes[static_cast<size_t>(plan.input_node[0])].name, "Param(mlp.fc1.weight)");
  EXPECT_EQ(weight.strategies.size(), 9u);
  EXPECT_EQ(weight.input_kind, InputDescriptor::Kind::Param);
  EXPECT_TRUE(weight.has_gradient);
  // y is int64 [16] and has no gradient; the loss's tangent is a scalar: Replicate only.
  for (size_t i = 0; i < mlp.inputs.size(); ++i) {
    if (mlp.inputs[i].kind == InputDescriptor::Kind::Tangent) {
      EXPECT_EQ(plan.nodes[static_cast<size_t>(plan.input_node[i])].strategies.size(), 1u);
    }
  }
  // fc2.bias is [4]: on a mesh of 8, S(0) would leave ranks 4..7 empty.
  PlanProblem eight = build_problem(mlp, dist::DeviceMesh({8}));
  EXPECT_EQ(eight.nodes[static_cast<size_t>(eight.input_node[3])].strategies.size(), 1u);
  EXPECT_EQ(eight.nodes[static_cast<size_t>(eight.input_node[0])].strategies.size(), 3u);
}

TEST(BuilderProblem, ParameterMemoryCarriesGradientAndOptimizerState) {
  JointProgram mlp = mlp_joint(16, 8, 32, 4);
  dist::DeviceMesh mesh({4});
  PlanProblem plan = build_problem(mlp, mesh);
  auto p = static_cast<size_t>(plan.input_node[0]);  // fc1.weight f32 [32, 8]: 1024 bytes
  const ProblemNode& weight = plan.problem.nodes[p];
  ASSERT_EQ(plan.nodes[p].strategies.size(), 3u);  // R, S(0), S(1)
  // Parameter, gradient, 2 AdamW states: 4 copies, sharded like the parameter; live the whole step.
  EXPECT_DOUBLE_EQ(weight.usages[0], 4 * 1024.0);
  EXPECT_DOUBLE_EQ(weight.usages[1], 4 * 256.0);
  EXPECT_DOUBLE_EQ(weight.usages[2], 4 * 256.0);
  EXPECT_EQ(weight.start, 0);
  int64_t last = 0;
  for (const ProblemNode& node : plan.problem.nodes) last = std::max(last, node.end);
  EXPECT_EQ(weight.end, last);

  PlanOptions options;
  options.optimizer_states = 0;
  PlanProblem sgd = build_problem(mlp, mesh, options);
  EXPECT_DOUBLE_EQ(sgd.problem.nodes[p].usages[0], 2 * 1024.0);
  options.optimizer_states = 2;
  options.optimizer_state_dtype = DType::Float64;
  PlanProblem wide = build_problem(mlp, mesh, options);
  EXPECT_DOUBLE_EQ(wide.problem.nodes[p].usages[0], (2 + 2 * 2) * 1024.0);
}

TEST(BuilderProblem, ParameterNodesPriceTheOptimizerUpdateOfTheirShard) {
  JointProgram mlp = mlp_joint(16, 8, 32, 4);
  dist::DeviceMesh mesh({4});
  PlanOptions options;
  options.device = reference_cpu();
  PlanProblem plan = build_problem(mlp, mesh, options);
  auto p = static_cast<size_t>(plan.input_node[0]);  // fc1.weight f32 [32, 8], R, S(0), S(1)
  const PlanNode& weight = plan.nodes[p];
  ASSERT_EQ(weight.strategies.size(), 3u);
  // AdamW on 256 elements: read parameter, gradient and 2 states, write parameter and states.
  const OpCost whole = optimizer_update_cost(256, DType::Float32, DType::Float32, 2);
  EXPECT_DOUBLE_EQ(whole.bytes_read, 256 * 16.0);
  EXPECT_DOUBLE_EQ(whole.bytes_written, 256 * 12.0);
  EXPECT_DOUBLE_EQ(whole.flops, 256 * 14.0);
  const double replicated = priced_seconds(kOptimizerUpdateOp, whole, false, DType::Float32, options.device);
  const double sharded =
      priced_seconds(kOptimizerUpdateOp, optimizer_update_cost(64, DType::Float32, DType::Float32, 2), false,
                     DType::Float32, options.device);
  EXPECT_GT(replicated, sharded);  // every replica repeats the update; a shard updates a quarter
  EXPECT_DOUBLE_EQ(weight.compute_seconds[0], replicated);
  EXPECT_DOUBLE_EQ(weight.compute_seconds[1], sharded);
  EXPECT_DOUBLE_EQ(weight.compute_seconds[2], sharded);
  EXPECT_DOUBLE_EQ(plan.problem.nodes[p].costs[0], replicated);
  // No gradient, no update: the int64 targets and the loss's tangent cost nothing.
  int64_t without_gradient = 0;
  for (size_t i = 0; i < mlp.inputs.size(); ++i) {
    const PlanNode& input = plan.nodes[static_cast<size_t>(plan.input_node[i])];
    if (input.has_gradient) continue;
    ++without_gradient;
    for (double seconds : input.compute_seconds) EXPECT_EQ(seconds, 0.0);
  }
  EXPECT_GE(without_gradient, 2);
  // SGD without momentum reads parameter and gradient and writes the parameter only.
  options.optimizer_states = 0;
  PlanProblem sgd = build_problem(mlp, mesh, options);
  EXPECT_LT(sgd.nodes[p].compute_seconds[0], replicated);
  // A calibrated timing for the update replaces the roofline.
  options.optimizer_states = 2;
  options.device.op_timings[op_timing_key(kOptimizerUpdateOp, DType::Float32)] = OpTiming{1e-3, 0, 1e-6, 3, 0, 0};
  PlanProblem calibrated = build_problem(mlp, mesh, options);
  EXPECT_DOUBLE_EQ(calibrated.nodes[p].compute_seconds[1], 1e-3 + 64 * 28 * 1e-6);
}

TEST(BuilderProblem, GradientEdgePricesTheRedistributionToTheParameter) {
  JointProgram mlp = mlp_joint(64, 16, 32, 4);
  dist::DeviceMesh mesh({4});
  PlanProblem plan = build_problem(mlp, mesh);
  // fc1.weight's gradient: the node producing it, and the edge from there to the parameter.
  int64_t grad_output = mlp.grad_output_of(mlp.inputs[0]);
  ASSERT_GE(grad_output, 0);
  ir::ValueId grad = mlp.graph.outputs()[static_cast<size_t>(grad_output)];
  int64_t producer = -1;
  for (size_t n = 0; n < mlp.graph.nodes().size(); ++n) {
    for (ir::ValueId output : mlp.graph.nodes()[n].outputs) {
      if (output == grad) producer = plan.op_node[n];
    }
  }
  ASSERT_GE(producer, 0);
  int64_t param = plan.input_node[0];
  const ProblemEdge* edge = nullptr;
  for (const ProblemEdge& e : plan.problem.edges) {
    if (e.from == std::min(param, producer) && e.to == std::max(param, producer)) edge = &e;
  }
  ASSERT_NE(edge, nullptr);
  ASSERT_LT(param, producer);  // so the parameter's strategies are the rows
  // The producer's strategy with a Partial(sum) output (batch-sharded matmul), into a replicated
  // parameter: exactly one all_reduce of the weight's 2 KiB.
  const PlanNode& node = plan.nodes[static_cast<size_t>(producer)];
  size_t width = node.strategies.size();
  bool found = false;
  for (size_t s = 0; s < width; ++s) {
    if (node.strategies[s].outputs[0][0] != Placement{Partial{ReduceOp::Sum}}) continue;
    double expected = dist::all_reduce_cost(4, 32 * 16 * 4, plan.topology.link(0));
    EXPECT_NEAR(edge->costs[0 * width + s], expected, 1e-12 * expected);
    found = true;
  }
  EXPECT_TRUE(found);
}

TEST(BuilderProblem, DecodeFindAndRestrict) {
  JointProgram mlp = mlp_joint(16, 8, 32, 4);
  PlanProblem plan = build_problem(mlp, dist::DeviceMesh({2}));
  Choice zeros(plan.nodes.size(), 0);
  DecodedPlan decoded = decode(plan, zeros);
  ASSERT_EQ(decoded.inputs.size(), mlp.graph.inputs().size());
  ASSERT_EQ(decoded.nodes.size(), mlp.graph.nodes().size());
  for (const auto& placements : decoded.inputs) EXPECT_EQ(placements, std::vector<Placement>{Replicate{}});
  EXPECT_THROW(decode(plan, Choice(plan.nodes.size() + 1, 0)), ValueError);
  Choice bad = zeros;
  bad[0] = 99;
  EXPECT_THROW(decode(plan, bad), ValueError);

  std::vector<Placement> shard0{Shard{0}};
  std::optional<int64_t> s = find_input_strategy(plan, 0, shard0);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(plan.nodes[static_cast<size_t>(plan.input_node[0])].strategies[static_cast<size_t>(*s)].outputs[0], shard0);
  std::vector<Placement> partial{Partial{ReduceOp::Sum}};
  EXPECT_FALSE(find_input_strategy(plan, 0, partial).has_value());
  EXPECT_THROW(find_input_strategy(plan, 99, shard0), ValueError);

  // Keep only Shard(0) for fc1.weight: the cut problem prices the same as the original on the
  // same choice.
  std::vector<std::vector<bool>> keep;
  for (const PlanNode& node : plan.nodes) keep.emplace_back(node.strategies.size(), true);
  auto w = static_cast<size_t>(plan.input_node[0]);
  std::fill(keep[w].begin(), keep[w].end(), false);
  keep[w][static_cast<size_t>(*s)] = true;
  std::vector<std::vector<int64_t>> kept;
  PlanProblem cut = restrict_strategies(plan, keep, &kept);
  EXPECT_NO_THROW(cut.problem.validate());
  EXPECT_EQ(cut.nodes[w].strategies.size(), 1u);
  EXPECT_EQ(kept[w], std::vector<int64_t>{*s});
  Choice original = zeros, in_cut = zeros;
  original[w] = *s;
  in_cut[w] = 0;
  EXPECT_DOUBLE_EQ(evaluate(cut.problem, in_cut).cost, evaluate(plan.problem, original).cost);
  EXPECT_EQ(decode(cut, in_cut).inputs[0], shard0);
  keep[w].assign(keep[w].size(), false);
  EXPECT_THROW(restrict_strategies(plan, keep), ValueError);
}

TEST(BuilderProblem, RejectsBadOptions) {
  JointProgram mlp = mlp_joint(16, 8, 32, 4);
  dist::DeviceMesh mesh({2});
  PlanOptions options;
  options.optimizer_states = -1;
  EXPECT_THROW(build_problem(mlp, mesh, options), ValueError);
  options = {};
  options.memory_limit_bytes = 0.0;
  EXPECT_THROW(build_problem(mlp, mesh, options), ValueError);
  options = {};
  options.topology = dist::MeshTopology::uniform(2, dist::nvlink4_h100());  // a 2-D topology, 1-D mesh
  EXPECT_THROW(build_problem(mlp, mesh, options), ValueError);
  options = {};
  options.device.vector_flops_per_s = 0;
  EXPECT_THROW(build_problem(mlp, mesh, options), ValueError);
  JointProgram broken = mlp;
  broken.inputs.pop_back();
  EXPECT_THROW(build_problem(broken, mesh), ValueError);
}

TEST(DeviceProfile, PublishedFiguresAndRoofline) {
  for (const DeviceProfile& device : {h100(), h200(), a100(), reference_cpu()}) {
    SCOPED_TRACE(device.name);
    EXPECT_NO_THROW(device.validate());
    EXPECT_GE(device.matmul_flops_per_s, device.vector_flops_per_s);
  }
  EXPECT_DOUBLE_EQ(h100().matmul_flops_per_s, h200().matmul_flops_per_s);
  EXPECT_GT(h200().memory_bytes_per_s, h100().memory_bytes_per_s);
  EXPECT_GT(h200().memory_capacity_bytes, h100().memory_capacity_bytes);
  EXPECT_GT(h100().matmul_flops_per_s, a100().matmul_flops_per_s);

  // A 4096^3 float32 GEMM is compute-bound at the TF32 peak; in bf16 at the BF16 peak.
  const DeviceProfile device = h100();
  const OpDef& matmul = builtin_registry().get("matmul");
  TensorMeta square{{4096, 4096}, DType::Float32};
  double flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
  EXPECT_DOUBLE_EQ(op_seconds(matmul, {square, square}, {square}, {}, device), flops / device.matmul_fp32_flops_per_s);
  TensorMeta half{{4096, 4096}, DType::BFloat16};
  EXPECT_DOUBLE_EQ(op_seconds(matmul, {half, half}, {half}, {}, device), flops / device.matmul_flops_per_s);
  // An elementwise add is memory-bound: three tensors moved.
  const OpDef& add = builtin_registry().get("add");
  EXPECT_DOUBLE_EQ(op_seconds(add, {square, square}, {square}, {}, device),
                   3.0 * static_cast<double>(square.nbytes()) / device.memory_bytes_per_s);
  EXPECT_DOUBLE_EQ(roofline_seconds(OpCost{1e9, 0, 0}, false, DType::Float32, device), 1e9 / device.vector_flops_per_s);

  // 8x8 H100 cluster: dim 0 crosses nodes (InfiniBand), dim 1 stays inside one (NVLink).
  dist::MeshTopology topology = cluster_topology(dist::DeviceMesh({8, 8}), device);
  EXPECT_EQ(topology.link(0), device.inter_node_link);
  EXPECT_EQ(topology.link(1), device.intra_node_link);
}

// A factory op has no sharding rule: the builder computes it whole on every device and every
// plan's notes say so, by op and count, instead of replicating it unannounced.
TEST(BuildProblem, FactoriesWithoutRulesAreReported) {
  auto scaled_sum = [](const Tensor& x) { return px::sum(x * px::full(x.shape(), 2.0, x.dtype())); };
  CapturedProgram program = capture(scaled_sum, std::make_tuple(Tensor::meta({8, 4}, DType::Float32)));
  const JointProgram joint = export_joint(program);
  const PlanProblem plan = build_problem(joint, dist::DeviceMesh({2}));
  ASSERT_EQ(plan.notes.size(), 1u);
  // The forward's full, and the backward's seed of the sum's gradient.
  EXPECT_EQ(plan.notes[0].rfind("computed whole on every device (factories without a sharding rule): ", 0), 0u)
      << plan.notes[0];
  EXPECT_NE(plan.notes[0].find("full f32[8,4]"), std::string::npos) << plan.notes[0];
  const ShardingPlan solved = solve_plan(joint, plan, {}, {});
  EXPECT_NE(std::find(solved.notes.begin(), solved.notes.end(), plan.notes[0]), solved.notes.end());
}

}  // namespace
}  // namespace px::plan
