// The elementwise kernels on raw buffers: the strided iteration space, the
// binary/unary/compare/where loops on contiguous, strided, broadcast and
// negative-stride operands, and the accuracy of the float32 approximations
// (exp, tanh, sigmoid, GELU and its derivative) measured against float64.

#include "parallax/kernels/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "parallax/kernels/strided_iter.h"

namespace px::kernels {
namespace {

TEST(BroadcastStrides, ZeroOnNewAndStretchedDims) {
  EXPECT_EQ(broadcast_strides(Shape{3, 1}, Strides{1, 1}, Shape{2, 3, 4}), (Strides{0, 1, 0}));
  EXPECT_EQ(broadcast_strides(Shape{4}, Strides{2}, Shape{3, 4}), (Strides{0, 2}));
  EXPECT_EQ(broadcast_strides(Shape{}, Strides{}, Shape{5}), (Strides{0}));
  EXPECT_EQ(broadcast_strides(Shape{2, 3}, Strides{3, 1}, Shape{2, 3}), (Strides{3, 1}));
}

// Every (operand offsets) tuple visited, element by element, in row-major order.
template <size_t N>
std::vector<std::array<int64_t, N>> visited(const StridedIter<N>& iter) {
  std::vector<std::array<int64_t, N>> out;
  iter.for_each_row([&](const std::array<int64_t, N>& start) {
    for (int64_t i = 0; i < iter.row_size(); ++i) {
      std::array<int64_t, N> at = start;
      for (size_t k = 0; k < N; ++k) at[k] += i * iter.row_strides()[k];
      out.push_back(at);
    }
  });
  return out;
}

// The same tuples by plain index arithmetic over the unsimplified shape.
std::vector<std::array<int64_t, 2>> naive_offsets(const Shape& shape, const Strides& s0, const Strides& s1) {
  std::vector<std::array<int64_t, 2>> out;
  for (int64_t linear = 0; linear < numel(shape); ++linear) {
    std::array<int64_t, 2> at{0, 0};
    int64_t rest = linear;
    for (size_t d = shape.size(); d-- > 0;) {
      int64_t coord = rest % shape[d];
      rest /= shape[d];
      at[0] += coord * s0[d];
      at[1] += coord * s1[d];
    }
    out.push_back(at);
  }
  return out;
}

TEST(StridedIter, SimplifiesAndVisitsEveryElementInOrder) {
  struct Case {
    Shape shape;
    Strides a, b;
    int64_t expected_ndim;
  };
  std::vector<Case> cases{
      {{2, 3, 4}, {12, 4, 1}, {12, 4, 1}, 1},  // contiguous: one row
      {{2, 3, 4}, {12, 4, 1}, {0, 0, 1}, 2},   // bias broadcast: rows of 4
      {{2, 3, 4}, {12, 4, 1}, {1, 2, 6}, 3},   // permuted: no merging
      {{5, 1, 3}, {3, 3, 1}, {3, 7, 1}, 1},    // size-1 dims are dropped
      {{}, {}, {}, 1},                         // scalar: one row of one
      {{4, 6}, {6, 1}, {-6, -1}, 1},           // reversed
      {{3, 0, 2}, {0, 2, 1}, {0, 2, 1}, 1},    // empty
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_str(c.shape));
    StridedIter<2> iter(c.shape, {c.a, c.b});
    EXPECT_EQ(iter.numel(), numel(c.shape));
    EXPECT_EQ(iter.ndim(), c.expected_ndim);
    EXPECT_EQ(visited(iter), naive_offsets(c.shape, c.a, c.b));
  }
}

TEST(StridedIter, RowRangesCoverTheSpaceInPieces) {
  Shape shape{3, 4, 5};
  Strides a{20, 5, 1}, b{1, 3, 12};
  StridedIter<2> iter(shape, {a, b});
  ASSERT_EQ(iter.num_rows(), 12);
  std::vector<std::array<int64_t, 2>> pieces;
  for (int64_t begin = 0; begin < iter.num_rows(); begin += 5) {
    iter.for_each_row(begin, std::min<int64_t>(begin + 5, iter.num_rows()),
                      [&](const auto& start) { pieces.push_back(start); });
  }
  std::vector<std::array<int64_t, 2>> whole;
  iter.for_each_row([&](const auto& start) { whole.push_back(start); });
  EXPECT_EQ(pieces, whole);
}

// out = a + b on doubles against a loop over coordinates, for strides of every kind.
TEST(BinaryKernel, StridedBroadcastAndNegativeStrides) {
  std::vector<double> buffer(64);
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<double>(i) * 0.5 - 7;
  const double* base = buffer.data();
  Shape shape{3, 4};
  struct Operand {
    const double* data;
    Strides strides;
  };
  std::vector<std::pair<Operand, Operand>> cases{
      {{base, {4, 1}}, {base + 12, {4, 1}}},    // contiguous
      {{base, {1, 3}}, {base, {0, 1}}},         // transposed + row broadcast
      {{base + 11, {-4, -1}}, {base, {1, 0}}},  // reversed + column broadcast
      {{base, {0, 0}}, {base + 5, {8, 2}}},     // scalar + strided
  };
  for (const auto& [a, b] : cases) {
    std::vector<double> out(12, -1);
    binary(BinaryOp::Add, DType::Float64, out.data(), shape, a.data, a.strides, b.data, b.strides);
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 4; ++j) {
        double expected = a.data[i * a.strides[0] + j * a.strides[1]] + b.data[i * b.strides[0] + j * b.strides[1]];
        EXPECT_EQ(out[static_cast<size_t>(i * 4 + j)], expected) << i << "," << j;
      }
    }
  }
}

