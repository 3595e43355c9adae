// Reduction kernels against naive float64 loops written here, on contiguous,
// transposed, sliced and broadcast (stride-0) layouts, through both the row and
// the column strategy.

#include "parallax/kernels/reduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace px::kernels {
namespace {

// A strided view of a buffer: enough to describe any layout the kernels see.
struct Layout {
  Shape shape;
  Strides strides;
  int64_t offset = 0;
};

std::vector<double> random_values(int64_t count, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> out(static_cast<size_t>(count));
  for (double& v : out) v = dist(engine);
  return out;
}

// Row-major multi-index of `linear` in `shape`.
std::vector<int64_t> unravel(int64_t linear, const Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = linear % shape[d];
    linear /= shape[d];
  }
  return index;
}

enum class Naive { Sum, Max, Min, Argmax };

// The reference: visits every input element and folds it into its output slot.
std::vector<double> naive_reduce(Naive op, const std::vector<double>& buffer, const Layout& layout,
                                 const std::vector<int64_t>& dims) {
  Shape out_shape;
  for (size_t d = 0; d < layout.shape.size(); ++d) {
    if (std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) == dims.end())
      out_shape.push_back(layout.shape[d]);
  }
  int64_t out_count = numel(out_shape);
  double init = op == Naive::Sum ? 0.0 : op == Naive::Min ? INFINITY : -INFINITY;
  std::vector<double> acc(static_cast<size_t>(out_count), init), arg(static_cast<size_t>(out_count), -1);
  std::vector<int64_t> seen(static_cast<size_t>(out_count), 0);
  for (int64_t i = 0; i < numel(layout.shape); ++i) {
    std::vector<int64_t> index = unravel(i, layout.shape);
    int64_t storage = layout.offset, out = 0;
    for (size_t d = 0; d < index.size(); ++d) {
      storage += index[d] * layout.strides[d];
      if (std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) == dims.end()) {
        out = out * layout.shape[d] + index[d];
      }
    }
    double v = buffer[static_cast<size_t>(storage)];
    double& a = acc[static_cast<size_t>(out)];
    switch (op) {
      case Naive::Sum:
        a += v;
        break;
      case Naive::Max:
        a = std::max(a, v);
        break;
      case Naive::Min:
        a = std::min(a, v);
        break;
      case Naive::Argmax:
        if (arg[static_cast<size_t>(out)] < 0 || v > a) {
          a = v;
          arg[static_cast<size_t>(out)] = static_cast<double>(seen[static_cast<size_t>(out)]);
        }
        break;
    }
    ++seen[static_cast<size_t>(out)];
  }
  return op == Naive::Argmax ? arg : acc;
}

template <class T>
std::vector<T> convert(const std::vector<double>& values) {
  std::vector<T> out;
  for (double v : values) out.push_back(static_cast<T>(v));
  return out;
}

struct Case {
  const char* name;
  Layout layout;
  int64_t buffer_size;
  std::vector<int64_t> dims;
};

// Layouts of a logical [4, 5, 6] tensor (and a few others) over a larger buffer.
std::vector<Case> cases() {
  Layout contiguous{{4, 5, 6}, {30, 6, 1}, 0};
  Layout transposed{{4, 5, 6}, {1, 24, 4}, 0};  // dims stored as [5, 6, 4]
  Layout sliced{{4, 5, 6}, {70, 14, 2}, 3};     // every other element, offset 3
  Layout broadcast{{4, 5, 6}, {0, 6, 1}, 0};    // dim 0 expanded from size 1
  Layout with_ones{{4, 1, 5, 1, 6}, {30, 99, 6, 7, 1}, 0};
  std::vector<Case> out;
  for (auto [name, layout, size] :
       {std::tuple{"contiguous", contiguous, int64_t{120}}, std::tuple{"transposed", transposed, int64_t{120}},
        std::tuple{"sliced", sliced, int64_t{300}}, std::tuple{"broadcast", broadcast, int64_t{30}}}) {
    for (std::vector<int64_t> dims : {std::vector<int64_t>{2}, {0}, {1}, {0, 2}, {1, 2}, {0, 1}, {0, 1, 2}, {}}) {
      out.push_back({name, layout, size, dims});
    }
  }
  out.push_back({"with_ones", with_ones, 120, {0, 1}});
  out.push_back({"with_ones", with_ones, 120, {3, 4}});
  out.push_back({"with_ones", with_ones, 120, {2}});
  return out;
}

