// The planner under a mixed-precision policy: compute priced at the bf16 rate, memory with
// float32 masters, optimizer states and gradients plus bf16 compute copies, and each gradient
// reduced in the policy's reduce dtype (the edge into the cast back to float32 forbids the other).

#include <gtest/gtest.h>

#include <map>

#include "parallax/autodiff/training_step.h"
#include "parallax/core/error.h"
#include "parallax/nn/zoo.h"
#include "parallax/plan/baselines.h"
#include "parallax/plan/report.h"

namespace px::plan {
namespace {

MixedPrecisionPolicy policy(DType reduce) { return {DType::BFloat16, reduce, DType::Float32}; }

bool any_partial(const std::vector<Placement>& placements) {
  for (const Placement& placement : placements) {
    if (is_partial(placement)) return true;
  }
  return false;
}

// Per parameter gradient that leaves the backward through a cast: the placements its input
// arrives in from the producer, and the placements the cast reads it in.
struct GradientCast {
  std::vector<Placement> produced, read;
};

std::vector<GradientCast> gradient_casts(const JointProgram& program, const PlanProblem& problem,
                                         const ShardingPlan& plan) {
  const ir::Graph& graph = program.graph;
  const DecodedPlan decoded = decode(problem, plan.choice);
  std::map<ir::ValueId, std::pair<int64_t, size_t>> producer;  // value -> (node, output)
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    for (size_t o = 0; o < graph.nodes()[n].outputs.size(); ++o) {
      producer[graph.nodes()[n].outputs[o]] = {static_cast<int64_t>(n), o};
    }
  }
  std::vector<GradientCast> casts;
  for (const InputDescriptor& input : program.inputs) {
    if (input.kind != InputDescriptor::Kind::Param || program.grad_output_of(input) < 0) continue;
    const auto [n, o] = producer.at(graph.outputs()[static_cast<size_t>(program.grad_output_of(input))]);
    const ir::Node& cast = graph.nodes()[static_cast<size_t>(n)];
    if (cast.op->name != "cast") continue;
    const auto [m, k] = producer.at(cast.inputs[0]);
    casts.push_back(
        {decoded.nodes[static_cast<size_t>(m)].outputs[k], decoded.nodes[static_cast<size_t>(n)].inputs[0]});
  }
  return casts;
}

// gpt2-124m on 4 H100s: the solver's plan and every baseline's reduce each gradient where the
// policy says: after the cast to float32 (the cast reads it still Partial) or before it (in bf16).
// 32 x 512 tokens, so that data parallelism shards the attention (at 8 x 512 the fused attention
// is cheap enough that the plans replicate it, and no weight gradient is Partial).
TEST(MixedPrecisionPlan, GradientsAreReducedInTheReduceDtype) {
  const nn::ModelSpec spec = nn::zoo_model("gpt2-124m");
  for (DType reduce : {DType::Float32, DType::BFloat16}) {
    SCOPED_TRACE(std::string("reduce ") + std::string(dtype_name(reduce)));
    const JointProgram program = training_step_joint(spec, 32, 512, policy(reduce));
    PlanOptions options;
    options.precision = policy(reduce);
    const PlanProblem problem = build_problem(program, dist::DeviceMesh({4}), options);
    std::vector<ShardingPlan> plans{solve_plan(program, problem)};
    for (BaselineResult& result : solve_baselines(program, problem)) plans.push_back(result.plan.value());
    int64_t reduced_after_cast = 0;
    for (const ShardingPlan& plan : plans) {
      const std::vector<GradientCast> casts = gradient_casts(program, problem, plan);
      ASSERT_EQ(casts.size(), 196u) << plan.label;  // every parameter of gpt2-124m (the head is tied)
      for (const GradientCast& cast : casts) {
        if (reduce == DType::BFloat16) {
          EXPECT_FALSE(any_partial(cast.read)) << plan.label << ": " << placements_str(cast.read);
        } else {
          EXPECT_EQ(any_partial(cast.produced), any_partial(cast.read))
              << plan.label << ": " << placements_str(cast.produced) << " -> " << placements_str(cast.read);
          reduced_after_cast += any_partial(cast.read) ? 1 : 0;
        }
      }
    }
    // Data parallelism produces Partial weight gradients; under reduce f32 they reach the cast so.
    if (reduce == DType::Float32) {
      EXPECT_GT(reduced_after_cast, 0);
    }
  }
}

// The FSDP baseline's report of llama3-8b on 8 H100s, float32 or under the bf16 policy.
PlanReport fsdp_report(const MixedPrecisionPolicy& precision) {
  const JointProgram program = training_step_joint(nn::zoo_model("llama3-8b"), 8, 2048, precision);
  PlanOptions options;
  options.precision = precision;
  const PlanProblem problem = build_problem(program, dist::DeviceMesh({8}), options);
  for (BaselineResult& result : solve_baselines(program, problem)) {
    if (result.baseline.kind == BaselineKind::Fsdp) return make_report(program, problem, result.plan.value());
  }
  throw ValueError("no FSDP baseline");
}

TEST(MixedPrecisionPlan, ComputeAtTheBf16RateAndMemoryWithFloat32Masters) {
  const PlanReport f32 = fsdp_report({});
  const PlanReport bf16 = fsdp_report(policy(DType::Float32));
  // H100: 989 TFLOP/s in bf16 against 495 in tf32 (what float32 matmuls run at); matmuls dominate.
  EXPECT_LT(bf16.compute_seconds, 0.6 * f32.compute_seconds);
  // Parameters stay float32 masters with float32 gradients and AdamW states: 16 bytes each.
  for (const ParameterRow& row : bf16.parameters) {
    EXPECT_EQ(row.meta.dtype, DType::Float32) << row.name;
    EXPECT_NEAR(row.state_bytes, 4.0 * row.local_bytes, 1e-9 * row.local_bytes) << row.name;
  }
  // Summed over the parameters (the peak itself may fall where a different share of the
  // gradients has been made).
  auto state_bytes = [](const PlanReport& report) {
    double total = 0;
    for (const ParameterRow& row : report.parameters) total += row.state_bytes;
    return total;
  };
  EXPECT_NEAR(state_bytes(bf16), state_bytes(f32), 1e-9 * state_bytes(f32));
  // Activations in bf16: about half of float32's (plus each layer's bf16 weight shards).
  EXPECT_LT(bf16.memory.activation_bytes, 0.6 * f32.memory.activation_bytes);
  EXPECT_GT(bf16.memory.activation_bytes, 0.45 * f32.memory.activation_bytes);
}

TEST(MixedPrecisionPlan, ParametersAreCastInTheirLayerSoLayersStillCluster) {
  const nn::ModelSpec spec = nn::zoo_model("llama3-8b");
  const JointProgram program = training_step_joint(spec, 8, 2048, policy(DType::Float32));
  PlanOptions options;
  options.precision = policy(DType::Float32);
  const PlanProblem problem = build_problem(program, dist::DeviceMesh({8}), options);
  ASSERT_EQ(problem.layer_groups.size(), 1u);
  EXPECT_EQ(problem.layer_groups[0].layers.size(), 32u);
  const PlanProblem plain = build_problem(training_step_joint(spec, 8, 2048), dist::DeviceMesh({8}));
  // One cast per parameter of a layer (and its gradient's cast back), not one per layer.
  EXPECT_LT(problem.problem.nodes.size(), plain.problem.nodes.size() + 40);
}

TEST(MixedPrecisionPlan, RejectsAReduceDtypeOnNeitherSideOfTheCast) {
  const nn::ModelSpec spec = nn::zoo_model("gpt-mini");
  const MixedPrecisionPolicy odd{DType::BFloat16, DType::Float64, std::nullopt};
  const JointProgram program = training_step_joint(spec, 4, 8, odd);
  PlanOptions options;
  options.precision = odd;
  EXPECT_THROW(build_problem(program, dist::DeviceMesh({2}), options), ValueError);
  options.precision = {DType::Int64, std::nullopt, std::nullopt};
  EXPECT_THROW(build_problem(program, dist::DeviceMesh({2}), options), ValueError);
}

}  // namespace
}  // namespace px::plan