TEST(BinaryKernel, BFloat16RoundsTheFloat32Result) {
  std::vector<BFloat16> a{BFloat16(1.0f), BFloat16(3.0f)};
  std::vector<BFloat16> b{BFloat16(0.00390625f), BFloat16(1.0f / 3.0f)};
  std::vector<BFloat16> out(2);
  Shape shape{2};
  Strides unit{1};
  binary(BinaryOp::Mul, DType::BFloat16, out.data(), shape, a.data(), unit, b.data(), unit);
  EXPECT_EQ(static_cast<float>(out[0]), 0.00390625f);
  EXPECT_EQ(out[1].bits, BFloat16(3.0f * static_cast<float>(b[1])).bits);
}

TEST(CompareAndWhereKernels, ContiguousAndBroadcast) {
  std::vector<int64_t> a{1, 5, 3, 7};
  std::vector<int64_t> b{3};
  bool out[4];
  Shape shape{4};
  compare(CompareOp::Lt, DType::Int64, out, shape, a.data(), Strides{1}, b.data(), Strides{0});
  EXPECT_EQ(std::vector<bool>(out, out + 4), (std::vector<bool>{true, false, false, false}));
  std::vector<float> x{1, 2, 3, 4}, y{-1};
  std::vector<float> selected(4);
  where(DType::Float32, selected.data(), shape, out, Strides{1}, x.data(), Strides{1}, y.data(), Strides{0});
  EXPECT_EQ(selected, (std::vector<float>{1, -1, -1, -1}));
}

