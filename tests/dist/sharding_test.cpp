#include "parallax/dist/sharding.h"

#include <gtest/gtest.h>

#include "parallax/core/error.h"
#include "parallax/core/placement.h"
#include "support/test_util.h"

namespace px::dist {
namespace {

using px::testing::expect_value_error;
using Placements = std::vector<Placement>;

std::vector<int64_t> sizes(int64_t size, int64_t n) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(shard_size(size, n, i));
  return out;
}
std::vector<int64_t> offsets(int64_t size, int64_t n) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(shard_offset(size, n, i));
  return out;
}

TEST(Placement, MaskPartialIsAComparableValue) {
  EXPECT_EQ(Placement(MaskPartial{}), Placement(MaskPartial{0}));
  EXPECT_EQ(Placement(MaskPartial{1000}), Placement(MaskPartial{1000}));
  EXPECT_NE(Placement(MaskPartial{1000}), Placement(MaskPartial{999}));
  EXPECT_NE(Placement(MaskPartial{}), Placement(Partial{ReduceOp::Sum}));
  EXPECT_EQ(placement_str(MaskPartial{}), "MP");
  EXPECT_EQ(placement_str(MaskPartial{1000}), "MP(1000)");
  EXPECT_EQ(placements_str(Placements{Shard{0}, Replicate{}, Partial{ReduceOp::Max}, MaskPartial{}}),
            "[S(0), R, P(max), MP]");
  EXPECT_EQ(placements_str(Placements{}), "[]");
  EXPECT_TRUE(is_partial(MaskPartial{}));
  EXPECT_TRUE(is_partial(Partial{ReduceOp::Min}));
  EXPECT_FALSE(is_partial(Shard{1}));
  EXPECT_FALSE(is_partial(Replicate{}));
  EXPECT_EQ(partial_reduce(MaskPartial{7}), ReduceOp::Sum);
  EXPECT_EQ(partial_reduce(Partial{ReduceOp::Avg}), ReduceOp::Avg);
  expect_value_error([] { partial_reduce(Shard{1}); }, "partial_reduce: placement S(1) is not Partial or MaskPartial");
}

TEST(Placement, ParseRoundTrips) {
  for (const Placement& p :
       Placements{Replicate{}, Shard{0}, Shard{-1}, Shard{12}, Partial{ReduceOp::Sum}, Partial{ReduceOp::Avg},
                  Partial{ReduceOp::Max}, Partial{ReduceOp::Min}, MaskPartial{}, MaskPartial{50257}}) {
    EXPECT_EQ(parse_placement(placement_str(p)), p) << placement_str(p);
  }
  EXPECT_EQ(parse_placement("P"), Placement(Partial{ReduceOp::Sum}));
  for (const char* bad : {"", "X", "S", "S()", "S(1", "S(a)", "P(prod)", "MP(-1)", "MP()", "R(0)", "S(1)x"}) {
    expect_value_error([&] { parse_placement(bad); },
                       "parse_placement: '" + std::string(bad) +
                           "' is not a placement (expected R, S(<dim>), P(sum|avg|max|min), MP or "
                           "MP(<num_embeddings>))");
  }
}

