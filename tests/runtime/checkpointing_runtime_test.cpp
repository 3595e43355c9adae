// Activation checkpointing at run time: a rank's program recomputes what the plan says, and the
// executor's measured peak memory drops as the plan's predicted peak does.

#include <gtest/gtest.h>

#include <mutex>

#include "parallax/api/auto_parallel.h"
#include "parallax/dist/process_group.h"
#include "parallax/nn/zoo.h"
#include "support/test_util.h"

namespace px {
namespace {

struct Measured {
  double peak_bytes = 0;       // the executor's, rank 0, second step
  double predicted_bytes = 0;  // the plan's peak usage
  size_t nodes = 0;            // rank 0's program
};

Measured run(plan::Checkpointing policy) {
  const dist::DeviceMesh mesh({2});
  nn::LlamaConfig config = nn::zoo_model("llama-mini").llama;
  const auto inputs = std::make_tuple(testing::random_ints({8, 16}, 0, config.vocab, 5),
                                      testing::random_ints({8, 16}, 0, config.vocab, 6));
  Measured measured;
  std::mutex mutex;
  dist::launch(2, [&](int rank, dist::ProcessGroup& world) {
    auto groups = std::make_shared<dist::MeshGroups>(mesh, world);
    nn::LmLoss<nn::Llama> model(config);
    AutoParallelOptions options;
    options.plan.checkpointing = policy;
    AutoParallel ap(
        model, [&] { return inputs; }, mesh, options);
    const plan::ShardingPlan sharding =
        ap.broadcast_plan(*groups, [&] { return ap.baselines().front().plan.value(); });  // DP
    ParallelModule module = ap.apply_placement(sharding, groups);
    for (int step = 0; step < 2; ++step) std::apply([&](const auto&... a) { module.train_step(a...); }, inputs);
    if (rank == 0) {
      std::lock_guard<std::mutex> lock(mutex);
      measured = {static_cast<double>(module.last_stats().peak_bytes), sharding.evaluation.peak_usage,
                  module.program().graph.nodes().size()};
    }
  });
  return measured;
}

TEST(CheckpointingRuntime, RecomputingLowersTheMeasuredPeakAsPredicted) {
  const Measured none = run(plan::Checkpointing::None);
  const Measured full = run(plan::Checkpointing::Full);
  EXPECT_GT(full.nodes, none.nodes);  // the recomputations are in the program
  EXPECT_LT(full.predicted_bytes, none.predicted_bytes);
  EXPECT_LT(full.peak_bytes, none.peak_bytes);
  // Both drop by a similar share (the executor's absolute peak is compared with the plan's in
  // docs/benchmarks.md).
  const double predicted_drop = 1 - full.predicted_bytes / none.predicted_bytes;
  const double measured_drop = 1 - full.peak_bytes / none.peak_bytes;
  EXPECT_GT(measured_drop, 0.5 * predicted_drop) << predicted_drop << " predicted, " << measured_drop << " measured";
}

}  // namespace
}  // namespace px