// Operands that walk across memory (transposed views at least 32 wide) are
// copied into the output's order before the loop runs: the results must equal
// an element-by-element walk, for every kernel family and for bool operands.
TEST(TransposedOperands, MatchAWalkOverCoordinates) {
  const Shape shape{3, 40, 70};
  const int64_t count = 3 * 40 * 70;
  // Stored as [3, 70, 40] (transposed last two dims) and as [70, 40, 3] (fully reversed order).
  const Strides transposed{70 * 40, 1, 40};
  const Strides reversed{1, 3, 120};
  auto at = [](const Strides& s, int64_t i, int64_t j, int64_t k) { return i * s[0] + j * s[1] + k * s[2]; };
  std::vector<float> a(count), b(count);
  std::vector<bool> mask_values(count);
  bool cond[3 * 40 * 70], flags[3 * 40 * 70];
  for (int64_t n = 0; n < count; ++n) {
    auto u = static_cast<size_t>(n);
    a[u] = static_cast<float>(n % 97) * 0.125f - 6.0f;
    b[u] = static_cast<float>(n % 89) * 0.25f - 11.0f;
    cond[u] = n % 3 == 0;
    flags[u] = n % 5 < 2;
  }
  for (const Strides& sa : {transposed, reversed}) {
    const Strides sb = sa == transposed ? reversed : transposed;
    std::vector<float> sum(count), gelu(count), grad(count), selected(count);
    bool less[3 * 40 * 70], picked[3 * 40 * 70];
    binary(BinaryOp::Sub, DType::Float32, sum.data(), shape, a.data(), sa, b.data(), sb);
    unary(UnaryOp::GeluErf, DType::Float32, gelu.data(), shape, a.data(), sa);
    gelu_backward(GeluApprox::Tanh, DType::Float32, grad.data(), shape, b.data(), Strides{0, 1, 0}, a.data(), sa);
    compare(CompareOp::Lt, DType::Float32, less, shape, a.data(), sa, b.data(), sb);
    where(DType::Float32, selected.data(), shape, cond, sb, a.data(), sa, b.data(), Strides{0, 0, 1});
    where(DType::Bool, picked, shape, cond, sa, flags, sb, cond, Strides{70 * 40, 70, 1});
    // The same kernels on contiguous copies give the reference gelu values bit for bit.
    std::vector<float> a_in_order(count), gelu_in_order(count), grad_in_order(count), b_row(count);
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 40; ++j) {
        for (int64_t k = 0; k < 70; ++k) {
          auto o = static_cast<size_t>((i * 40 + j) * 70 + k);
          a_in_order[o] = a[static_cast<size_t>(at(sa, i, j, k))];
          b_row[o] = b[static_cast<size_t>(j)];
        }
      }
    }
    unary(UnaryOp::GeluErf, DType::Float32, gelu_in_order.data(), shape, a_in_order.data(), Strides{2800, 70, 1});
    gelu_backward(GeluApprox::Tanh, DType::Float32, grad_in_order.data(), shape, b_row.data(), Strides{2800, 70, 1},
                  a_in_order.data(), Strides{2800, 70, 1});
    EXPECT_EQ(gelu, gelu_in_order);
    EXPECT_EQ(grad, grad_in_order);
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 40; ++j) {
        for (int64_t k = 0; k < 70; ++k) {
          auto o = static_cast<size_t>((i * 40 + j) * 70 + k);
          float x = a[static_cast<size_t>(at(sa, i, j, k))];
          float y = b[static_cast<size_t>(at(sb, i, j, k))];
          bool c = cond[at(sb, i, j, k)];
          ASSERT_EQ(sum[o], x - y) << i << "," << j << "," << k;
          ASSERT_EQ(less[o], x < y) << i << "," << j << "," << k;
          ASSERT_EQ(selected[o], c ? x : b[static_cast<size_t>(k)]) << i << "," << j << "," << k;
          ASSERT_EQ(picked[o], cond[at(sa, i, j, k)] ? flags[at(sb, i, j, k)] : cond[o]) << i << "," << j << "," << k;
        }
      }
    }
  }
}

// Relative error of float32 kernel `op` against `reference` over `count` points in [low, high],
// ignoring points where |reference| < floor (absolute error is checked there instead).
struct Accuracy {
  double max_rel = 0;
  double max_abs_small = 0;
};

