// Failure of one rank while the others communicate on its behalf (threads backend, mesh 2x2):
// every other rank's DTensor call returns promptly with CommError naming the failed rank, and
// launch rethrows the failed rank's own error.

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "parallax/core/error.h"
#include "parallax/dist/process_group.h"
#include "parallax/dtensor/dtensor.h"
#include "parallax/ops/dispatch.h"
#include "support/test_util.h"

namespace px {
namespace {

using dist::DeviceMesh;

constexpr int kFailing = 2;
// Far above a collective's time, far below a hang.
constexpr double kPromptSeconds = 5.0;

// What one surviving rank saw.
struct Outcome {
  bool threw_comm_error = false;
  std::string message;
  double seconds = 0;
};

// Runs `body` on every rank of a 2x2 job; rank kFailing's body must throw. Returns each other
// rank's outcome and checks that launch rethrew `expected_error` (a substring of its what()).
std::vector<Outcome> run_with_failing_rank(
    const std::function<void(int rank, const std::shared_ptr<dist::MeshGroups>& groups)>& body,
    const std::string& expected_error) {
  std::mutex mutex;
  std::vector<Outcome> outcomes(4);
  std::string launch_error = "(launch returned normally)";
  try {
    dist::launch(
        4,
        [&](int rank, dist::ProcessGroup& world) {
          auto groups = std::make_shared<dist::MeshGroups>(DeviceMesh({2, 2}), world);
          if (rank == kFailing) {
            body(rank, groups);
            return;
          }
          Outcome outcome;
          auto start = std::chrono::steady_clock::now();
          try {
            body(rank, groups);
          } catch (const CommError& error) {
            outcome.threw_comm_error = true;
            outcome.message = error.what();
          } catch (const std::exception& error) {
            outcome.message = error.what();
          }
          outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          std::lock_guard<std::mutex> lock(mutex);
          outcomes[static_cast<size_t>(rank)] = outcome;
        },
        dist::LaunchOptions{dist::Backend::Threads});
  } catch (const std::exception& error) {
    launch_error = error.what();
  }
  EXPECT_NE(launch_error.find(expected_error), std::string::npos)
      << "launch should rethrow rank " << kFailing << "'s error; it gave: " << launch_error;
  for (int rank = 0; rank < 4; ++rank) {
    if (rank == kFailing) continue;
    const Outcome& outcome = outcomes[static_cast<size_t>(rank)];
    EXPECT_TRUE(outcome.threw_comm_error) << "rank " << rank << ": " << outcome.message;
    EXPECT_NE(outcome.message.find("rank " + std::to_string(kFailing) + " failed"), std::string::npos)
        << "rank " << rank << ": " << outcome.message;
    EXPECT_NE(outcome.message.find(expected_error), std::string::npos) << "rank " << rank << ": " << outcome.message;
    EXPECT_LT(outcome.seconds, kPromptSeconds) << "rank " << rank;
  }
  return outcomes;
}

TEST(DTensorFaults, RankThrowingBeforeItsCollectiveFailsEveryRedistribute) {
  const Tensor global = testing::random_tensor({8, 4}, DType::Float64, 1);
  run_with_failing_rank(
      [&](int rank, const std::shared_ptr<dist::MeshGroups>& groups) {
        // Sharded on both mesh dims: going to Replicate gathers along both, so every rank waits
        // on a group that holds rank 2 (directly, or through rank 3, which waits on rank 2).
        Tensor sharded = distribute_tensor(global, groups, {Shard{0}, Shard{1}});
        if (rank == kFailing) throw ValueError("rank 2 gives up just before its collective");
        Tensor replicated = redistribute(sharded, {Replicate{}, Replicate{}});
        ADD_FAILURE() << "rank " << rank << " finished its redistribute: " << to_local(replicated).meta_info().str();
      },
      "ValueError: rank 2 gives up just before its collective");
}

TEST(DTensorFaults, RankFailingInsideAnEagerOpFailsTheOthersCollectives) {
  const Tensor weight = testing::random_tensor({8, 8}, DType::Float64, 2);
  run_with_failing_rank(
      [&](int rank, const std::shared_ptr<dist::MeshGroups>& groups) {
        // Replicated indices, so every rank has the same metadata and picks the same strategy;
        // rank 2's values are out of range, so only its local embedding call fails.
        std::vector<double> values{0, 3, 7, 1};
        if (rank == kFailing) values[2] = 100;
        Tensor indices = from_local(Tensor::from_vector(values, {4}, DType::Int64), groups, {Replicate{}, Replicate{}});
        // Columns split over both mesh dims: the lookup needs no communication, and the output
        // (columns split alike) gathers along both mesh dims.
        Tensor table = distribute_tensor(weight, groups, {Shard{1}, Shard{1}});
        Tensor rows = call1("embedding", {table, indices});
        Tensor full = full_tensor(rows);
        ADD_FAILURE() << "rank " << rank << " finished: " << full.meta_info().str();
      },
      "embedding: index 100 at position 2 is out of range");
}

}  // namespace
}  // namespace px
