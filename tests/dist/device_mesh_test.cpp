#include "parallax/dist/device_mesh.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "parallax/core/error.h"
#include "parallax/core/tensor.h"
#include "parallax/dist/process_group.h"
#include "support/test_util.h"

namespace px::dist {
namespace {

using px::testing::error_message;
using px::testing::expect_value_error;
using Ranks = std::vector<int>;
using Coord = std::vector<int64_t>;

// Invariants every mesh satisfies: coordinates round-trip, each dim's groups partition the
// ranks, and group_ranks() is the group of groups() that holds the rank.
void expect_consistent(const DeviceMesh& mesh) {
  for (int rank : mesh.ranks()) {
    EXPECT_EQ(mesh.rank_at(mesh.coordinate(rank)), rank) << mesh.str();
  }
  for (int64_t dim = 0; dim < mesh.ndim(); ++dim) {
    auto groups = mesh.groups(dim);
    ASSERT_EQ(static_cast<int64_t>(groups.size()), mesh.size() / mesh.size(dim)) << mesh.str() << " dim " << dim;
    Ranks seen;
    for (const Ranks& group : groups) {
      ASSERT_EQ(static_cast<int64_t>(group.size()), mesh.size(dim));
      for (size_t k = 0; k < group.size(); ++k) {
        Coord coord = mesh.coordinate(group[k]);
        EXPECT_EQ(coord[static_cast<size_t>(dim)], static_cast<int64_t>(k)) << "ordered by coordinate " << dim;
        Coord first = mesh.coordinate(group[0]);
        coord[static_cast<size_t>(dim)] = first[static_cast<size_t>(dim)];
        EXPECT_EQ(coord, first) << "differs only in coordinate " << dim;
        EXPECT_EQ(mesh.group_ranks(dim, group[k]), group);
        seen.push_back(group[k]);
      }
    }
    std::sort(seen.begin(), seen.end());
    Ranks all = mesh.ranks();
    std::sort(all.begin(), all.end());
    EXPECT_EQ(seen, all) << mesh.str() << " dim " << dim;
  }
}

TEST(DeviceMesh, OneDimensional) {
  DeviceMesh mesh({4});
  EXPECT_EQ(mesh.ndim(), 1);
  EXPECT_EQ(mesh.size(), 4);
  EXPECT_EQ(mesh.size(0), 4);
  EXPECT_EQ(mesh.dim_names(), std::vector<std::string>{"d0"});
  EXPECT_EQ(mesh.str(), "DeviceMesh(d0=4)");
  EXPECT_EQ(mesh.ranks(), (Ranks{0, 1, 2, 3}));
  EXPECT_EQ(mesh.coordinate(2), Coord{2});
  EXPECT_EQ(mesh.rank_at(Coord{3}), 3);
  EXPECT_EQ(mesh.group_ranks(0, 1), (Ranks{0, 1, 2, 3}));
  EXPECT_EQ(mesh.groups(0), (std::vector<Ranks>{{0, 1, 2, 3}}));
  expect_consistent(mesh);
}

TEST(DeviceMesh, TwoByTwo) {
  DeviceMesh mesh({2, 2}, {"dp", "tp"});
  EXPECT_EQ(mesh.str(), "DeviceMesh(dp=2, tp=2)");
  EXPECT_EQ(mesh.coordinate(0), (Coord{0, 0}));
  EXPECT_EQ(mesh.coordinate(1), (Coord{0, 1}));
  EXPECT_EQ(mesh.coordinate(2), (Coord{1, 0}));
  EXPECT_EQ(mesh.coordinate(3), (Coord{1, 1}));
  EXPECT_EQ(mesh.groups(0), (std::vector<Ranks>{{0, 2}, {1, 3}}));
  EXPECT_EQ(mesh.groups(mesh.dim_index("tp")), (std::vector<Ranks>{{0, 1}, {2, 3}}));
  EXPECT_EQ(mesh.group_ranks(mesh.dim_index("dp"), 3), (Ranks{1, 3}));
  EXPECT_EQ(mesh.group_ranks(mesh.dim_index("tp"), 3), (Ranks{2, 3}));
  EXPECT_EQ(mesh.size("tp"), 2);
  expect_consistent(mesh);
}

TEST(DeviceMesh, TwoByFour) {
  DeviceMesh mesh({2, 4}, {"dp", "tp"});
  EXPECT_EQ(mesh.str(), "DeviceMesh(dp=2, tp=4)");
  EXPECT_EQ(mesh.size(), 8);
  EXPECT_EQ(mesh.size(-1), 4);
  EXPECT_EQ(mesh.coordinate(5), (Coord{1, 1}));
  EXPECT_EQ(mesh.coordinate(7), (Coord{1, 3}));
  EXPECT_EQ(mesh.rank_at(Coord{1, 2}), 6);
  EXPECT_EQ(mesh.groups(0), (std::vector<Ranks>{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(mesh.groups(1), (std::vector<Ranks>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(mesh.group_ranks(0, 6), (Ranks{2, 6}));
  EXPECT_EQ(mesh.group_ranks(-1, 6), (Ranks{4, 5, 6, 7}));
  expect_consistent(mesh);
}

TEST(DeviceMesh, EightByEightForPlanning) {
  DeviceMesh mesh({8, 8}, {"node", "gpu"});
  EXPECT_EQ(mesh.size(), 64);
  EXPECT_EQ(mesh.coordinate(27), (Coord{3, 3}));
  EXPECT_EQ(mesh.coordinate(63), (Coord{7, 7}));
  EXPECT_EQ(mesh.group_ranks(0, 27), (Ranks{3, 11, 19, 27, 35, 43, 51, 59}));
  EXPECT_EQ(mesh.group_ranks(1, 27), (Ranks{24, 25, 26, 27, 28, 29, 30, 31}));
  EXPECT_EQ(mesh.groups(0).size(), 8u);
  EXPECT_EQ(mesh.groups(0)[5], (Ranks{5, 13, 21, 29, 37, 45, 53, 61}));
  EXPECT_EQ(mesh.groups(1)[7], (Ranks{56, 57, 58, 59, 60, 61, 62, 63}));
  expect_consistent(mesh);
}

TEST(DeviceMesh, SixteenByEightByFourForPlanning) {
  DeviceMesh mesh({16, 8, 4}, {"dp", "pp", "tp"});
  EXPECT_EQ(mesh.size(), 512);
  EXPECT_EQ(mesh.str(), "DeviceMesh(dp=16, pp=8, tp=4)");
  EXPECT_EQ(mesh.coordinate(301), (Coord{9, 3, 1}));  // 301 = 9*32 + 3*4 + 1
  EXPECT_EQ(mesh.rank_at(Coord{15, 7, 3}), 511);
  Ranks dp;
  for (int k = 0; k < 16; ++k) dp.push_back(13 + 32 * k);
  EXPECT_EQ(mesh.group_ranks(0, 301), dp);
  EXPECT_EQ(mesh.group_ranks(1, 301), (Ranks{289, 293, 297, 301, 305, 309, 313, 317}));
  EXPECT_EQ(mesh.group_ranks(2, 301), (Ranks{300, 301, 302, 303}));
  auto pp = mesh.groups(1);
  ASSERT_EQ(pp.size(), 64u);
  EXPECT_EQ(pp[0], (Ranks{0, 4, 8, 12, 16, 20, 24, 28}));
  EXPECT_EQ(pp[1], (Ranks{1, 5, 9, 13, 17, 21, 25, 29}));
  EXPECT_EQ(pp[5], (Ranks{33, 37, 41, 45, 49, 53, 57, 61}));  // dp=1, tp=1
  EXPECT_EQ(mesh.groups(0).size(), 32u);
  EXPECT_EQ(mesh.groups(2).size(), 128u);
  expect_consistent(mesh);
}

TEST(DeviceMesh, ExplicitRanks) {
  DeviceMesh mesh({2, 2}, {"a", "b"}, {3, 2, 1, 0});
  EXPECT_EQ(mesh.str(), "DeviceMesh(a=2, b=2, ranks=[3,2,1,0])");
  EXPECT_EQ(mesh.coordinate(3), (Coord{0, 0}));
  EXPECT_EQ(mesh.coordinate(1), (Coord{1, 0}));
  EXPECT_EQ(mesh.rank_at(Coord{0, 1}), 2);
  EXPECT_EQ(mesh.group_ranks(0, 3), (Ranks{3, 1}));
  EXPECT_EQ(mesh.groups(1), (std::vector<Ranks>{{3, 2}, {1, 0}}));
  expect_consistent(mesh);

  DeviceMesh sub({4}, {}, {4, 5, 6, 7});  // a mesh over some ranks of a larger job
  EXPECT_TRUE(sub.contains(6));
  EXPECT_FALSE(sub.contains(0));
  EXPECT_EQ(sub.coordinate(6), Coord{2});
  expect_consistent(sub);
  // A list equal to the default layout is the default mesh.
  EXPECT_EQ(DeviceMesh({2, 2}, {}, {0, 1, 2, 3}), DeviceMesh({2, 2}));
}

TEST(DeviceMesh, Equality) {
  EXPECT_EQ(DeviceMesh({2, 4}, {"dp", "tp"}), DeviceMesh({2, 4}, {"dp", "tp"}));
  EXPECT_NE(DeviceMesh({2, 4}), DeviceMesh({4, 2}));
  EXPECT_NE(DeviceMesh({2, 4}), DeviceMesh({2, 4}, {"dp", "tp"}));
  EXPECT_NE(DeviceMesh({4}), DeviceMesh({4}, {}, {1, 0, 2, 3}));
  EXPECT_EQ(DeviceMesh({2, 4}, {"d0", "d1"}), DeviceMesh({2, 4}));
}

TEST(DeviceMesh, Errors) {
  expect_value_error([] { DeviceMesh({}); }, "DeviceMesh: the shape is empty; a mesh has at least one dimension");
  expect_value_error(
      [] {
        DeviceMesh({2, 0});
      },
      "DeviceMesh: shape [2,0] has a dimension of size 0; every dimension needs at least one rank");
  expect_value_error(
      [] {
        DeviceMesh({2, 2}, {"dp"});
      },
      "DeviceMesh: 1 dim names ('dp') for a mesh of shape [2,2]; give one name per dimension");
  expect_value_error(
      [] {
        DeviceMesh({2, 2}, {"dp", "dp"});
      },
      "DeviceMesh: dim name 'dp' is used by dimensions 0 and 1; names must be unique");
  expect_value_error([] { DeviceMesh({2}, {""}); }, "DeviceMesh: the name of dimension 0 is empty");
  expect_value_error(
      [] {
        DeviceMesh({2, 2}, {}, {0, 1, 2});
      },
      "DeviceMesh: 3 ranks given for a mesh of shape [2,2], which holds 4");
  expect_value_error([] { DeviceMesh({2}, {}, {1, 1}); }, "DeviceMesh: rank 1 appears twice");
  expect_value_error([] { DeviceMesh({2}, {}, {0, -1}); }, "DeviceMesh: rank -1 is negative");

  DeviceMesh mesh({2, 4}, {"dp", "tp"});
  expect_value_error([&] { mesh.dim_index("pp"); },
                     "DeviceMesh: no dimension named 'pp' in DeviceMesh(dp=2, tp=4) (dimensions: 'dp', 'tp')");
  expect_value_error([&] { mesh.coordinate(8); }, "DeviceMesh: rank 8 is not in DeviceMesh(dp=2, tp=4)");
  expect_value_error([&] { mesh.coordinate(-1); }, "DeviceMesh: rank -1 is not in DeviceMesh(dp=2, tp=4)");
  expect_value_error([&] { mesh.rank_at(Coord{1}); },
                     "DeviceMesh: coordinate [1] has 1 entries; DeviceMesh(dp=2, tp=4) has 2 dimensions");
  expect_value_error(
      [&] {
        mesh.rank_at(Coord{0, 4});
      },
      "DeviceMesh: coordinate [0,4] is out of range for DeviceMesh(dp=2, tp=4)");
  expect_value_error([&] { mesh.groups(2); },
                     "DeviceMesh: dim 2 is out of range for DeviceMesh(dp=2, tp=4) with 2 dimensions");
  EXPECT_THROW(mesh.group_ranks(-3, 0), ValueError);
  EXPECT_THROW(mesh.group_ranks(0, 9), ValueError);
}

// Binds a mesh to a threads ProcessGroup and checks each dim's group: its size, its rank
// (= this rank's coordinate along the dim), and its members, found by an all_gather of world ranks.
void check_bound_mesh(const DeviceMesh& mesh) {
  std::mutex mutex;
  std::vector<std::string> failures;
  auto fail = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex);
    failures.push_back(what);
  };
  launch(
      static_cast<int>(mesh.size()),
      [&](int rank, ProcessGroup& world) {
        MeshGroups groups(mesh, world);
        if (groups.rank() != rank) fail("rank " + std::to_string(rank) + ": MeshGroups::rank()");
        if (groups.coordinate() != mesh.coordinate(rank)) fail("rank " + std::to_string(rank) + ": coordinate");
        for (int64_t dim = 0; dim < mesh.ndim(); ++dim) {
          ProcessGroup& group = groups.group(dim);
          const std::string where = "rank " + std::to_string(rank) + " dim " + std::to_string(dim);
          if (group.size() != mesh.size(dim)) fail(where + ": size " + std::to_string(group.size()));
          if (group.rank() != groups.coordinate(dim)) fail(where + ": group rank " + std::to_string(group.rank()));
          Tensor mine = Tensor::from_vector({static_cast<double>(rank)}, {1}, DType::Int64);
          Tensor all = Tensor::zeros({group.size()}, DType::Int64);
          group.all_gather(mine, all);
          std::vector<int64_t> expected;
          for (int member : mesh.group_ranks(dim, rank)) expected.push_back(member);
          if (all.to_vector<int64_t>() != expected) fail(where + ": members differ");
        }
        if (&groups.group(mesh.dim_names().back()) != &groups.group(-1)) fail("group by name");
      },
      LaunchOptions{Backend::Threads});
  EXPECT_TRUE(failures.empty()) << mesh.str() << ": " << failures.front();
}

TEST(MeshGroups, TwoByTwoOnThreads) { check_bound_mesh(DeviceMesh({2, 2}, {"dp", "tp"})); }
TEST(MeshGroups, TwoByFourOnThreads) { check_bound_mesh(DeviceMesh({2, 4}, {"dp", "tp"})); }
TEST(MeshGroups, OneDimensionalAndPermutedOnThreads) {
  check_bound_mesh(DeviceMesh({4}));
  check_bound_mesh(DeviceMesh({2, 2}, {}, {3, 1, 2, 0}));
}

TEST(MeshGroups, SizeMismatchIsValueError) {
  std::mutex mutex;
  std::vector<std::string> messages;
  launch(
      4,
      [&](int, ProcessGroup& world) {
        std::string message = error_message([&] { MeshGroups(DeviceMesh({2, 4}), world); });
        std::lock_guard<std::mutex> lock(mutex);
        messages.push_back(message);
      },
      LaunchOptions{Backend::Threads});
  ASSERT_EQ(messages.size(), 4u);
  for (const std::string& message : messages) {
    EXPECT_EQ(message, "ValueError: MeshGroups: DeviceMesh(d0=2, d1=4) has 8 ranks but the process group has 4");
  }
}

}  // namespace
}  // namespace px::dist