Accuracy measure(UnaryOp op, double low, double high, const std::function<double(double)>& reference,
                 double floor = 1e-30) {
  const int64_t count = 200001;
  std::vector<float> x(static_cast<size_t>(count)), y(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    x[static_cast<size_t>(i)] = static_cast<float>(low + (high - low) * static_cast<double>(i) / (count - 1));
  }
  Shape shape{count};
  unary(op, DType::Float32, y.data(), shape, x.data(), Strides{1});
  Accuracy acc;
  for (size_t i = 0; i < x.size(); ++i) {
    double expected = reference(static_cast<double>(x[i]));
    double error = std::abs(static_cast<double>(y[i]) - expected);
    if (std::abs(expected) < floor) {
      acc.max_abs_small = std::max(acc.max_abs_small, error);
    } else {
      acc.max_rel = std::max(acc.max_rel, error / std::abs(expected));
    }
  }
  return acc;
}

double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
double gelu_ref(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double gelu_tanh_ref(double x) { return x * sigmoid_ref(2 * std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)); }

// Float32 epsilon is 1.19e-7: these bounds are a few ulp.
TEST(Float32Approximations, ExpIsWithinAFewUlp) {
  EXPECT_LT(measure(UnaryOp::Exp, -86.6, 88.7, [](double v) { return std::exp(v); }).max_rel, 1.5e-7);
}

TEST(Float32Approximations, TanhIsWithinAFewUlp) {
  Accuracy acc = measure(UnaryOp::Tanh, -12, 12, [](double v) { return std::tanh(v); });
  EXPECT_LT(acc.max_rel, 5e-7);
  Accuracy tiny = measure(UnaryOp::Tanh, -1e-3, 1e-3, [](double v) { return std::tanh(v); });
  EXPECT_LT(tiny.max_rel, 3e-7);
}

TEST(Float32Approximations, SigmoidAndSiluKeepRelativeAccuracyInBothTails) {
  EXPECT_LT(measure(UnaryOp::Sigmoid, -80, 80, sigmoid_ref).max_rel, 5e-7);
  EXPECT_LT(measure(UnaryOp::Silu, -80, 80, [](double v) { return v * sigmoid_ref(v); }).max_rel, 5e-7);
}

TEST(Float32Approximations, GeluKeepsRelativeAccuracyInBothTails) {
  // Down to x = -12 (gelu ~ 1e-32): the exact form goes through erfc, the tanh form through sigmoid.
  EXPECT_LT(measure(UnaryOp::GeluErf, -12, 12, gelu_ref).max_rel, 6e-6);
  EXPECT_LT(measure(UnaryOp::GeluErf, -3, 12, gelu_ref).max_rel, 6e-7);
  EXPECT_LT(measure(UnaryOp::GeluTanh, -12, 12, gelu_tanh_ref).max_rel, 2e-5);
  EXPECT_LT(measure(UnaryOp::GeluTanh, -3, 12, gelu_tanh_ref).max_rel, 1e-6);
}

TEST(Float32Approximations, GeluBackwardMatchesTheDerivative) {
  const int64_t count = 20001;
  std::vector<float> x(static_cast<size_t>(count)), ones(static_cast<size_t>(count), 1.0f), y(x.size());
  for (int64_t i = 0; i < count; ++i) x[static_cast<size_t>(i)] = -10.0f + 20.0f * static_cast<float>(i) / (count - 1);
  Shape shape{count};
  for (GeluApprox approx : {GeluApprox::Erf, GeluApprox::Tanh}) {
    gelu_backward(approx, DType::Float32, y.data(), shape, ones.data(), Strides{1}, x.data(), Strides{1});
    auto f = approx == GeluApprox::Erf ? gelu_ref : gelu_tanh_ref;
    for (size_t i = 0; i < x.size(); ++i) {
      double v = x[i], h = 1e-5;
      double expected = (f(v + h) - f(v - h)) / (2 * h);
      ASSERT_NEAR(y[i], expected, 1e-6 + 1e-5 * std::abs(expected)) << "x = " << v;
    }
  }
}