TEST(Sharding, ChunkSemantics) {
  EXPECT_EQ(chunk_size(5, 4), 2);
  EXPECT_EQ(sizes(5, 4), (std::vector<int64_t>{2, 2, 1, 0}));
  EXPECT_EQ(offsets(5, 4), (std::vector<int64_t>{0, 2, 4, 5}));
  EXPECT_EQ(sizes(8, 4), (std::vector<int64_t>{2, 2, 2, 2}));
  EXPECT_EQ(offsets(8, 4), (std::vector<int64_t>{0, 2, 4, 6}));
  EXPECT_EQ(sizes(7, 4), (std::vector<int64_t>{2, 2, 2, 1}));
  EXPECT_EQ(sizes(9, 4), (std::vector<int64_t>{3, 3, 3, 0})) << "torch.chunk(9, 4) gives three chunks of 3";
  EXPECT_EQ(offsets(9, 4), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(sizes(10, 3), (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ(sizes(2, 4), (std::vector<int64_t>{1, 1, 0, 0}));
  EXPECT_EQ(offsets(2, 4), (std::vector<int64_t>{0, 1, 2, 2}));
  EXPECT_EQ(chunk_size(0, 3), 0);
  EXPECT_EQ(sizes(0, 3), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(offsets(0, 3), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(sizes(6, 1), std::vector<int64_t>{6});
  EXPECT_EQ(chunk_size(7, 4), 2);
  EXPECT_EQ(chunk_size(1, 8), 1);
}

TEST(Sharding, ShardsTileTheDim) {
  for (int64_t size = 0; size <= 20; ++size) {
    for (int64_t n = 1; n <= 9; ++n) {
      int64_t next = 0;
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(shard_offset(size, n, i), next) << size << " over " << n << ", shard " << i;
        EXPECT_LE(shard_size(size, n, i), chunk_size(size, n));
        if (i + 1 < n) {
          EXPECT_GE(shard_size(size, n, i), shard_size(size, n, i + 1));
        }
        next += shard_size(size, n, i);
      }
      EXPECT_EQ(next, size);
    }
  }
}

TEST(Sharding, ChunkErrors) {
  expect_value_error([] { chunk_size(-1, 2); }, "chunk_size: dim size -1 is negative");
  expect_value_error([] { chunk_size(4, 0); }, "chunk_size: 0 shards; at least one is needed");
  expect_value_error([] { shard_size(4, 2, 2); }, "shard_size: shard index 2 is out of range for 2 shards");
  expect_value_error([] { shard_offset(4, 2, -1); }, "shard_offset: shard index -1 is out of range for 2 shards");
}

TEST(Sharding, LocalShapeOneMeshDim) {
  DeviceMesh mesh({4});
  Shape global{5, 3};
  EXPECT_EQ(local_shape(global, Placements{Shard{0}}, mesh, {{0}}), (Shape{2, 3}));
  EXPECT_EQ(local_shape(global, Placements{Shard{0}}, mesh, {{3}}), (Shape{0, 3}));
  EXPECT_EQ(local_shard(global, Placements{Shard{0}}, mesh, {{3}}), (LocalShard{{0, 3}, {5, 0}}));
  EXPECT_EQ(local_shard(global, Placements{Shard{-1}}, mesh, {{2}}), (LocalShard{{5, 1}, {0, 2}}));
  for (const Placement& p : Placements{Replicate{}, Partial{ReduceOp::Max}, MaskPartial{5}}) {
    EXPECT_EQ(local_shard(global, Placements{p}, mesh, {{1}}), (LocalShard{{5, 3}, {0, 0}})) << placement_str(p);
  }
  EXPECT_EQ(padded_local_shape(global, Placements{Shard{0}}, mesh), (Shape{2, 3}));
  EXPECT_EQ(padded_local_shape(global, Placements{Replicate{}}, mesh), (Shape{5, 3}));
}

TEST(Sharding, TwoMeshDimsOnDifferentTensorDims) {
  DeviceMesh mesh({2, 4}, {"dp", "tp"});
  Shape global{6, 10};
  Placements placements{Shard{1}, Shard{0}};
  EXPECT_EQ(local_shard(global, placements, mesh, {{0, 0}}), (LocalShard{{2, 5}, {0, 0}}));
  EXPECT_EQ(local_shard(global, placements, mesh, {{1, 2}}), (LocalShard{{2, 5}, {4, 5}}));
  EXPECT_EQ(local_shard(global, placements, mesh, {{1, 3}}), (LocalShard{{0, 5}, {6, 5}}));
  EXPECT_EQ(padded_local_shape(global, placements, mesh), (Shape{2, 5}));
  EXPECT_EQ(local_shape(global, Placements{Replicate{}, Shard{1}}, mesh, {{1, 3}}), (Shape{6, 1}));
}

TEST(Sharding, SameTensorDimNestsInMeshDimOrder) {
  DeviceMesh mesh({2, 2});
  Shape global{5, 6};
  Placements placements{Shard{0}, Shard{0}};
  // Mesh dim 0 splits 5 rows into 3 + 2; mesh dim 1 splits those into 2 + 1 and 1 + 1.
  EXPECT_EQ(local_shard(global, placements, mesh, {{0, 0}}), (LocalShard{{2, 6}, {0, 0}}));
  EXPECT_EQ(local_shard(global, placements, mesh, {{0, 1}}), (LocalShard{{1, 6}, {2, 0}}));
  EXPECT_EQ(local_shard(global, placements, mesh, {{1, 0}}), (LocalShard{{1, 6}, {3, 0}}));
  EXPECT_EQ(local_shard(global, placements, mesh, {{1, 1}}), (LocalShard{{1, 6}, {4, 0}}));
  EXPECT_EQ(padded_local_shape(global, placements, mesh), (Shape{2, 6}));

  DeviceMesh big({16, 8, 4});
  Placements nested{Shard{0}, Replicate{}, Shard{0}};
  // 100 rows over 16 (chunks of 7), then each block over 4.
  EXPECT_EQ(local_shard(Shape{100, 3}, nested, big, {{9, 5, 1}}), (LocalShard{{2, 3}, {65, 0}}));
  EXPECT_EQ(local_shard(Shape{100, 3}, nested, big, {{14, 0, 0}}), (LocalShard{{1, 3}, {98, 0}}));
  EXPECT_EQ(local_shard(Shape{100, 3}, nested, big, {{14, 0, 3}}), (LocalShard{{0, 3}, {100, 0}}));
  EXPECT_EQ(local_shard(Shape{100, 3}, nested, big, {{15, 7, 3}}), (LocalShard{{0, 3}, {100, 0}}));
  EXPECT_EQ(padded_local_shape(Shape{100, 3}, nested, big), (Shape{2, 3}));
  // Every row is owned exactly once across the mesh's coordinates (ignoring the replicated dim).
  std::vector<int> owners(100, 0);
  for (int64_t a = 0; a < 16; ++a) {
    for (int64_t c = 0; c < 4; ++c) {
      LocalShard shard = local_shard(Shape{100, 3}, nested, big, {{a, 0, c}});
      for (int64_t row = shard.offset[0]; row < shard.offset[0] + shard.shape[0]; ++row) ++owners[row];
    }
  }
  EXPECT_EQ(owners, std::vector<int>(100, 1));
}

TEST(Sharding, LocalShardErrors) {
  DeviceMesh mesh({2, 4}, {"dp", "tp"});
  expect_value_error(
      [&] {
        local_shape(Shape{4, 4}, Placements{Shard{0}}, mesh, {{0, 0}});
      },
      "local_shard: 1 placements [S(0)] for DeviceMesh(dp=2, tp=4), which has 2 dimensions");
  EXPECT_THROW(local_shape(Shape{4, 4}, Placements{Shard{2}, Replicate{}}, mesh, {{0, 0}}), ValueError);
  EXPECT_THROW(local_shape(Shape{4, 4}, Placements{Replicate{}, Replicate{}}, mesh, {{0, 4}}), ValueError);
  EXPECT_THROW(local_shape(Shape{4, 4}, Placements{Replicate{}, Replicate{}}, mesh, {{0}}), ValueError);
  EXPECT_THROW(padded_local_shape(Shape{4}, Placements{Shard{-2}, Replicate{}}, mesh), ValueError);
}

}  // namespace
}  // namespace px::dist
