// GEMM kernels against a naive float64 triple loop written here, for every
// operand layout BLAS reads in place (row-major, column-major), layouts that
// must be copied (strided both ways, broadcast), batches with broadcasting, the
// fold of a shared-weight batch into one GEMM, bf16, beta, and empty dims.

#include "parallax/kernels/gemm.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "parallax/kernels/blas_threads.h"

namespace px::kernels {
namespace {

std::vector<double> random_values(int64_t count, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> out(static_cast<size_t>(count));
  for (double& v : out) v = dist(engine);
  return out;
}

double at(const std::vector<double>& data, const MatrixLayout& m, int64_t offset, int64_t i, int64_t j) {
  return data[static_cast<size_t>(offset + i * m.row_stride + j * m.col_stride)];
}

std::vector<double> naive_matmul(const std::vector<double>& a, const MatrixLayout& la, int64_t a_offset,
                                 const std::vector<double>& b, const MatrixLayout& lb, int64_t b_offset) {
  std::vector<double> c(static_cast<size_t>(la.rows * lb.cols), 0.0);
  for (int64_t i = 0; i < la.rows; ++i) {
    for (int64_t j = 0; j < lb.cols; ++j) {
      double total = 0;
      for (int64_t p = 0; p < la.cols; ++p) total += at(a, la, a_offset, i, p) * at(b, lb, b_offset, p, j);
      c[static_cast<size_t>(i * lb.cols + j)] = total;
    }
  }
  return c;
}

// Layouts of an r x c matrix inside a buffer of 4*r*c + 8 elements.
std::vector<std::pair<const char*, MatrixLayout>> layouts(int64_t r, int64_t c) {
  return {{"row_major", {r, c, c, 1}},       {"padded_rows", {r, c, c + 3, 1}}, {"col_major", {r, c, 1, r}},
          {"padded_cols", {r, c, 1, r + 2}}, {"strided", {r, c, 2 * c, 2}},     {"broadcast_rows", {r, c, 0, 1}}};
}

TEST(Gemm, EveryOperandLayoutMatchesNaive) {
  const int64_t m = 5, k = 7, n = 3;
  std::vector<double> a = random_values(4 * m * k + 8, 1), b = random_values(4 * k * n + 8, 2);
  for (auto [a_name, la] : layouts(m, k)) {
    for (auto [b_name, lb] : layouts(k, n)) {
      std::vector<double> c(static_cast<size_t>(m * n), -99.0);
      gemm(a.data() + 1, la, b.data() + 2, lb, c.data(), n);
      std::vector<double> expected = naive_matmul(a, la, 1, b, lb, 2);
      for (size_t i = 0; i < c.size(); ++i) EXPECT_NEAR(c[i], expected[i], 1e-12) << a_name << " x " << b_name;
    }
  }
}

TEST(Gemm, VectorsAndUnitDimsUseAnyStride) {
  std::vector<double> a = random_values(40, 3), b = random_values(40, 4);
  // Row vector times column vector with strides 3 and 5 and a free stride on the unit dims.
  MatrixLayout row{1, 6, 0, 3}, column{6, 1, 5, 0};
  double dot = 0;
  gemm(a.data(), row, b.data(), column, &dot, 1);
  EXPECT_NEAR(dot, naive_matmul(a, row, 0, b, column, 0)[0], 1e-12);
}

TEST(Gemm, BetaAccumulatesAndKZeroScales) {
  std::vector<double> a{1, 2, 3, 4}, b{1, 0, 0, 1};
  std::vector<double> c{10, 20, 30, 40};
  gemm(a.data(), MatrixLayout{2, 2, 2, 1}, b.data(), MatrixLayout{2, 2, 2, 1}, c.data(), 2, 1.0);
  EXPECT_EQ(c, (std::vector<double>{11, 22, 33, 44}));
  std::vector<double> garbage{std::nan(""), 5, 6, 7};
  gemm(a.data(), MatrixLayout{2, 0, 0, 1}, b.data(), MatrixLayout{0, 2, 2, 1}, garbage.data(), 2);
  EXPECT_EQ(garbage, (std::vector<double>{0, 0, 0, 0}));
}

TEST(Gemm, FloatAndBFloat16) {
  const int64_t m = 4, k = 6, n = 5;
  std::vector<double> a = random_values(m * k, 5), b = random_values(k * n, 6);
  MatrixLayout la{m, k, 1, m}, lb{k, n, n, 1};  // A column-major
  std::vector<double> expected = naive_matmul(a, la, 0, b, lb, 0);
  std::vector<float> a32(a.begin(), a.end()), b32(b.begin(), b.end()), c32(m * n);
  gemm(a32.data(), la, b32.data(), lb, c32.data(), n);
  std::vector<BFloat16> a16, b16, c16(m * n);
  for (double v : a) a16.emplace_back(static_cast<float>(v));
  for (double v : b) b16.emplace_back(static_cast<float>(v));
  gemm(a16.data(), la, b16.data(), lb, c16.data(), n);
  for (int64_t i = 0; i < m * n; ++i) {
    EXPECT_NEAR(c32[i], expected[i], 1e-5);
    EXPECT_NEAR(static_cast<float>(c16[i]), expected[i], 0.05);
  }
}

// Reference for a batched product: per batch element, the naive matmul at its offsets.
std::vector<double> naive_batched(const std::vector<double>& a, const std::vector<double>& b,
                                  const BatchedMatmul& args) {
  std::vector<double> out;
  int64_t count = numel(args.batch_shape);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, a_offset = 0, b_offset = 0;
    for (size_t d = args.batch_shape.size(); d-- > 0;) {
      int64_t index = rest % args.batch_shape[d];
      rest /= args.batch_shape[d];
      a_offset += index * args.a_batch_strides[d];
      b_offset += index * args.b_batch_strides[d];
    }
    std::vector<double> c = naive_matmul(a, args.a, a_offset, b, args.b, b_offset);
    out.insert(out.end(), c.begin(), c.end());
  }
  return out;
}

TEST(BatchedMatmul, BroadcastBatchesAndFoldedBatchesMatchNaive) {
  const int64_t m = 3, k = 4, n = 5;
  std::vector<double> a = random_values(2 * 3 * m * k * 2, 7), b = random_values(3 * k * n * 2, 8);
  std::vector<BatchedMatmul> cases{
      // [2,3] batch, both operands batched and contiguous.
      {{2, 3}, {3 * m * k, m * k}, {0, k * n}, {m, k, k, 1}, {k, n, n, 1}},
      // B shared by the batch, A contiguous: folds into one [6*m, k] GEMM.
      {{2, 3}, {3 * m * k, m * k}, {0, 0}, {m, k, k, 1}, {k, n, 1, k}},
      // B shared, A's batch dims permuted: cannot fold, runs per batch.
      {{2, 3}, {m * k, 2 * m * k}, {0, 0}, {m, k, k, 1}, {k, n, n, 1}},
      // A broadcast over the batch, B batched and column-major.
      {{3}, {0}, {k * n}, {m, k, k, 1}, {k, n, 1, k}},
      // A 1-row vector batch (a 1-D lhs lifted to a row), B shared.
      {{6}, {k}, {0}, {1, k, 0, 1}, {k, n, n, 1}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const BatchedMatmul& args = cases[i];
    std::vector<double> expected = naive_batched(a, b, args);
    std::vector<double> c(expected.size(), -1.0);
    batched_matmul(a.data(), b.data(), c.data(), args);
    for (size_t j = 0; j < c.size(); ++j) EXPECT_NEAR(c[j], expected[j], 1e-12) << "case " << i << " element " << j;
  }
}

TEST(BatchedMatmul, BetaAddsToThePrefilledOutput) {
  std::vector<float> a{1, 2, 3, 4, 5, 6}, b{1, 1};
  std::vector<float> c{100, 200, 300};
  BatchedMatmul args{{3}, {2}, {0}, {1, 2, 2, 1}, {2, 1, 1, 1}};
  batched_matmul(a.data(), b.data(), c.data(), args, 1.0f);
  EXPECT_EQ(c, (std::vector<float>{103, 207, 311}));
}

TEST(Gemm, BroadcastRowsFillsEveryRow) {
  std::vector<double> bias{1, -1, 2, -2, 3, -3};
  std::vector<double> out(6);
  broadcast_rows(bias.data(), 2, 3, out.data(), 2);
  EXPECT_EQ(out, (std::vector<double>{1, 2, 3, 1, 2, 3}));
}

TEST(BlasThreads, SettingRoundTripsAndCoreNameIsKnown) {
  int before = blas_threads();
  set_blas_threads(1);
  EXPECT_EQ(blas_threads(), 1);
  set_blas_threads(0);  // clamps to 1
  EXPECT_EQ(blas_threads(), 1);
  set_blas_threads(before);
  EXPECT_FALSE(blas_core_name().empty());
}

}  // namespace
}  // namespace px::kernels