// Strided rows are gathered and run through the contiguous loops, so a layout
// never changes a result's bits.
TEST(Float32Approximations, ContiguousAndStridedLoopsAgreeBitForBit) {
  const int64_t count = 4099;
  std::vector<float> spread(2 * count), contiguous(count);
  for (int64_t i = 0; i < count; ++i) {
    contiguous[static_cast<size_t>(i)] = -9.0f + 18.0f * static_cast<float>(i) / count;
    spread[static_cast<size_t>(2 * i)] = contiguous[static_cast<size_t>(i)];
  }
  Shape shape{count};
  for (UnaryOp op :
       {UnaryOp::Exp, UnaryOp::Tanh, UnaryOp::Sigmoid, UnaryOp::Silu, UnaryOp::GeluErf, UnaryOp::GeluTanh}) {
    std::vector<float> fast(count), strided(count);
    unary(op, DType::Float32, fast.data(), shape, contiguous.data(), Strides{1});
    unary(op, DType::Float32, strided.data(), shape, spread.data(), Strides{2});
    EXPECT_EQ(fast, strided) << "op " << static_cast<int>(op);
  }
}

TEST(Float32Approximations, GeluBackwardAgreesBitForBitOnStridedAndBroadcastInputs) {
  const int64_t count = 1000;  // several gather blocks and a partial one
  std::vector<float> x(count), x_spread(3 * count), grad(count), grad_reversed(count);
  for (int64_t i = 0; i < count; ++i) {
    auto k = static_cast<size_t>(i);
    x[k] = -7.0f + 14.0f * static_cast<float>(i) / count;
    x_spread[3 * k] = x[k];
    grad[k] = 0.5f + static_cast<float>(i % 7);
  }
  for (int64_t i = 0; i < count; ++i) grad_reversed[static_cast<size_t>(count - 1 - i)] = grad[static_cast<size_t>(i)];
  Shape shape{count};
  for (GeluApprox approx : {GeluApprox::Erf, GeluApprox::Tanh}) {
    std::vector<float> fast(count), strided(count), broadcast(count), broadcast_fast(count);
    std::vector<float> twos(count, 2.0f);
    const float two = 2.0f;
    gelu_backward(approx, DType::Float32, fast.data(), shape, grad.data(), Strides{1}, x.data(), Strides{1});
    // x every third element, grad walked backwards: both inputs gathered.
    gelu_backward(approx, DType::Float32, strided.data(), shape, grad_reversed.data() + (count - 1), Strides{-1},
                  x_spread.data(), Strides{3});
    EXPECT_EQ(fast, strided);
    gelu_backward(approx, DType::Float32, broadcast_fast.data(), shape, twos.data(), Strides{1}, x.data(), Strides{1});
    gelu_backward(approx, DType::Float32, broadcast.data(), shape, &two, Strides{0}, x_spread.data(), Strides{3});
    EXPECT_EQ(broadcast_fast, broadcast);
  }
}

TEST(IntegerKernels, WrapAroundInsteadOfOverflowing) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  std::vector<int64_t> x{kMin, -5, 7};
  std::vector<int64_t> out(3);
  Shape shape{3};
  unary(UnaryOp::Neg, DType::Int64, out.data(), shape, x.data(), Strides{1});
  EXPECT_EQ(out, (std::vector<int64_t>{kMin, 5, -7}));
  unary(UnaryOp::Abs, DType::Int64, out.data(), shape, x.data(), Strides{1});
  EXPECT_EQ(out, (std::vector<int64_t>{kMin, 5, 7}));
  scalar_op(ScalarOp::Sub, DType::Int64, out.data(), shape, x.data(), Strides{1}, 1.0);
  EXPECT_EQ(out, (std::vector<int64_t>{std::numeric_limits<int64_t>::max(), -6, 6}));
}

}  // namespace
}  // namespace px::kernels
