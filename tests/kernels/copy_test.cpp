// kernels::copy_strided: layouts (transposed, broadcast, strided destination,
// scalars, empty) and every dtype conversion rule.

#include "parallax/kernels/copy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <span>
#include <vector>

namespace px::kernels {
namespace {

template <class T>
std::vector<T> iota(int64_t count) {
  std::vector<T> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<T>(i);
  return out;
}

TEST(CopyStrided, TransposedSourceToContiguous) {
  // src holds a [3,4] matrix; read it as its [4,3] transpose.
  std::vector<double> src = iota<double>(12);
  std::vector<double> dst(12, -1);
  const int64_t shape[] = {4, 3}, src_strides[] = {1, 4}, dst_strides[] = {3, 1};
  copy_strided(shape, {src.data(), DType::Float64, src_strides}, {dst.data(), DType::Float64, dst_strides});
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(dst[i * 3 + j], src[j * 4 + i]);
  }
}

// The expected result of copy_strided, element by element: dst[index] = src[index]
// over every multi-index of `shape`, with offsets from each side's strides.
template <class Src, class Dst>
void expect_copied(std::span<const int64_t> shape, const Src* src, std::span<const int64_t> src_strides, const Dst* dst,
                   std::span<const int64_t> dst_strides) {
  std::vector<int64_t> index(shape.size(), 0);
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  for (int64_t i = 0; i < count; ++i) {
    int64_t src_offset = 0, dst_offset = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      src_offset += index[d] * src_strides[d];
      dst_offset += index[d] * dst_strides[d];
    }
    ASSERT_EQ(static_cast<double>(dst[dst_offset]), static_cast<double>(static_cast<float>(src[src_offset])))
        << "element " << i;
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

// Transposes big enough to be copied in tiles, with partial tiles at the edges.
TEST(CopyStrided, TiledTransposesMatchTheElementWalk) {
  std::vector<float> src = iota<float>(64 * 70 * 3);
  {  // [70, 45] read from a [45, 70] matrix, into a contiguous [70, 45]
    const int64_t shape[] = {70, 45}, src_strides[] = {1, 70}, dst_strides[] = {45, 1};
    std::vector<float> dst(70 * 45, -1);
    copy_strided(shape, {src.data(), DType::Float32, src_strides}, {dst.data(), DType::Float32, dst_strides});
    expect_copied<float, float>(shape, src.data(), src_strides, dst.data(), dst_strides);
  }
  {  // a contiguous [40, 50] written into the transposed view of a [50, 40] buffer
    const int64_t shape[] = {40, 50}, src_strides[] = {50, 1}, dst_strides[] = {1, 40};
    std::vector<float> dst(40 * 50, -1);
    copy_strided(shape, {src.data(), DType::Float32, src_strides}, {dst.data(), DType::Float32, dst_strides});
    expect_copied<float, float>(shape, src.data(), src_strides, dst.data(), dst_strides);
  }
  {  // permute(2, 0, 1) of a contiguous [34, 35, 36]: the outer dim of the tile is not next to the inner one
    std::vector<double> cube = iota<double>(34 * 35 * 36);
    const int64_t shape[] = {36, 34, 35}, src_strides[] = {1, 35 * 36, 36}, dst_strides[] = {34 * 35, 35, 1};
    std::vector<double> dst(cube.size(), -1);
    copy_strided(shape, {cube.data(), DType::Float64, src_strides}, {dst.data(), DType::Float64, dst_strides});
    expect_copied<double, double>(shape, cube.data(), src_strides, dst.data(), dst_strides);
  }
  {  // a batch of transposes with the source's rows reversed (negative stride), converted to bfloat16
    const int64_t shape[] = {3, 64, 33}, src_strides[] = {64 * 70, -1, 64}, dst_strides[] = {64 * 33, 33, 1};
    std::vector<BFloat16> dst(3 * 64 * 33, BFloat16(-1.0f));
    const float* last_row = src.data() + 63;  // index 0 of dim 1 reads column 63
    copy_strided(shape, {last_row, DType::Float32, src_strides}, {dst.data(), DType::BFloat16, dst_strides});
    for (int64_t b = 0; b < 3; ++b) {
      for (int64_t i = 0; i < 64; ++i) {
        for (int64_t j = 0; j < 33; ++j) {
          float expected = static_cast<float>(BFloat16(last_row[b * 64 * 70 - i + j * 64]));
          ASSERT_EQ(static_cast<float>(dst[b * 64 * 33 + i * 33 + j]), expected) << b << "," << i << "," << j;
        }
      }
    }
  }
}

TEST(CopyStrided, CoalescesContiguousDimsAndHandlesOffsetsIntoBiggerBuffers) {
  // A [2,3,4] block inside a [2,5,4] buffer (rows 1..3 of dim 1), copied out with conversion.
  std::vector<float> src = iota<float>(40);
  std::vector<int64_t> dst(24, -1);
  const int64_t shape[] = {2, 3, 4}, src_strides[] = {20, 4, 1}, dst_strides[] = {12, 4, 1};
  copy_strided(shape, {src.data() + 4, DType::Float32, src_strides}, {dst.data(), DType::Int64, dst_strides});
  for (int64_t a = 0; a < 2; ++a) {
    for (int64_t b = 0; b < 3; ++b) {
      for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(dst[a * 12 + b * 4 + c], 4 + a * 20 + b * 4 + c);
    }
  }
}

TEST(CopyStrided, BroadcastSourceAndStridedDestination) {
  std::vector<double> src{1, 2, 3};  // a [3] row read as [2,3] with stride 0
  std::vector<double> dst(12, 0);    // written into every other column of a [2,6] buffer
  const int64_t shape[] = {2, 3}, src_strides[] = {0, 1}, dst_strides[] = {6, 2};
  copy_strided(shape, {src.data(), DType::Float64, src_strides}, {dst.data(), DType::Float64, dst_strides});
  EXPECT_EQ(dst, (std::vector<double>{1, 0, 2, 0, 3, 0, 1, 0, 2, 0, 3, 0}));
}

TEST(CopyStrided, ScalarsEmptyAndSizeOneDims) {
  double src = 2.5;
  float dst = 0;
  copy_strided({}, {&src, DType::Float64, {}}, {&dst, DType::Float32, {}});
  EXPECT_EQ(dst, 2.5f);
  std::vector<double> big(4, 7);
  const int64_t empty_shape[] = {3, 0}, strides[] = {1, 1};
  copy_strided(empty_shape, {nullptr, DType::Float64, strides}, {nullptr, DType::Float64, strides});
  const int64_t ones[] = {1, 1, 4}, odd_strides[] = {99, -5, 1}, unit[] = {4, 4, 1};
  std::vector<double> out(4, 0);
  copy_strided(ones, {big.data(), DType::Float64, odd_strides}, {out.data(), DType::Float64, unit});
  EXPECT_EQ(out, big);
}

TEST(CopyStrided, SameElementsIsANoOp) {
  std::vector<double> data{1, 2, 3};
  const int64_t shape[] = {3}, unit[] = {1};
  copy_strided(shape, {data.data(), DType::Float64, unit}, {data.data(), DType::Float64, unit});
  EXPECT_EQ(data, (std::vector<double>{1, 2, 3}));
}

TEST(ConvertContiguous, FollowsTheConversionRules) {
  constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> src{-2.7, -0.0, 0.4, 1e30, -1e30, kNan, 1.00390625, 1.01171875};
  std::vector<int64_t> ints(src.size());
  convert_contiguous(src.data(), DType::Float64, ints.data(), DType::Int64, static_cast<int64_t>(src.size()));
  EXPECT_EQ(ints, (std::vector<int64_t>{-2, 0, 0, std::numeric_limits<int64_t>::max(),
                                        std::numeric_limits<int64_t>::min(), 0, 1, 1}));
  std::vector<bool> expected_bools{true, false, true, true, true, true, true, true};
  bool bools[8];
  convert_contiguous(src.data(), DType::Float64, bools, DType::Bool, 8);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(bools[i], expected_bools[i]) << i;
  BFloat16 halves[8];
  convert_contiguous(src.data(), DType::Float64, halves, DType::BFloat16, 8);
  EXPECT_EQ(static_cast<float>(halves[0]), -2.703125f);  // nearest bf16 to -2.7
  EXPECT_EQ(static_cast<float>(halves[6]), 1.0f);        // 1 + 2^-8: a tie, rounds to even
  EXPECT_EQ(static_cast<float>(halves[7]), 1.015625f);   // 1 + 3 * 2^-8: a tie, rounds to even (up)
  EXPECT_TRUE(std::isnan(static_cast<float>(halves[5])));
  float back[8];
  convert_contiguous(halves, DType::BFloat16, back, DType::Float32, 8);
  EXPECT_EQ(back[0], -2.703125f);
  int64_t from_bool[2];
  bool two_bools[2] = {true, false};
  convert_contiguous(two_bools, DType::Bool, from_bool, DType::Int64, 2);
  EXPECT_EQ(from_bool[0], 1);
  EXPECT_EQ(from_bool[1], 0);
}

TEST(ConvertContiguous, EveryDtypePairRoundTripsSmallIntegers) {
  std::vector<double> src{0, 1, 2, 3};
  for (DType mid : kAllDTypes) {
    for (DType out : kAllDTypes) {
      alignas(8) std::byte a[64], b[64];
      double result[4];
      convert_contiguous(src.data(), DType::Float64, a, mid, 4);
      convert_contiguous(a, mid, b, out, 4);
      convert_contiguous(b, out, result, DType::Float64, 4);
      bool through_bool = mid == DType::Bool || out == DType::Bool;
      for (int i = 0; i < 4; ++i) {
        double want = through_bool ? (src[i] != 0 ? 1 : 0) : src[i];
        EXPECT_EQ(result[i], want) << dtype_name(mid) << " -> " << dtype_name(out) << " at " << i;
      }
    }
  }
}

}  // namespace
}  // namespace px::kernels