TEST(ReduceKernel, SumMaxMinMatchNaiveOnEveryLayout) {
  for (const Case& c : cases()) {
    std::vector<double> buffer = random_values(c.buffer_size, 7);
    ReducePlan plan = make_reduce_plan(c.layout.shape, c.layout.strides, c.dims);
    std::vector<double> out(static_cast<size_t>(plan.kept_count()));
    for (auto [op, naive] : {std::pair{ReduceOp::Sum, Naive::Sum}, std::pair{ReduceOp::Max, Naive::Max},
                             std::pair{ReduceOp::Min, Naive::Min}}) {
      reduce<double>(op, buffer.data() + c.layout.offset, plan, out.data());
      std::vector<double> expected = naive_reduce(naive, buffer, c.layout, c.dims);
      ASSERT_EQ(out.size(), expected.size()) << c.name;
      for (size_t i = 0; i < out.size(); ++i) {
        EXPECT_NEAR(out[i], expected[i], 1e-12) << c.name << " dims " << shape_str(c.dims) << " element " << i;
      }
    }
  }
}

TEST(ReduceKernel, ArgmaxMatchesNaiveOnEveryLayout) {
  for (const Case& c : cases()) {
    std::vector<double> buffer = random_values(c.buffer_size, 11);
    ReducePlan plan = make_reduce_plan(c.layout.shape, c.layout.strides, c.dims);
    std::vector<int64_t> out(static_cast<size_t>(plan.kept_count()), -5);
    argmax<double>(buffer.data() + c.layout.offset, plan, out.data());
    std::vector<double> expected = naive_reduce(Naive::Argmax, buffer, c.layout, c.dims);
    for (size_t i = 0; i < out.size(); ++i) {
      EXPECT_EQ(static_cast<double>(out[i]), expected[i]) << c.name << " dims " << shape_str(c.dims);
    }
  }
}

TEST(ReduceKernel, SumScalesForMean) {
  std::vector<double> values{1, 2, 3, 4, 5, 6};
  ReducePlan plan = make_reduce_plan(Shape{2, 3}, Strides{3, 1}, std::vector<int64_t>{1});
  std::vector<double> out(2);
  reduce<double>(ReduceOp::Sum, values.data(), plan, out.data(), 1.0 / 3);
  EXPECT_DOUBLE_EQ(out[0], 2.0);
  EXPECT_DOUBLE_EQ(out[1], 5.0);
}

TEST(ReduceKernel, PlanCoalescesContiguousBlocksAndDropsUnitDims) {
  ReducePlan rows = make_reduce_plan(Shape{4, 1, 5, 6}, Strides{30, 30, 6, 1}, std::vector<int64_t>{2, 3});
  EXPECT_EQ(rows.kept_shape, (Shape{4}));
  EXPECT_EQ(rows.reduced_shape, (Shape{30}));
  EXPECT_EQ(rows.reduced_strides, (Strides{1}));
  ReducePlan columns = make_reduce_plan(Shape{4, 5, 6}, Strides{30, 6, 1}, std::vector<int64_t>{0, 1});
  EXPECT_EQ(columns.reduced_shape, (Shape{20}));
  EXPECT_EQ(columns.reduced_strides, (Strides{6}));
  EXPECT_EQ(columns.kept_strides, (Strides{1}));
}

TEST(ReduceKernel, FloatSumsAccumulateInDouble) {
  // 2^24 + 1 is not a float: a float accumulator holding 2^24 drops every added 1.
  const int64_t ones = 1000;
  std::vector<float> values(static_cast<size_t>(ones + 1), 1.0f);
  values[0] = 16777216.0f;
  float out = 0;
  reduce<float>(ReduceOp::Sum, values.data(), make_reduce_plan(Shape{ones + 1}, Strides{1}, std::vector<int64_t>{0}),
                &out);
  EXPECT_EQ(out, 16777216.0f + static_cast<float>(ones));
  // The column strategy: [ones + 1, 4] (each column like the row above) summed over dim 0.
  std::vector<float> table(static_cast<size_t>(4 * (ones + 1)), 1.0f);
  for (int64_t j = 0; j < 4; ++j) table[static_cast<size_t>(j)] = 16777216.0f;
  std::vector<float> column_sums(4);
  reduce<float>(ReduceOp::Sum, table.data(),
                make_reduce_plan(Shape{ones + 1, 4}, Strides{4, 1}, std::vector<int64_t>{0}), column_sums.data());
  for (float sum : column_sums) EXPECT_EQ(sum, 16777216.0f + static_cast<float>(ones));
}

