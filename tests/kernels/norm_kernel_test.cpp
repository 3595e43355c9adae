// The layer_norm / rms_norm kernels on raw buffers.

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "parallax/core/dtype.h"
#include "parallax/kernels/norm.h"

namespace px::kernels {
namespace {

std::vector<double> random_values(size_t count, uint64_t seed, double center = 0) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> v(count);
  for (double& value : v) value = center + dist(engine);
  return v;
}

std::vector<double> reference(const std::vector<double>& x, const double* w, const double* b, int64_t n, double eps,
                              bool rms) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / n; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += x[r * n + i];
    mean = rms ? 0 : mean / n;
    for (int64_t i = 0; i < n; ++i) var += (x[r * n + i] - mean) * (x[r * n + i] - mean);
    double rstd = 1 / std::sqrt(var / n + eps);
    for (int64_t i = 0; i < n; ++i) y[r * n + i] = (x[r * n + i] - mean) * rstd * (w ? w[i] : 1) + (b ? b[i] : 0);
  }
  return y;
}

TEST(NormKernel, LayerNormFloat64WithAndWithoutAffine) {
  for (int64_t n : {1, 5, 16, 37}) {
    std::vector<double> x = random_values(3 * n, n), w = random_values(n, 100 + n), b = random_values(n, 200 + n);
    std::vector<double> y(x.size());
    for (int variant = 0; variant < 4; ++variant) {
      const double* wp = variant & 1 ? w.data() : nullptr;
      const double* bp = variant & 2 ? b.data() : nullptr;
      layer_norm<double>(x.data(), wp, bp, y.data(), 3, n, 1e-5);
      std::vector<double> expected = reference(x, wp, bp, n, 1e-5, false);
      for (size_t i = 0; i < y.size(); ++i)
        EXPECT_NEAR(y[i], expected[i], 1e-12) << "n " << n << " variant " << variant;
    }
  }
}

TEST(NormKernel, RmsNormFloat64) {
  std::vector<double> x = random_values(4 * 19, 1), w = random_values(19, 2), y(x.size());
  rms_norm<double>(x.data(), w.data(), y.data(), 4, 19, 1e-6);
  std::vector<double> expected = reference(x, w.data(), nullptr, 19, 1e-6, true);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], expected[i], 1e-12);
  rms_norm<double>(x.data(), nullptr, y.data(), 4, 19, 1e-6);
  expected = reference(x, nullptr, nullptr, 19, 1e-6, true);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], expected[i], 1e-12);
}

TEST(NormKernel, Float32TwoPassVarianceSurvivesALargeMean) {
  std::vector<double> values = random_values(2 * 300, 3, 3e4);
  std::vector<float> x(values.begin(), values.end()), y(x.size());
  std::vector<double> exact(x.begin(), x.end());
  layer_norm<float>(x.data(), nullptr, nullptr, y.data(), 2, 300, 1e-5);
  std::vector<double> expected = reference(exact, nullptr, nullptr, 300, 1e-5, false);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], expected[i], 2e-3);
}

TEST(NormKernel, BFloat16ComputesInFloat32) {
  std::vector<double> values = random_values(2 * 24, 4), wv = random_values(24, 5);
  std::vector<BFloat16> x, w, y(values.size());
  std::vector<double> xr, wr;
  for (double v : values) x.push_back(BFloat16(static_cast<float>(v)));
  for (double v : wv) w.push_back(BFloat16(static_cast<float>(v)));
  for (BFloat16 v : x) xr.push_back(static_cast<float>(v));
  for (BFloat16 v : w) wr.push_back(static_cast<float>(v));
  layer_norm<BFloat16>(x.data(), w.data(), w.data(), y.data(), 2, 24, 1e-5);
  std::vector<double> expected = reference(xr, wr.data(), wr.data(), 24, 1e-5, false);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(static_cast<float>(y[i]), expected[i], 2e-2);
  rms_norm<BFloat16>(x.data(), w.data(), y.data(), 2, 24, 1e-6);
  expected = reference(xr, wr.data(), nullptr, 24, 1e-6, true);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(static_cast<float>(y[i]), expected[i], 2e-2);
}

TEST(NormKernel, ConstantRowNormalizesToTheBias) {
  std::vector<float> x(8, 5.0f), b(8, 0.5f), y(8);
  layer_norm<float>(x.data(), nullptr, b.data(), y.data(), 1, 8, 1e-5);
  for (float v : y) EXPECT_EQ(v, 0.5f);
}

}  // namespace
}  // namespace px::kernels
