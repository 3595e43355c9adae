// Repeated-layer clustering: identical layers share decision variables, the problem does not
// grow with the layer count, and a shared choice is priced exactly as in the unclustered
// problem. Build times of the preset models (printed, not asserted).

#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <random>

#include "parallax/plan/builder.h"
#include "plan/builder_models.h"

namespace px::plan {
namespace {

using testing::gpt_joint;
using testing::llama_joint;

nn::LlamaConfig llama_layers(int64_t layers) {
  nn::LlamaConfig config = nn::llama_mini();
  config.n_layers = layers;
  return config;
}

// The unclustered choice giving every graph input and node its clustered node's strategy.
Choice lift(const PlanProblem& clustered, const PlanProblem& flat, const Choice& choice) {
  Choice lifted(flat.nodes.size(), -1);
  for (size_t i = 0; i < flat.input_node.size(); ++i) {
    lifted[static_cast<size_t>(flat.input_node[i])] = choice[static_cast<size_t>(clustered.input_node[i])];
  }
  for (size_t n = 0; n < flat.op_node.size(); ++n) {
    lifted[static_cast<size_t>(flat.op_node[n])] = choice[static_cast<size_t>(clustered.op_node[n])];
  }
  return lifted;
}

TEST(BuilderCluster, ProblemSizeDoesNotGrowWithLayers) {
  dist::DeviceMesh mesh({2, 2});
  PlanProblem two = build_problem(llama_joint(llama_layers(2), 2, 16), mesh);
  PlanProblem eight = build_problem(llama_joint(llama_layers(8), 2, 16), mesh);
  std::cout << "[ llama_mini ] 2 layers: " << two.nodes.size() << " nodes, " << two.problem.edges.size()
            << " edges; 8 layers: " << eight.nodes.size() << " nodes, " << eight.problem.edges.size() << " edges\n";
  ASSERT_EQ(eight.layer_groups.size(), 1u);
  EXPECT_EQ(eight.layer_groups[0].list_path, "model.layers");
  EXPECT_EQ(eight.layer_groups[0].layers.size(), 8u);
  EXPECT_EQ(eight.nodes.size(), two.nodes.size());
  EXPECT_EQ(eight.problem.edges.size(), two.problem.edges.size());
  EXPECT_EQ(eight.problem.num_strategies(), two.problem.num_strategies());

  PlanOptions flat_options;
  flat_options.cluster_layers = false;
  PlanProblem flat = build_problem(llama_joint(llama_layers(8), 2, 16), mesh, flat_options);
  EXPECT_TRUE(flat.layer_groups.empty());
  EXPECT_GT(flat.nodes.size(), 3 * eight.nodes.size());
}

TEST(BuilderCluster, SharedChoicesCostWhatTheyCostUnclustered) {
  dist::DeviceMesh mesh({2, 2});
  JointProgram program = llama_joint(llama_layers(4), 4, 16);
  PlanProblem clustered = build_problem(program, mesh);
  PlanOptions flat_options;
  flat_options.cluster_layers = false;
  PlanProblem flat = build_problem(program, mesh, flat_options);
  // Members share their representative's strategy list.
  for (size_t n = 0; n < program.graph.nodes().size(); ++n) {
    ASSERT_EQ(flat.nodes[static_cast<size_t>(flat.op_node[n])].strategies,
              clustered.nodes[static_cast<size_t>(clustered.op_node[n])].strategies);
  }
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 6; ++trial) {
    Choice choice(clustered.nodes.size(), 0);
    if (trial > 0) {
      for (size_t p = 0; p < choice.size(); ++p) {
        choice[p] = static_cast<int64_t>(random() % clustered.nodes[p].strategies.size());
      }
    }
    Evaluation shared = evaluate(clustered.problem, choice);
    Evaluation real = evaluate(flat.problem, lift(clustered, flat, choice));
    EXPECT_NEAR(shared.cost, real.cost, 1e-9 * real.cost) << "trial " << trial;
    // Memory is an estimate under clustering (builder.h): close to the real peak, never far below.
    EXPECT_GE(shared.peak_usage, 0.9 * real.peak_usage) << "trial " << trial;
    EXPECT_LE(shared.peak_usage, 1.5 * real.peak_usage) << "trial " << trial;
    if (trial == 0) {
      std::cout << "[ llama_mini x4, all replicated ] peak clustered " << shared.peak_usage << " B, unclustered "
                << real.peak_usage << " B\n";
    }
  }
}

TEST(BuilderCluster, PresetModelsBuildInSeconds) {
  struct Case {
    std::string name;
    JointProgram program;
    std::vector<int64_t> mesh;
  };
  auto timed_capture = [](auto make) {
    auto start = std::chrono::steady_clock::now();
    JointProgram program = make();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::make_pair(std::move(program), seconds);
  };
  auto [llama, llama_capture] = timed_capture([] { return llama_joint(nn::llama3_8b(), 8, 2048); });
  auto [gpt, gpt_capture] = timed_capture([] { return gpt_joint(nn::gpt2_124m(), 8, 1024); });
  std::vector<Case> cases;
  cases.push_back({"llama3_8b [8, 2048]", llama, {8, 8}});
  cases.push_back({"llama3_8b [8, 2048]", llama, {64}});
  cases.push_back({"gpt2_124m [8, 1024]", gpt, {8}});
  std::cout << "[ capture + export ] llama3_8b " << llama_capture << " s (" << llama.graph.nodes().size()
            << " graph nodes), gpt2_124m " << gpt_capture << " s\n";
  for (const Case& c : cases) {
    dist::DeviceMesh mesh(c.mesh);
    PlanProblem plan = build_problem(c.program, mesh);
    std::cout << "[ build ] " << c.name << " on " << mesh.str() << ": " << plan.build_seconds << " s, "
              << plan.nodes.size() << " nodes, " << plan.problem.num_strategies() << " strategies, "
              << plan.problem.edges.size() << " edges\n";
    EXPECT_NO_THROW(plan.problem.validate());
    ASSERT_FALSE(plan.layer_groups.empty());
    EXPECT_LT(plan.nodes.size(), (c.program.graph.nodes().size() + c.program.graph.inputs().size()) / 4);
    // The all-replicated choice on real shapes: compute only, and far over one device's memory.
    Evaluation replicated = evaluate(plan.problem, Choice(plan.nodes.size(), 0));
    std::cout << "          all replicated: " << replicated.cost * 1e3 << " ms, peak " << replicated.peak_usage / 1e9
              << " GB per device\n";
    EXPECT_GT(replicated.cost, 0);
  }
}

}  // namespace
}  // namespace px::plan
