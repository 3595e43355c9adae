// The builder's pieces: empty-shard detection with nesting, compressed time, overlaps.

#include "plan/builder_internal.h"

#include <gtest/gtest.h>

namespace px::plan::detail {
namespace {

TEST(BuilderInternal, EmptyShardsUnderNesting) {
  dist::DeviceMesh line({4});
  EXPECT_FALSE(leaves_empty_shard({8}, std::vector<Placement>{Shard{0}}, line));
  EXPECT_FALSE(leaves_empty_shard({7}, std::vector<Placement>{Shard{0}}, line));  // 2, 2, 2, 1
  EXPECT_TRUE(leaves_empty_shard({5}, std::vector<Placement>{Shard{0}}, line));   // 2, 2, 1, 0
  EXPECT_TRUE(leaves_empty_shard({3, 8}, std::vector<Placement>{Shard{0}}, line));
  EXPECT_FALSE(leaves_empty_shard({3, 8}, std::vector<Placement>{Shard{-1}}, line));
  EXPECT_FALSE(leaves_empty_shard({0}, std::vector<Placement>{Shard{0}}, line));  // nothing to split
  // 9 over 2 gives blocks of 5 and 4; 5 over 4 gives 2, 2, 1, 0: an empty block at coordinate
  // (0, 3) although the last coordinate's block is not empty.
  dist::DeviceMesh grid({2, 4});
  EXPECT_TRUE(leaves_empty_shard({9}, std::vector<Placement>{Shard{0}, Shard{0}}, grid));
  EXPECT_FALSE(leaves_empty_shard({8}, std::vector<Placement>{Shard{0}, Shard{0}}, grid));
  EXPECT_FALSE(leaves_empty_shard({2, 4}, std::vector<Placement>{Shard{0}, Shard{1}}, grid));
  EXPECT_FALSE(leaves_empty_shard({1}, std::vector<Placement>{Replicate{}, Partial{}}, grid));
}

TEST(BuilderInternal, InputStrategiesAllReplicateFirst) {
  dist::DeviceMesh grid({2, 2});
  std::vector<NdStrategy> matrix = input_strategies({{4, 6}, DType::Float32}, grid);
  ASSERT_EQ(matrix.size(), 9u);
  EXPECT_EQ(matrix[0].outputs[0], (std::vector<Placement>{Replicate{}, Replicate{}}));
  EXPECT_EQ(matrix[1].outputs[0], (std::vector<Placement>{Replicate{}, Shard{0}}));
  EXPECT_TRUE(matrix[0].inputs.empty());
  EXPECT_EQ(input_strategies({{}, DType::Float32}, grid).size(), 1u);   // a scalar
  EXPECT_EQ(input_strategies({{3}, DType::Float32}, grid).size(), 3u);  // S(0) twice would leave 3 -> 2, 1 -> 1, 0
}

TEST(BuilderInternal, TimeCompressionAndOverlap) {
  // Real steps 0..9; 3..6 removed (a repeated layer's steps).
  std::vector<bool> kept{true, true, true, false, false, false, false, true, true, true};
  TimeCompression time(kept);
  EXPECT_EQ(time.steps(), 6);
  int64_t start = 0, end = 0;
  ASSERT_TRUE(time.map(0, 10, start, end));
  EXPECT_EQ(start, 0);
  EXPECT_EQ(end, 6);
  ASSERT_TRUE(time.map(2, 8, start, end));  // steps 2 and 7 kept: compressed 2 and 3
  EXPECT_EQ(start, 2);
  EXPECT_EQ(end, 4);
  EXPECT_FALSE(time.map(3, 7, start, end));  // wholly inside the removed steps
  ASSERT_TRUE(time.map(4, 9, start, end));   // from the first kept step after 4
  EXPECT_EQ(start, 3);
  EXPECT_EQ(end, 5);

  EXPECT_EQ(max_overlap({}), 0);
  EXPECT_EQ(max_overlap({{0, 2}, {2, 4}, {4, 6}}), 1);  // touching intervals do not overlap
  EXPECT_EQ(max_overlap({{0, 10}, {1, 3}, {2, 5}, {4, 6}}), 3);
  EXPECT_EQ(max_overlap({{0, 10}, {0, 10}, {5, 5}}), 2);  // an empty interval counts for nothing
}

}  // namespace
}  // namespace px::plan::detail
