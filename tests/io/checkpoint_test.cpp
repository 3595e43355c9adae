// Sharded checkpoints (ParallelModule::save / load): a resumed run continues an uninterrupted one,
// on the same mesh bit for bit, and on another mesh and plan with every loaded value exact (then
// within float64 rounding of summation order); each rank reads only its own bytes; a save that did
// not finish, a file from another save, another model or another optimizer are refused clearly.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <mutex>

#include "parallax/api/auto_parallel.h"
#include "parallax/core/error.h"
#include "parallax/dist/process_group.h"
#include "parallax/nn/zoo.h"
#include "support/test_util.h"

namespace px {
namespace {

namespace fs = std::filesystem;

struct TrainingRun {
  std::vector<double> losses;                // of the steps this run took
  std::map<std::string, Tensor> parameters;  // whole, at the end (or right after load)
  std::vector<int64_t> bytes_read;           // per rank, by load
  std::vector<int64_t> local_bytes;          // per rank: its parameter, buffer and optimizer shards
  int64_t steps_done = 0;
};

struct RunSpec {
  std::vector<int64_t> mesh;
  std::string plan = "solver";
  int steps = 0;
  std::string load{};  // a checkpoint to start from
  std::string save{};  // where to save at the end
  TrainOptions::OptimizerKind optimizer = TrainOptions::OptimizerKind::AdamW;
};

nn::LlamaConfig model_config() {
  nn::LlamaConfig config = nn::zoo_model("llama-mini").llama;
  config.dtype = DType::Float64;
  return config;
}

// Step s trains on batch s (so a resumed run sees the batches an uninterrupted one would).
std::tuple<Tensor, Tensor> batch(int64_t step) {
  return {testing::random_ints({4, 8}, 0, 64, 100 + static_cast<uint64_t>(step)),
          testing::random_ints({4, 8}, 0, 64, 200 + static_cast<uint64_t>(step))};
}

// The plan, solved once for all ranks (as JSON, which every rank's AutoParallel checks against its
// own program).
std::string plan_json(const RunSpec& spec, const dist::DeviceMesh& mesh) {
  nn::LmLoss<nn::Llama> model(model_config());
  AutoParallel planner(
      model, [] { return batch(0); }, mesh);
  if (spec.plan == "solver") return planner.plan_json(planner.optimize_placement());
  for (const plan::BaselineResult& baseline : planner.baselines()) {
    if (baseline.baseline.name == spec.plan && baseline.plan) return planner.plan_json(*baseline.plan);
  }
  throw ValueError("no plan " + spec.plan + " on " + mesh.str());
}

TrainingRun train(const RunSpec& spec) {
  const dist::DeviceMesh mesh(spec.mesh);
  const std::string plan = plan_json(spec, mesh);
  TrainingRun result;
  result.bytes_read.resize(static_cast<size_t>(mesh.size()));
  result.local_bytes.resize(static_cast<size_t>(mesh.size()));
  std::mutex mutex;
  dist::launch(static_cast<int>(mesh.size()), [&](int rank, dist::ProcessGroup& world) {
    auto groups = std::make_shared<dist::MeshGroups>(mesh, world);
    nn::LmLoss<nn::Llama> model(model_config());
    AutoParallelOptions options;
    options.train.seed = 3;
    options.train.optimizer = spec.optimizer;
    options.train.adamw.lr = 1e-2;
    AutoParallel ap(
        model, [] { return batch(0); }, mesh, options);
    ParallelModule module = ap.apply_placement(ap.plan_from_json(plan), groups);
    int64_t bytes_read = 0;
    if (!spec.load.empty()) bytes_read = module.load(spec.load);
    std::vector<double> losses;
    for (int s = 0; s < spec.steps; ++s) {
      const auto [tokens, targets] = batch(module.steps_done());
      module.train_step(tokens, targets);
      losses.push_back(module.last_loss());
    }
    if (!spec.save.empty()) module.save(spec.save);
    std::map<std::string, Tensor> parameters;
    for (const std::string& name : module.parameter_names()) parameters[name] = module.full_tensor(name);
    std::lock_guard<std::mutex> lock(mutex);
    result.bytes_read[static_cast<size_t>(rank)] = bytes_read;
    result.local_bytes[static_cast<size_t>(rank)] = module.parameter_bytes() + module.optimizer_state_bytes();
    if (rank == 0) {
      result.losses = losses;
      result.parameters = parameters;
      result.steps_done = module.steps_done();
    }
  });
  return result;
}

void expect_same_parameters(const TrainingRun& actual, const TrainingRun& expected, double tolerance) {
  ASSERT_EQ(actual.parameters.size(), expected.parameters.size());
  for (const auto& [name, tensor] : expected.parameters) {
    EXPECT_TRUE(testing::all_close(actual.parameters.at(name), tensor, tolerance, tolerance)) << name;
  }
}

class Checkpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::temp_path("checkpoint");
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(Checkpoint, ResumeOnTheSameMeshIsBitIdentical) {
  const TrainingRun uninterrupted = train({.mesh = {2, 2}, .plan = "FSDP+TP", .steps = 10});
  const TrainingRun first = train({.mesh = {2, 2}, .plan = "FSDP+TP", .steps = 5, .save = dir_});
  const TrainingRun second = train({.mesh = {2, 2}, .plan = "FSDP+TP", .steps = 5, .load = dir_});
  EXPECT_EQ(second.steps_done, 10);
  std::vector<double> resumed = first.losses;
  resumed.insert(resumed.end(), second.losses.begin(), second.losses.end());
  EXPECT_EQ(resumed, uninterrupted.losses);
  expect_same_parameters(second, uninterrupted, 0.0);
  for (size_t rank = 0; rank < 4; ++rank) {
    // Each rank reads exactly its own shards: no byte of another rank's.
    EXPECT_EQ(second.bytes_read[rank], second.local_bytes[rank]) << "rank " << rank;
  }
}

TEST_F(Checkpoint, LoadsOntoOtherMeshesAndPlansExactly) {
  const struct {
    RunSpec from, to;
  } moves[] = {
      {{.mesh = {1}}, {.mesh = {2, 2}, .plan = "FSDP+TP"}},
      {{.mesh = {2, 2}, .plan = "FSDP+TP"}, {.mesh = {4}, .plan = "FSDP"}},
      {{.mesh = {4}, .plan = "DP"}, {.mesh = {2, 2}, .plan = "FSDP+TP"}},
  };
  for (const auto& move : moves) {
    SCOPED_TRACE(::testing::PrintToString(move.from.mesh) + " " + move.from.plan + " -> " +
                 ::testing::PrintToString(move.to.mesh) + " " + move.to.plan);
    fs::remove_all(dir_);
    RunSpec from = move.from, to = move.to, reference = move.to;
    from.steps = 5;
    from.save = dir_;
    const TrainingRun saved = train(from);
    to.load = dir_;
    const TrainingRun loaded = train(to);  // no steps: the state as loaded
    EXPECT_EQ(loaded.steps_done, 5);
    expect_same_parameters(loaded, saved, 0.0);
    to.steps = 5;
    const TrainingRun resumed = train(to);
    reference.steps = 10;
    const TrainingRun uninterrupted = train(reference);
    ASSERT_EQ(resumed.losses.size(), 5u);
    for (size_t s = 0; s < 5; ++s) {
      EXPECT_NEAR(resumed.losses[s], uninterrupted.losses[5 + s], 1e-10 * std::abs(uninterrupted.losses[5 + s]));
    }
    expect_same_parameters(resumed, uninterrupted, 1e-10);
  }
}

TEST_F(Checkpoint, AnUnfinishedOrMixedSaveDoesNotLoad) {
  train({.mesh = {2}, .plan = "FSDP", .steps = 1, .save = dir_});
  const std::string first_rank1 = testing::slurp(dir_ + "/rank-00001.safetensors");
  train({.mesh = {2}, .plan = "FSDP", .steps = 2, .save = dir_});
  // A rank file of the earlier save beside the later index: not the same save. (Under FSDP rank 1
  // holds blocks of its own, so loading reads its file.)
  testing::spit(dir_ + "/rank-00001.safetensors", first_rank1);
  std::string message = testing::error_message([&] { train({.mesh = {2}, .plan = "FSDP", .load = dir_}); });
  EXPECT_NE(message.find("rank-00001.safetensors is not from the save checkpoint.json describes"), std::string::npos)
      << message;
  // The index is written last: a save that stopped before it leaves nothing that loads.
  fs::remove(dir_ + "/checkpoint.json");
  message = testing::error_message([&] { train({.mesh = {2}, .plan = "FSDP", .load = dir_}); });
  EXPECT_NE(message.find("no checkpoint.json (not a checkpoint, or a save that did not finish)"), std::string::npos)
      << message;
  // And no temporary files are left behind by a finished save.
  train({.mesh = {2}, .plan = "FSDP", .steps = 1, .save = dir_});
  for (const fs::directory_entry& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
  }
}

TEST_F(Checkpoint, AnotherModelOrOptimizerIsRefusedByName) {
  train({.mesh = {1}, .steps = 1, .save = dir_});
  std::string message = testing::error_message(
      [&] { train({.mesh = {1}, .load = dir_, .optimizer = TrainOptions::OptimizerKind::Sgd}); });
  EXPECT_NE(message.find("saved with AdamW state; this module trains with SGD"), std::string::npos) << message;
  // Another model: a GPT's checkpoint under the LLaMA.
  fs::remove_all(dir_);
  dist::launch(1, [&](int, dist::ProcessGroup& world) {
    const dist::DeviceMesh mesh({1});
    auto groups = std::make_shared<dist::MeshGroups>(mesh, world);
    nn::GPTConfig config = nn::gpt_mini();
    config.dtype = DType::Float64;
    nn::LmLoss<nn::GPT> gpt(config);
    AutoParallel ap(
        gpt, [] { return batch(0); }, mesh);
    ParallelModule module = ap.apply_placement(ap.optimize_placement(), groups);
    module.save(dir_);
  });
  message = testing::error_message([&] { train({.mesh = {1}, .load = dir_}); });
  EXPECT_NE(message.find("checkpoint '" + dir_ + "': holds no tensor 'model.tok_embeddings.weight'"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace px
