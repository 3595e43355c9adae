// The DTensor API: construction and its errors, the subclass state, eager dispatch's choice
// of strategy, implicit replication of plain tensors, and ops without a rule.

#include <gtest/gtest.h>

#include <mutex>

#include "parallax/core/error.h"
#include "parallax/dist/comm_ops.h"
#include "parallax/dist/process_group.h"
#include "parallax/dtensor/dtensor.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/factory.h"
#include "parallax/ops/linalg.h"
#include "support/test_util.h"

namespace px {
namespace {

using dist::DeviceMesh;

// Runs fn on every rank of `mesh` (threads), collecting failures as strings.
std::vector<std::string> on_mesh(const DeviceMesh& mesh,
                                 const std::function<void(int rank, const std::shared_ptr<dist::MeshGroups>&,
                                                          const std::function<void(std::string)>& fail)>& fn) {
  std::mutex mutex;
  std::vector<std::string> failures;
  dist::launch(
      static_cast<int>(mesh.size()),
      [&](int rank, dist::ProcessGroup& world) {
        auto groups = std::make_shared<dist::MeshGroups>(mesh, world);
        fn(rank, groups, [&](std::string what) {
          std::lock_guard<std::mutex> lock(mutex);
          failures.push_back("rank " + std::to_string(rank) + ": " + std::move(what));
        });
      },
      dist::LaunchOptions{dist::Backend::Threads});
  return failures;
}

#define EXPECT_NO_FAILURES(failures) \
  EXPECT_TRUE((failures).empty()) << (failures).size() << " failures, first: " << (failures).front()

TEST(DTensorApi, FromLocalToLocalAndShapes) {
  auto failures = on_mesh(DeviceMesh({2, 2}), [](int rank, const auto& groups, const auto& fail) {
    Tensor local = px::full({2, 3}, static_cast<double>(rank), DType::Float64);
    Tensor dt = from_local(local, groups, {Shard{0}, Replicate{}});
    if (dt.shape() != Shape{4, 3}) fail("global shape " + shape_str(dt.shape()));
    if (!to_local(dt).same(local)) fail("to_local is not the local tensor");
    // Uneven: 5 rows over 2 is 3 and 2.
    Tensor uneven = from_local(Tensor::zeros({groups->coordinate(0) == 0 ? 3 : 2, 3}, DType::Float64), groups,
                               {Shard{0}, Replicate{}}, Shape{5, 3});
    if (uneven.shape() != Shape{5, 3}) fail("uneven global shape");
    std::string message = testing::error_message([&] {
      from_local(Tensor::zeros({2, 3}, DType::Float64), groups, {Shard{0}, Replicate{}}, Shape{5, 3});
    });
    if (groups->coordinate(0) == 0 && message.find("does not match") == std::string::npos) fail(message);
    message = testing::error_message([&] { from_local(local, groups, {Shard{0}}); });
    if (message.find("2 dimensions") == std::string::npos) fail("placement count: " + message);
    message = testing::error_message([&] { from_local(local, groups, {Shard{2}, Replicate{}}); });
    if (message.find("S(2)") == std::string::npos) fail("shard out of range: " + message);
  });
  EXPECT_NO_FAILURES(failures);
}

TEST(DTensorApi, FlattenAndUnflattenRoundTrip) {
  auto failures = on_mesh(DeviceMesh({2}, {"dp"}), [](int, const auto& groups, const auto& fail) {
    Tensor dt = distribute_tensor(testing::random_tensor({4, 2}), groups, {Shard{1}});
    DTensor& instance = dtensor_of(dt);
    SubclassState state = instance.flatten();
    if (!state.has("local") || state.has("mask")) fail("inner tensors");
    auto rebuilt = std::dynamic_pointer_cast<DTensor>(instance.unflatten(state));
    if (!rebuilt || !(rebuilt->spec() == instance.spec())) fail("unflatten changed the spec");
    if (state.metadata.str().find("S(1)") == std::string::npos) fail("metadata " + state.metadata.str());
  });
  EXPECT_NO_FAILURES(failures);
}

TEST(DTensorApi, EagerDispatchKeepsShardingWhenItIsFree) {
  auto failures = on_mesh(DeviceMesh({4}), [](int, const auto& groups, const auto& fail) {
    Tensor a = testing::random_tensor({8, 4}, DType::Float64, 1);
    Tensor b = testing::random_tensor({8, 4}, DType::Float64, 2);
    Tensor sum = px::add(distribute_tensor(a, groups, {Shard{0}}), distribute_tensor(b, groups, {Shard{0}}));
    if (dtensor_spec(sum).placements != std::vector<Placement>{Shard{0}}) {
      fail("add of two S(0) gave " + placements_str(dtensor_spec(sum).placements));
    }
    if (!testing::all_close(full_tensor(sum), px::add(a, b))) fail("add values");
    // A plain tensor counts as replicated.
    Tensor mixed = px::mul(distribute_tensor(a, groups, {Shard{0}}), b);
    if (!testing::all_close(full_tensor(mixed), px::mul(a, b))) fail("implicit replication values");
    // All replicated stays replicated (the tie goes to the all-Replicate strategy).
    Tensor rep = px::add(distribute_tensor(a, groups, {Replicate{}}), distribute_tensor(b, groups, {Replicate{}}));
    if (dtensor_spec(rep).placements != std::vector<Placement>{Replicate{}}) fail("R + R left replicate");
    // A contraction-sharded matmul gives a Partial sum.
    Tensor w = testing::random_tensor({4, 3}, DType::Float64, 3);
    Tensor y = px::matmul(distribute_tensor(a, groups, {Shard{1}}), distribute_tensor(w, groups, {Shard{0}}));
    if (dtensor_spec(y).placements != std::vector<Placement>{Partial{ReduceOp::Sum}}) {
      fail("contraction gave " + placements_str(dtensor_spec(y).placements));
    }
    if (!testing::all_close(full_tensor(y), px::matmul(a, w))) fail("matmul values");
  });
  EXPECT_NO_FAILURES(failures);
}

TEST(DTensorApi, AnOpWithoutARuleIsUnsupportedOpNamingIt) {
  // A registry op with no sharding rule: the collective ops take plain tensors only.
  auto failures = on_mesh(DeviceMesh({2}), [](int, const auto& groups, const auto& fail) {
    Tensor dt = distribute_tensor(testing::random_tensor({4}), groups, {Shard{0}});
    std::string message = testing::error_message([&] {
      call("all_to_all", {dt},
           {{"split_dim", int64_t{0}}, {"concat_dim", int64_t{0}}, {"ranks", std::vector<int64_t>{0, 1}}});
    });
    if (message.find("UnsupportedOp") == std::string::npos || message.find("all_to_all") == std::string::npos) {
      fail(message);
    }
  });
  EXPECT_NO_FAILURES(failures);
}

TEST(DTensorApi, InputsOnDifferentMeshesAreAValueError) {
  auto failures = on_mesh(DeviceMesh({2, 2}), [](int, const auto& groups, const auto& fail) {
    auto flat = std::make_shared<dist::MeshGroups>(DeviceMesh({4}), groups->world());
    Tensor a = distribute_tensor(testing::random_tensor({4}), groups, {Replicate{}, Replicate{}});
    Tensor b = distribute_tensor(testing::random_tensor({4}), flat, {Replicate{}});
    std::string message = testing::error_message([&] { px::add(a, b); });
    if (message.find("different meshes") == std::string::npos) fail(message);
  });
  EXPECT_NO_FAILURES(failures);
}

TEST(DTensorApi, CollectiveOpsNeedABoundGroup) {
  // No MeshGroups on this thread: a clear CommError, not a hang.
  std::string message = testing::error_message([] {
    dist::all_reduce(Tensor::zeros({2}), ReduceOp::Sum, std::vector<int>{0, 1});
  });
  EXPECT_NE(message.find("no process group of ranks [0,1]"), std::string::npos) << message;
}

}  // namespace
}  // namespace px