TEST(ReduceKernel, MaxAndMinPropagateNan) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> values{1, nan, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  for (auto [shape, strides, dims] : {std::tuple{Shape{12}, Strides{1}, std::vector<int64_t>{0}},
                                      std::tuple{Shape{12, 1}, Strides{1, 1}, std::vector<int64_t>{0}},
                                      std::tuple{Shape{2, 6}, Strides{1, 2}, std::vector<int64_t>{1}}}) {
    ReducePlan plan = make_reduce_plan(shape, strides, dims);
    std::vector<double> out(static_cast<size_t>(plan.kept_count()));
    reduce<double>(ReduceOp::Max, values.data(), plan, out.data());
    EXPECT_TRUE(std::isnan(out[plan.kept_count() == 2 ? 1 : 0]));
    reduce<double>(ReduceOp::Min, values.data(), plan, out.data());
    EXPECT_TRUE(std::isnan(out[plan.kept_count() == 2 ? 1 : 0]));
  }
  std::vector<int64_t> index(1);
  argmax<double>(values.data(), make_reduce_plan(Shape{12}, Strides{1}, std::vector<int64_t>{0}), index.data());
  EXPECT_EQ(index[0], 1);
}

TEST(ReduceKernel, LongRowsPropagateNanFromAnyLane) {
  // Long enough for the vectorized lanes, with the NaN inside them rather than in the tail.
  for (int64_t nan_at : {0, 37, 100, 255}) {
    std::vector<float> values(260, -std::numeric_limits<float>::infinity());
    values[static_cast<size_t>(nan_at)] = std::numeric_limits<float>::quiet_NaN();
    ReducePlan plan = make_reduce_plan(Shape{260}, Strides{1}, std::vector<int64_t>{0});
    float out = 0;
    reduce<float>(ReduceOp::Max, values.data(), plan, &out);
    EXPECT_TRUE(std::isnan(out)) << nan_at;
    reduce<float>(ReduceOp::Min, values.data(), plan, &out);
    EXPECT_TRUE(std::isnan(out)) << nan_at;
    values[static_cast<size_t>(nan_at)] = -std::numeric_limits<float>::infinity();
    reduce<float>(ReduceOp::Max, values.data(), plan, &out);
    EXPECT_EQ(out, -std::numeric_limits<float>::infinity());
  }
}

TEST(ReduceKernel, ArgmaxTakesTheFirstOfTies) {
  std::vector<double> values{3, 7, 7, 1, 7};
  int64_t index = -1;
  argmax<double>(values.data(), make_reduce_plan(Shape{5}, Strides{1}, std::vector<int64_t>{0}), &index);
  EXPECT_EQ(index, 1);
}

TEST(ReduceKernel, Int64AndBFloat16) {
  std::vector<int64_t> ints{1, -2, 3, 40, 5, -6};
  ReducePlan plan = make_reduce_plan(Shape{2, 3}, Strides{3, 1}, std::vector<int64_t>{1});
  std::vector<int64_t> out(2);
  reduce<int64_t>(ReduceOp::Sum, ints.data(), plan, out.data());
  EXPECT_EQ(out, (std::vector<int64_t>{2, 39}));
  reduce<int64_t>(ReduceOp::Min, ints.data(), plan, out.data());
  EXPECT_EQ(out, (std::vector<int64_t>{-2, -6}));

  std::vector<BFloat16> halves;
  for (double v : {0.5, 1.5, -2.0, 4.0, 8.0, 0.25}) halves.emplace_back(static_cast<float>(v));
  std::vector<BFloat16> sums(2);
  reduce<BFloat16>(ReduceOp::Sum, halves.data(), plan, sums.data());
  EXPECT_EQ(static_cast<float>(sums[0]), 0.0f);
  EXPECT_EQ(static_cast<float>(sums[1]), 12.25f);
  std::vector<int64_t> where(2);
  argmax<BFloat16>(halves.data(), plan, where.data());
  EXPECT_EQ(where, (std::vector<int64_t>{1, 1}));
}

TEST(ReduceKernel, EmptyReductionsAndEmptyOutputs) {
  std::vector<double> none;
  double out = 42;
  reduce<double>(ReduceOp::Sum, none.data(), make_reduce_plan(Shape{0, 3}, Strides{3, 1}, std::vector<int64_t>{0, 1}),
                 &out);
  EXPECT_EQ(out, 0.0);
  // Reducing a size-1 dim copies.
  std::vector<double> values{1, 2, 3};
  std::vector<double> copy(3);
  reduce<double>(ReduceOp::Max, values.data(), make_reduce_plan(Shape{1, 3}, Strides{3, 1}, std::vector<int64_t>{0}),
                 copy.data());
  EXPECT_EQ(copy, values);
  // A scalar reduces to itself.
  double scalar = 5, result = 0;
  reduce<double>(ReduceOp::Sum, &scalar, make_reduce_plan(Shape{}, Strides{}, std::vector<int64_t>{}), &result);
  EXPECT_EQ(result, 5.0);
}

}  // namespace
}  // namespace px::kernels
