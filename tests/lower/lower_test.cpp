// Lowering: every rank's program, run on the threads backend, computes exactly its shards of the
// single-device joint graph's outputs (the loss and every gradient), for the solver's plan and
// for each hand-written baseline.

#include "parallax/lower/lower.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "parallax/autodiff/training_step.h"
#include "parallax/core/error.h"
#include "parallax/dist/comm_ops.h"
#include "parallax/dist/process_group.h"
#include "parallax/dist/sharding.h"
#include "parallax/ir/interpreter.h"
#include "parallax/ir/verifier.h"
#include "parallax/ops/factory.h"
#include "parallax/plan/baselines.h"
#include "parallax/plan/plan.h"
#include "support/test_util.h"

namespace px::lower {
namespace {

// Global inputs for a joint program of a zoo model: parameters and float inputs random, integer
// inputs (tokens, targets, labels) in [0, vocab), tangents 1.
std::vector<Tensor> global_inputs(const JointProgram& program, int64_t vocab) {
  std::vector<Tensor> inputs;
  uint64_t seed = 1;
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const TensorMeta& meta = program.graph.meta(program.graph.inputs()[i]);
    if (program.inputs[i].kind == InputDescriptor::Kind::Tangent) {
      inputs.push_back(px::full(meta.shape, 1.0, meta.dtype));
    } else if (meta.dtype == DType::Int64) {
      inputs.push_back(testing::random_ints(meta.shape, 0, vocab, seed++));
    } else {
      inputs.push_back(testing::random_tensor(meta.shape, meta.dtype, seed++, -0.5, 0.5));
    }
  }
  return inputs;
}

// The block of `global` this coordinate holds under `placements` (Shard and Replicate only).
Tensor block_of(const Tensor& global, const std::vector<Placement>& placements, const dist::DeviceMesh& mesh,
                const std::vector<int64_t>& coordinate) {
  const dist::LocalShard shard = dist::local_shard(global.shape(), placements, mesh, coordinate);
  Tensor block = global;
  for (size_t d = 0; d < shard.shape.size(); ++d) {
    block = block.narrow(static_cast<int64_t>(d), shard.offset[d], shard.shape[d]);
  }
  return block.contiguous();
}

// Runs every rank's lowered program on its shards of `inputs` and checks each output against the
// matching block of the single-device outputs.
void expect_lowered_matches(const JointProgram& program, const plan::DecodedPlan& decoded, const dist::DeviceMesh& mesh,
                            const dist::MeshTopology& topology, const std::vector<Tensor>& inputs,
                            const std::string& tag, double rtol) {
  const std::vector<Tensor> expected = ir::interpret(program.graph, inputs);
  std::mutex failures_mutex;
  std::vector<std::string> failures;
  dist::launch(static_cast<int>(mesh.size()), [&](int rank, dist::ProcessGroup& world) {
    dist::MeshGroups groups(mesh, world);
    const RankProgram lowered = lower_rank(program, decoded, mesh, topology, rank);
    std::vector<Tensor> locals;
    for (size_t i = 0; i < inputs.size(); ++i) {
      locals.push_back(block_of(inputs[i], lowered.input_placements[i], mesh, lowered.coordinate));
    }
    const std::vector<Tensor> outputs = ir::interpret(lowered.graph, locals);
    for (size_t j = 0; j < outputs.size(); ++j) {
      const Tensor want = block_of(expected[j], lowered.output_placements[j], mesh, lowered.coordinate);
      const ::testing::AssertionResult close = testing::all_close(outputs[j], want, rtol, rtol);
      if (!close) {
        std::lock_guard<std::mutex> lock(failures_mutex);
        failures.push_back(tag + ": rank " + std::to_string(rank) + ", output " + std::to_string(j) + " (" +
                           program.outputs[j].str() + ") " + placements_str(lowered.output_placements[j]) + ": " +
                           close.message());
      }
    }
  });
  for (const std::string& failure : failures) ADD_FAILURE() << failure;
}

nn::ModelSpec f64(nn::ModelSpec spec) {
  spec.mlp.dtype = spec.gpt.dtype = spec.llama.dtype = DType::Float64;
  return spec;
}

struct LowerCase {
  std::string model;
  std::vector<int64_t> mesh;
};

class LowerParity : public ::testing::TestWithParam<LowerCase> {};

// The solver's plan and every baseline's, float64: the lowered step equals the single-device one.
TEST_P(LowerParity, EveryPlanMatchesSingleDevice) {
  const LowerCase& param = GetParam();
  nn::ModelSpec spec = f64(nn::zoo_model(param.model));
  if (spec.kind == nn::ModelSpec::Kind::Mlp) spec.mlp = {.in = 8, .hidden = 16, .out = 4, .dtype = DType::Float64};
  const JointProgram program = training_step_joint(spec, 8, 8);
  const dist::DeviceMesh mesh(param.mesh);
  const plan::PlanProblem problem = plan::build_problem(program, mesh);
  const int64_t vocab = spec.kind == nn::ModelSpec::Kind::Mlp   ? spec.mlp.out
                        : spec.kind == nn::ModelSpec::Kind::Gpt ? spec.gpt.vocab
                                                                : spec.llama.vocab;
  const std::vector<Tensor> inputs = global_inputs(program, vocab);

  std::vector<plan::ShardingPlan> plans{plan::solve_plan(program, problem)};
  for (const plan::BaselineResult& baseline : plan::solve_baselines(program, problem)) {
    ASSERT_TRUE(baseline.plan.has_value()) << baseline.error;
    plans.push_back(*baseline.plan);
  }
  for (const plan::ShardingPlan& sharding : plans) {
    SCOPED_TRACE(sharding.label);
    expect_lowered_matches(program, plan::decode(problem, sharding.choice), mesh, problem.topology, inputs,
                           param.model + " " + sharding.label, 1e-10);
  }
}

INSTANTIATE_TEST_SUITE_P(Lower, LowerParity,
                         ::testing::Values(LowerCase{"mlp", {2}}, LowerCase{"mlp", {4}}, LowerCase{"mlp", {2, 2}},
                                           LowerCase{"gpt-mini", {2}}, LowerCase{"gpt-mini", {4}},
                                           LowerCase{"gpt-mini", {2, 2}}, LowerCase{"llama-mini", {2}},
                                           LowerCase{"llama-mini", {4}}, LowerCase{"llama-mini", {2, 2}}),
                         [](const ::testing::TestParamInfo<LowerCase>& info) {
                           std::string name = info.param.model + "_on";
                           for (int64_t size : info.param.mesh) name += "_" + std::to_string(size);
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

TEST(Lower, GraphsVerifyAndCarryCollectives) {
  const JointProgram program = training_step_joint(f64(nn::zoo_model("gpt-mini")), 4, 8);
  const dist::DeviceMesh mesh({2, 2}, {"dp", "tp"});
  const plan::PlanProblem problem = plan::build_problem(program, mesh);
  const plan::Baseline fsdp_tp = plan::make_baseline(plan::BaselineKind::FsdpTensorParallel, program, problem);
  const plan::ShardingPlan sharding = plan::solve_plan(program, problem, fsdp_tp.constraints);
  const std::vector<RankProgram> programs =
      lower_all(program, plan::decode(problem, sharding.choice), mesh, problem.topology);
  ASSERT_EQ(programs.size(), 4u);
  for (const RankProgram& rank : programs) {
    EXPECT_NO_THROW(ir::verify(rank.graph));
    EXPECT_GT(rank.collectives, 0);  // FSDP gathers weights and reduce-scatters gradients
    EXPECT_EQ(rank.graph.inputs().size(), program.graph.inputs().size());
    EXPECT_EQ(rank.graph.outputs().size(), program.graph.outputs().size());
  }
  const std::string text = dump(programs);
  EXPECT_NE(text.find("# rank 3 at [1, 1]"), std::string::npos);
  EXPECT_NE(text.find("all_gather"), std::string::npos);
  EXPECT_NE(text.find("reduce_scatter"), std::string::npos);
}

// What the plan's memory assumes (plan/builder.h, "Memory"): a gradient is reduced to its
// parameter's placement where it is made, not at the end of the step, and a weight the forward
// gathered is gathered again for the backward rather than kept alive in between.
RankProgram lowered_under(const JointProgram& program, plan::BaselineKind kind) {
  const dist::DeviceMesh mesh({2});
  const plan::PlanProblem problem = plan::build_problem(program, mesh);
  const plan::Baseline baseline = plan::make_baseline(kind, program, problem);
  const plan::ShardingPlan sharding = plan::solve_plan(program, problem, baseline.constraints);
  return lower_rank(program, plan::decode(problem, sharding.choice), mesh, problem.topology, 0);
}

TEST(Lower, GradientsReducedWhereMadeAndWeightsGatheredPerPhase) {
  // An MLP on a large batch: data parallelism all-reduces every weight's gradient.
  const JointProgram mlp = training_step_joint(nn::zoo_model("mlp"), 16384, 1);
  const RankProgram data_parallel = lowered_under(mlp, plan::BaselineKind::DataParallel);
  const auto& nodes = data_parallel.graph.nodes();
  std::map<ir::ValueId, size_t> made_by;
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (ir::ValueId output : nodes[n].outputs) made_by[output] = n;
  }
  // Each gradient is all-reduced right after the node that makes it: the last layer's long
  // before the backward ends.
  size_t reduced = 0, early = 0;
  for (size_t d = 0; d < mlp.outputs.size(); ++d) {
    if (mlp.outputs[d].kind != OutputDescriptor::Kind::Grad || mlp.graph_output[d] < 0) continue;
    const auto j = static_cast<size_t>(mlp.graph_output[d]);
    auto made = made_by.find(data_parallel.graph.outputs()[j]);
    if (made == made_by.end() || nodes[made->second].op->name != "all_reduce") continue;
    ++reduced;
    const auto input = made_by.find(nodes[made->second].inputs.front());
    ASSERT_NE(input, made_by.end());
    EXPECT_LE(made->second - input->second, 2u) << "gradient output " << j;
    early += nodes.size() - made->second > nodes.size() / 4 ? 1 : 0;
  }
  EXPECT_GE(reduced, 3u);  // of the four gradients, the plan makes at most one reduced already
  EXPECT_GT(early, 0u);

  // Under FSDP some weight is gathered twice into the same placement: for the forward and for the backward.
  const RankProgram fsdp =
      lowered_under(training_step_joint(f64(nn::zoo_model("gpt-mini")), 4, 8), plan::BaselineKind::Fsdp);
  bool regathered = false;
  const auto& fsdp_nodes = fsdp.graph.nodes();
  for (size_t a = 0; a < fsdp_nodes.size() && !regathered; ++a) {
    for (size_t b = a + 1; b < fsdp_nodes.size() && !regathered; ++b) {
      regathered = fsdp_nodes[a].op->name == "all_gather" && fsdp_nodes[b].op->name == "all_gather" &&
                   fsdp_nodes[a].inputs == fsdp_nodes[b].inputs && fsdp_nodes[a].attrs == fsdp_nodes[b].attrs;
    }
  }
  EXPECT_TRUE(regathered);
}

TEST(Lower, RejectsAPlanForAnotherProgram) {
  const JointProgram mlp = training_step_joint(nn::zoo_model("mlp"), 4, 1);
  const JointProgram gpt = training_step_joint(nn::zoo_model("gpt-mini"), 4, 8);
  const dist::DeviceMesh mesh({2});
  const plan::PlanProblem problem = plan::build_problem(mlp, mesh);
  const plan::DecodedPlan decoded = plan::decode(problem, plan::solve_plan(mlp, problem).choice);
  EXPECT_NE(testing::error_message([&] {
              lower_rank(gpt, decoded, mesh, problem.topology, 0);
            }).find("a plan for another program?"),
            std::string::npos);
  EXPECT_NE(
      testing::error_message([&] { lower_rank(mlp, decoded, mesh, problem.topology, 5); }).find("rank 5 is not in"),
      std::string::npos);
}

}  // namespace
}  // namespace px::lower
