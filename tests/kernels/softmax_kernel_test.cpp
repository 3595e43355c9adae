// The softmax kernels on raw buffers, and the vectorizable exp they use.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/softmax_math.h"
#include "parallax/kernels/softmax.h"

namespace px::kernels {
namespace {

// The vector exp on one value (lane 0 of a vector).
float exp1(float x) {
  detail::Float4 v{x, x, x, x};
  detail::exp_in_place(v);
  return v[0];
}

TEST(SoftmaxKernel, VectorExpIsWithinTwoUlpOverItsRange) {
  double worst = 0;
  for (float x = -87.0f; x < 88.0f; x += 0.00137f) {
    double exact = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(exp1(x) - exact) / exact);
  }
  EXPECT_LT(worst, 2 * std::numeric_limits<float>::epsilon());
}

TEST(SoftmaxKernel, VectorExpSpecialValues) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(exp1(0.0f), 1.0f);
  EXPECT_EQ(exp1(-kInf), 0.0f);
  EXPECT_EQ(exp1(-100.0f), 0.0f);
  EXPECT_EQ(exp1(kInf), kInf);
  EXPECT_EQ(exp1(100.0f), kInf);
  EXPECT_TRUE(std::isnan(exp1(std::numeric_limits<float>::quiet_NaN())));
}

// The public kernels take the AVX2 path on CPUs that have it; the baseline (4-lane) helpers are checked here.
TEST(SoftmaxKernel, BaselineVectorHelpersHandleTails) {
  for (int64_t n : {0, 1, 3, 4, 5, 17}) {
    std::vector<float> x(n), shift(n), y(n, -1.0f), max(n, -INFINITY);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(i % 7) - 3.5f;
      shift[i] = static_cast<float>(i % 3);
    }
    float expected_max = -INFINITY;
    double expected_sum = 0;
    for (int64_t i = 0; i < n; ++i) expected_max = std::max(expected_max, x[i]);
    EXPECT_EQ((detail::row_max_of<float, detail::Float4>(x.data(), n)), expected_max) << n;
    float sum = detail::exp_shifted_sum<detail::Float4>(x.data(), y.data(), n, 1.0f);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(y[i], std::exp(x[i] - 1.0), 2e-7 * std::exp(x[i] - 1.0)) << n;
      expected_sum += std::exp(x[i] - 1.0);
    }
    EXPECT_NEAR(sum, expected_sum, 1e-6 * (1 + expected_sum)) << n;
    detail::exp_minus<detail::Float4>(x.data(), shift.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y[i], std::exp(x[i] - shift[i]), 1e-6 * std::exp(x[i] - shift[i]));
    detail::max_into<float, detail::Float4>(x.data(), max.data(), n);
    EXPECT_EQ(max, x);
  }
}

// [outer, n, inner] reference in float64.
std::vector<double> reference(const std::vector<double>& x, int64_t outer, int64_t n, int64_t inner, bool log) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < inner; ++k) {
      double max = -INFINITY, total = 0;
      for (int64_t j = 0; j < n; ++j) max = std::max(max, x[(o * n + j) * inner + k]);
      for (int64_t j = 0; j < n; ++j) total += std::exp(x[(o * n + j) * inner + k] - max);
      for (int64_t j = 0; j < n; ++j) {
        double v = x[(o * n + j) * inner + k];
        y[(o * n + j) * inner + k] = log ? v - max - std::log(total) : std::exp(v - max) / total;
      }
    }
  }
  return y;
}

std::vector<double> random_values(size_t count, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> dist(-6, 6);
  std::vector<double> v(count);
  for (double& value : v) value = dist(engine);
  return v;
}

class SoftmaxKernelShapes : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t>> {};

TEST_P(SoftmaxKernelShapes, Float64MatchesReference) {
  auto [outer, n, inner] = GetParam();
  std::vector<double> x = random_values(outer * n * inner, 1);
  std::vector<double> y(x.size());
  for (bool log : {false, true}) {
    (log ? log_softmax<double> : softmax<double>)(x.data(), y.data(), outer, n, inner);
    std::vector<double> expected = reference(x, outer, n, inner, log);
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], expected[i], 1e-13) << i;
  }
}

TEST_P(SoftmaxKernelShapes, Float32AndBFloat16MatchReference) {
  auto [outer, n, inner] = GetParam();
  std::vector<double> values = random_values(outer * n * inner, 2);
  std::vector<float> x(values.begin(), values.end()), y(x.size());
  std::vector<BFloat16> xb, yb(x.size());
  for (float v : x) xb.push_back(BFloat16(v));
  for (bool log : {false, true}) {
    (log ? log_softmax<float> : softmax<float>)(x.data(), y.data(), outer, n, inner);
    (log ? log_softmax<BFloat16> : softmax<BFloat16>)(xb.data(), yb.data(), outer, n, inner);
    std::vector<double> expected = reference(values, outer, n, inner, log);
    for (size_t i = 0; i < y.size(); ++i) {
      double tolerance = log ? 1e-5 * (1 + std::abs(expected[i])) : 1e-6;
      EXPECT_NEAR(y[i], expected[i], tolerance) << i;
      EXPECT_NEAR(static_cast<float>(yb[i]), expected[i], 0.05 * (1 + std::abs(expected[i]))) << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RowsAndColumns, SoftmaxKernelShapes,
                         ::testing::Values(std::make_tuple(1, 1, 1), std::make_tuple(3, 7, 1),
                                           std::make_tuple(2, 50, 1), std::make_tuple(2, 5, 3),
                                           std::make_tuple(1, 4, 40), std::make_tuple(0, 3, 1),
                                           std::make_tuple(2, 0, 2)));

TEST(SoftmaxKernel, RowsSumToOne) {
  std::vector<float> x(1000), y(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 101) * 0.3f - 10.0f;
  softmax<float>(x.data(), y.data(), 4, 250, 1);
  for (int row = 0; row < 4; ++row) {
    double total = 0;
    for (int i = 0; i < 250; ++i) total += y[row * 250 + i];
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
}

}  // namespace
}  // namespace px::kernels
