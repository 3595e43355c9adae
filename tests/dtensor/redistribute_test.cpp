// Redistribution: plans and their costs (no ranks), then every pair of placements on
// meshes 4, 2x2 and 2x4 run on the threads backend, uneven sizes included.

#include "parallax/dtensor/redistribute.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>

#include "dtensor/dtensor_checks.h"
#include "parallax/core/error.h"
#include "parallax/dist/process_group.h"
#include "parallax/dtensor/dtensor.h"
#include "support/test_util.h"

namespace px {
namespace {

using dist::DeviceMesh;
using dist::MeshTopology;

MeshTopology links(const DeviceMesh& mesh) { return MeshTopology::uniform(mesh.ndim(), dist::nvlink4_h100()); }

DTensorSpec spec_of(const DeviceMesh& mesh, std::vector<Placement> placements, Shape shape) {
  return DTensorSpec{mesh, std::move(placements), {std::move(shape), DType::Float32}};
}

std::vector<RedistributeKind> kinds(const RedistributePlan& plan) {
  std::vector<RedistributeKind> out;
  for (const RedistributeStep& step : plan.steps) out.push_back(step.kind);
  return out;
}

TEST(RedistributePlan, EachBasicTransitionUsesItsCollective) {
  DeviceMesh mesh({4});
  auto plan = [&](Placement from, Placement to) {
    return plan_redistribute(spec_of(mesh, {from}, {8, 8}), std::vector<Placement>{to}, links(mesh));
  };
  using K = RedistributeKind;
  EXPECT_EQ(kinds(plan(Shard{0}, Replicate{})), std::vector<K>{K::AllGather});
  EXPECT_EQ(kinds(plan(Partial{}, Replicate{})), std::vector<K>{K::AllReduce});
  EXPECT_EQ(kinds(plan(Partial{}, Shard{1})), std::vector<K>{K::ReduceScatter});
  EXPECT_EQ(kinds(plan(Shard{0}, Shard{1})), std::vector<K>{K::AllToAll});
  EXPECT_EQ(kinds(plan(Replicate{}, Shard{1})), std::vector<K>{K::LocalSlice});
  EXPECT_EQ(kinds(plan(Replicate{}, Partial{})), std::vector<K>{K::LocalPartition});
  EXPECT_EQ(kinds(plan(MaskPartial{8}, Replicate{})), (std::vector<K>{K::ApplyMask, K::AllReduce}));
  EXPECT_EQ(kinds(plan(MaskPartial{8}, Shard{0})), (std::vector<K>{K::ApplyMask, K::ReduceScatter}));
  EXPECT_TRUE(plan(Shard{0}, Shard{0}).steps.empty());
  EXPECT_EQ(plan(Shard{0}, Replicate{}).str(), "[S(0)] -> [R]: all_gather(mesh dim 0, dim 0, 256 B)");
}

TEST(RedistributePlan, MeshDimsOfOneDeviceMoveNothing) {
  // On a mesh dim of size 1 every placement is the whole value: no collective, no slice. Masks
  // still apply, and the other dim's steps stay.
  using K = RedistributeKind;
  DeviceMesh one({1});
  auto plan1 = [&](Placement from, Placement to) {
    return plan_redistribute(spec_of(one, {from}, {8, 8}), std::vector<Placement>{to}, links(one));
  };
  EXPECT_TRUE(plan1(Shard{0}, Replicate{}).steps.empty());
  EXPECT_TRUE(plan1(Partial{}, Shard{1}).steps.empty());
  EXPECT_TRUE(plan1(Shard{0}, Shard{1}).steps.empty());
  EXPECT_TRUE(plan1(Replicate{}, Partial{}).steps.empty());
  EXPECT_EQ(plan1(Shard{0}, Replicate{}).seconds, 0.0);
  EXPECT_EQ(kinds(plan1(MaskPartial{8}, Replicate{})), std::vector<K>{K::ApplyMask});
  DeviceMesh mixed({2, 1});
  RedistributePlan plan = plan_redistribute(spec_of(mixed, {Shard{0}, Shard{1}}, {8, 8}),
                                            std::vector<Placement>{Replicate{}, Replicate{}}, links(mixed));
  ASSERT_EQ(kinds(plan), std::vector<K>{K::AllGather});
  EXPECT_EQ(plan.steps[0].mesh_dim, 0);
}

TEST(RedistributePlan, UnevenShardToShardGathersThenSlices) {
  DeviceMesh mesh({4});
  RedistributePlan plan =
      plan_redistribute(spec_of(mesh, {Shard{0}}, {5, 8}), std::vector<Placement>{Shard{1}}, links(mesh));
  using K = RedistributeKind;
  EXPECT_EQ(kinds(plan), (std::vector<K>{K::AllGather, K::LocalSlice}));
}

TEST(RedistributePlan, NestedShardsAreUndoneInnermostFirst) {
  DeviceMesh mesh({2, 2});
  RedistributePlan plan = plan_redistribute(spec_of(mesh, {Shard{0}, Shard{0}}, {8, 8}),
                                            std::vector<Placement>{Replicate{}, Shard{0}}, links(mesh));
  // Mesh dim 0 splits first, so both go (dim 1 first) and dim 1 is sliced again.
  ASSERT_EQ(plan.steps.size(), 3u) << plan.str();
  EXPECT_EQ(plan.steps[0].mesh_dim, 1);
  EXPECT_EQ(plan.steps[1].mesh_dim, 0);
  EXPECT_EQ(plan.steps[2].kind, RedistributeKind::LocalSlice);
}

TEST(RedistributePlan, CostsFollowTheAlphaBetaModel) {
  DeviceMesh mesh({2, 4});
  MeshTopology topology{{dist::infiniband_ndr400(), dist::nvlink4_h100()}};
  DTensorSpec partial = spec_of(mesh, {Replicate{}, Partial{}}, {1024, 1024});
  double bytes = 1024.0 * 1024 * 4;
  double expected = dist::all_reduce_cost(4, bytes, dist::nvlink4_h100());
  EXPECT_DOUBLE_EQ(redistribute_cost(partial, std::vector<Placement>{Replicate{}, Replicate{}}, topology), expected);
  // The same reduction across nodes costs more.
  DTensorSpec across = spec_of(mesh, {Partial{}, Replicate{}}, {1024, 1024});
  EXPECT_GT(redistribute_cost(across, std::vector<Placement>{Replicate{}, Replicate{}}, topology), expected);
  // reduce_scatter is cheaper than all_reduce.
  EXPECT_LT(redistribute_cost(partial, std::vector<Placement>{Replicate{}, Shard{0}}, topology), expected);
  // Local changes are free.
  EXPECT_EQ(redistribute_cost(spec_of(mesh, {Replicate{}, Replicate{}}, {8, 8}),
                              std::vector<Placement>{Shard{0}, Partial{}}, topology),
            0.0);
}

TEST(RedistributePlan, BadTargetsAreValueErrors) {
  DeviceMesh mesh({2, 2});
  DTensorSpec spec = spec_of(mesh, {Shard{0}, Replicate{}}, {4, 4});
  EXPECT_THROW(plan_redistribute(spec, std::vector<Placement>{Replicate{}}, links(mesh)), ValueError);
  EXPECT_THROW(plan_redistribute(spec, std::vector<Placement>{Shard{2}, Replicate{}}, links(mesh)), ValueError);
  EXPECT_THROW(plan_redistribute(spec, std::vector<Placement>{MaskPartial{4}, Replicate{}}, links(mesh)), ValueError);
}

TEST(LinkProfiles, MeasuredBackendsFit) {
  dist::LinkProfile threads = threads_backend_profile();
  dist::LinkProfile mpi = mpi_backend_profile();
  EXPECT_GT(threads.beta_bytes_per_s, 1e9);
  EXPECT_GT(mpi.beta_bytes_per_s, 1e8);
  EXPECT_GE(threads.alpha_s, 0.0);
}

// distribute -> redistribute -> full_tensor gives back the global tensor, and the local shard is
// the expected block, for every ordered pair of placements (dtensor_checks.h, shared with mpi).
void check_every_pair(const DeviceMesh& mesh, const Shape& shape) {
  std::mutex mutex;
  std::set<std::string> failures;
  dist::launch(
      static_cast<int>(mesh.size()),
      [&](int, dist::ProcessGroup& world) {
        auto groups = std::make_shared<dist::MeshGroups>(mesh, world);
        std::vector<std::string> found = testing::check_redistribution_pairs(groups, shape);
        std::lock_guard<std::mutex> lock(mutex);
        failures.insert(found.begin(), found.end());
      },
      dist::LaunchOptions{dist::Backend::Threads});
  EXPECT_TRUE(failures.empty()) << mesh.str() << " " << shape_str(shape) << ": " << failures.size()
                                << " failures, first: " << *failures.begin();
}

TEST(RedistributeThreads, EveryPairOnMesh4) {
  check_every_pair(DeviceMesh({4}), {8, 4});
  check_every_pair(DeviceMesh({4}), {5, 3});
}
TEST(RedistributeThreads, EveryPairOnMesh2x2) {
  check_every_pair(DeviceMesh({2, 2}), {8, 4});
  check_every_pair(DeviceMesh({2, 2}), {5, 3});
}
TEST(RedistributeThreads, EveryPairOnMeshesWithADimOfOneDevice) {
  check_every_pair(DeviceMesh({1}), {5, 3});
  check_every_pair(DeviceMesh({2, 1}), {5, 3});
}
TEST(RedistributeThreads, EveryPairOnMesh2x4) {
  check_every_pair(DeviceMesh({2, 4}), {8, 8});
  check_every_pair(DeviceMesh({2, 4}), {7, 3});
}

}  // namespace
}  // namespace px
