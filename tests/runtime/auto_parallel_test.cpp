// The AutoParallel API: rank 0 solves and broadcasts, the one-call form, constraints, the
// fingerprint check, gradient clipping, shard-only parameters and the errors users meet.

#include "parallax/api/auto_parallel.h"

#include <gtest/gtest.h>

#include <mutex>

#include "parallax/core/error.h"
#include "parallax/core/parallel.h"
#include "parallax/dist/process_group.h"
#include "parallax/nn/zoo.h"
#include "support/test_util.h"

namespace px {
namespace {

nn::MlpConfig small_mlp() { return {.in = 8, .hidden = 16, .out = 4, .dtype = DType::Float64}; }

std::tuple<Tensor, Tensor> mlp_inputs() {
  return {testing::random_tensor({8, 8}, DType::Float64, 3), testing::random_ints({8}, 0, 4, 4)};
}

TEST(AutoParallelApi, RankZeroSolvesAndEveryRankGetsTheSamePlan) {
  const dist::DeviceMesh mesh({4});
  std::mutex mutex;
  std::vector<std::string> plans(4);
  std::vector<double> losses(4);
  dist::launch(4, [&](int rank, dist::ProcessGroup& world) {
    auto groups = std::make_shared<dist::MeshGroups>(mesh, world);
    nn::MlpLoss model(small_mlp());
    AutoParallel ap(model, mlp_inputs, mesh);
    ap.add_parameter_memory_constraint(0, 0.25);  // every parameter sharded 4 ways
    const plan::ShardingPlan sharding = ap.optimize_placement(*groups);
    ParallelModule module = ap.apply_placement(sharding, groups);
    for (const std::string& name : module.parameter_names()) {
      EXPECT_TRUE(std::holds_alternative<Shard>(module.placements(name)[0])) << name;
      EXPECT_LT(module.local_tensor(name).numel(), module.full_tensor(name).numel()) << name;
    }
    auto [x, y] = mlp_inputs();
    const Tree out = module.train_step(x, y);
    std::lock_guard<std::mutex> lock(mutex);
    plans[static_cast<size_t>(rank)] = ap.plan_json(sharding);
    losses[static_cast<size_t>(rank)] = out.as_tensor().item<double>();
  });
  for (int rank = 1; rank < 4; ++rank) {
    EXPECT_EQ(plans[static_cast<size_t>(rank)], plans[0]);
    EXPECT_EQ(losses[static_cast<size_t>(rank)], losses[0]);
  }
}

TEST(AutoParallelApi, OneCallFormWithOutputConstraintAndClipping) {
  const dist::DeviceMesh mesh({2});
  dist::launch(2, [&](int, dist::ProcessGroup& world) {
    auto groups = std::make_shared<dist::MeshGroups>(mesh, world);
    nn::MlpLoss model(small_mlp());
    AutoParallelOptions options;
    options.train.max_grad_norm = 1e-3;  // binds: every step is clipped
    ParallelModule module = auto_parallel(model, groups, mlp_inputs(), {plan::PlacementPattern{Replicate{}}}, options);
    auto [x, y] = mlp_inputs();
    const double first = module.train_step(x, y).as_tensor().item<double>();
    module.train_step(x, y);
    EXPECT_GT(module.last_stats().peak_bytes, 0);
    EXPECT_GT(module.optimizer_state_bytes(), 0);
    EXPECT_NE(module.last_loss(), first);
  });
}

TEST(AutoParallelApi, TimedUpdatesTrainExactlyAsUntimedOnes) {
  // With time_nodes the optimizer steps one parameter at a time; the result must not change.
  const dist::DeviceMesh mesh({2});
  std::vector<std::vector<double>> losses(2);
  std::vector<std::vector<Tensor>> params(2);
  std::mutex mutex;
  for (int timed = 0; timed < 2; ++timed) {
    dist::launch(2, [&](int rank, dist::ProcessGroup& world) {
      auto groups = std::make_shared<dist::MeshGroups>(mesh, world);
      nn::MlpLoss model(small_mlp());
      AutoParallelOptions options;
      options.train.time_nodes = timed == 1;
      AutoParallel ap(model, mlp_inputs, mesh, options);
      ParallelModule module = ap.apply_placement(ap.optimize_placement(*groups), groups);
      auto [x, y] = mlp_inputs();
      for (int step = 0; step < 3; ++step) {
        const double loss = module.train_step(x, y).as_tensor().item<double>();
        if (rank == 0) losses[static_cast<size_t>(timed)].push_back(loss);
      }
      const std::vector<TensorMeta> metas = module.trained_local_metas();
      EXPECT_EQ(metas.size(), module.parameter_names().size());
      if (timed == 1) {
        ASSERT_EQ(module.last_update_seconds().size(), metas.size());
        for (double seconds : module.last_update_seconds()) EXPECT_GT(seconds, 0.0);
      } else {
        EXPECT_TRUE(module.last_update_seconds().empty());
      }
      std::vector<Tensor> full;
      for (const std::string& name : module.parameter_names()) full.push_back(module.full_tensor(name));
      if (rank != 0) return;
      std::lock_guard<std::mutex> lock(mutex);
      params[static_cast<size_t>(timed)] = full;
    });
  }
  EXPECT_EQ(losses[0], losses[1]);
  ASSERT_EQ(params[0].size(), params[1].size());
  for (size_t i = 0; i < params[0].size(); ++i) EXPECT_TRUE(testing::all_close(params[0][i], params[1][i], 0, 0)) << i;
}

TEST(AutoParallelApi, ClippingCountsEveryElementOnce) {
  // Clipping sums squares across ranks once per element: with a binding max norm, DP (replicated
  // parameters) and FSDP (sharded) runs end with the same parameters.
  std::vector<Tensor> ends;
  for (const char* baseline : {"DP", "FSDP"}) {
    const dist::DeviceMesh mesh({2});
    nn::MlpLoss planner_model(small_mlp());
    AutoParallel planner(planner_model, mlp_inputs, mesh);
    std::string json;
    for (const plan::BaselineResult& result : planner.baselines()) {
      if (result.baseline.name == baseline) json = planner.plan_json(*result.plan);
    }
    ASSERT_FALSE(json.empty());
    Tensor end;
    std::mutex mutex;
    dist::launch(2, [&](int rank, dist::ProcessGroup& world) {
      auto groups = std::make_shared<dist::MeshGroups>(mesh, world);
      nn::MlpLoss model(small_mlp());
      AutoParallelOptions options;
      options.train.max_grad_norm = 1e-2;
      AutoParallel ap(model, mlp_inputs, mesh, options);
      ParallelModule module = ap.apply_placement(ap.plan_from_json(json), groups);
      auto [x, y] = mlp_inputs();
      for (int step = 0; step < 3; ++step) module.train_step(x, y);
      Tensor weight = module.full_tensor("mlp.fc1.weight");
      if (rank == 0) {
        std::lock_guard<std::mutex> lock(mutex);
        end = weight;
      }
    });
    ends.push_back(end);
  }
  EXPECT_TRUE(testing::all_close(ends[0], ends[1], 1e-12, 1e-12));
}

TEST(AutoParallelApi, PlansForAnotherModelOrMeshAreRefused) {
  const dist::DeviceMesh mesh({2});
  nn::MlpLoss model(small_mlp());
  AutoParallel ap(model, mlp_inputs, mesh);
  const std::string json = ap.plan_json(ap.optimize_placement());
  nn::MlpConfig wider = small_mlp();
  wider.hidden = 32;
  nn::MlpLoss other(wider);
  AutoParallel other_ap(other, mlp_inputs, mesh);
  EXPECT_THROW(other_ap.plan_from_json(json), ValueError);
  nn::MlpLoss same(small_mlp());
  AutoParallel four(same, mlp_inputs, dist::DeviceMesh({4}));
  EXPECT_THROW(four.plan_from_json(json), ValueError);

  dist::launch(4, [&](int, dist::ProcessGroup& world) {
    auto groups = std::make_shared<dist::MeshGroups>(dist::DeviceMesh({4}), world);
    EXPECT_NE(testing::error_message([&] {
                ap.apply_placement(ap.optimize_placement(), groups);
              }).find("is not the planned mesh"),
              std::string::npos);
  });
}

TEST(AutoParallelApi, GuardsCheckTrainingInputs) {
  const dist::DeviceMesh mesh({2});
  dist::launch(2, [&](int, dist::ProcessGroup& world) {
    auto groups = std::make_shared<dist::MeshGroups>(mesh, world);
    nn::MlpLoss model(small_mlp());
    ParallelModule module = auto_parallel(model, groups, mlp_inputs());
    EXPECT_THROW(module.train_step(testing::random_tensor({6, 8}), testing::random_ints({6}, 0, 4)), GuardError);
    EXPECT_THROW(module.local_tensor("mlp.fc9.weight"), ValueError);
  });
}

TEST(AutoParallelApi, InfeasibleConstraintsReachEveryRank) {
  const dist::DeviceMesh mesh({2});
  dist::launch(2, [&](int, dist::ProcessGroup& world) {
    auto groups = std::make_shared<dist::MeshGroups>(mesh, world);
    nn::MlpLoss model(small_mlp());
    AutoParallel ap(model, mlp_inputs, mesh);
    ap.set_memory_budget(100);  // bytes: nothing fits
    EXPECT_THROW(ap.optimize_placement(*groups), InfeasiblePlan);
  });
}

// Rank 0's error reaches the other ranks as the class it was, with rank 0's message.
TEST(AutoParallelApi, RankZeroErrorsReachEveryRankAsWhatTheyWere) {
  const dist::DeviceMesh mesh({2});
  std::mutex mutex;
  std::vector<std::string> kinds(2), messages(2);
  dist::launch(2, [&](int rank, dist::ProcessGroup& world) {
    auto groups = std::make_shared<dist::MeshGroups>(mesh, world);
    nn::MlpLoss model(small_mlp());
    AutoParallel ap(model, mlp_inputs, mesh);
    try {
      ap.broadcast_plan(*groups, []() -> plan::ShardingPlan { throw ValueError("no plan file 'p.json'"); });
    } catch (const ValueError& error) {
      std::lock_guard<std::mutex> lock(mutex);
      kinds[static_cast<size_t>(rank)] = error.kind();
      messages[static_cast<size_t>(rank)] = error.message();
    }
  });
  EXPECT_EQ(kinds[0], "ValueError");
  EXPECT_EQ(kinds[1], "ValueError");
  EXPECT_EQ(messages[0], "no plan file 'p.json'");
  EXPECT_EQ(messages[1], "rank 0 could not plan: no plan file 'p.json'");
}

TEST(AutoParallelApi, InputConstraintsOnLeavesTheGraphDoesNotReadAreRefused) {
  const dist::DeviceMesh mesh({2});
  nn::MlpLoss model(small_mlp());
  AutoParallel ap(model, mlp_inputs, mesh);
  const plan::PlacementPattern replicated{Replicate{}};
  EXPECT_NO_THROW(ap.add_input_constraints({replicated, std::nullopt}));
  const std::string message = testing::error_message([&] {
    ap.add_input_constraints({std::nullopt, std::nullopt, replicated});
  });
  EXPECT_NE(message.find("add_input_constraints: forward input leaf 2 is not a tensor the graph reads"),
            std::string::npos)
      << message;
}

// The same problem gives the same plan, byte for byte: planned again in the same process (no
// state carried between planners), and with the kernels on a 2-thread pool while planning.
TEST(AutoParallelApi, PlansAreTheSameBytesAcrossRunsAndThreadCounts) {
  const dist::DeviceMesh mesh({2, 2});
  nn::GPTConfig config = nn::zoo_model("gpt-mini").gpt;
  config.dtype = DType::Float32;
  auto inputs = [&] {
    return std::make_tuple(testing::random_ints({4, 16}, 0, config.vocab, 1),
                           testing::random_ints({4, 16}, 0, config.vocab, 2));
  };
  auto plan_once = [&] {
    nn::LmLoss<nn::GPT> model(config);
    AutoParallel ap(model, inputs, mesh);
    return ap.plan_json(ap.optimize_placement());
  };
  const std::string first = plan_once();
  EXPECT_EQ(plan_once(), first);
  ThreadPool pool(2);
  ParallelScope scope(&pool);
  EXPECT_EQ(plan_once(), first);
}

}  // namespace
}  // namespace px
