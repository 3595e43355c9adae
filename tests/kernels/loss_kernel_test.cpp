// The cross_entropy / nll_loss kernels on raw, strided buffers.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "parallax/core/dtype.h"
#include "parallax/core/error.h"
#include "parallax/kernels/loss.h"

namespace px::kernels {
namespace {

TEST(LossKernel, CrossEntropyRowsAndReductions) {
  // Two rows of three logits; the second row ignored via ignore_index = 7.
  std::vector<double> logits{1, 2, 3, 0, 0, 0};
  std::vector<int64_t> target{2, 7};
  LossLayout layout{.rows = 2, .classes = 3, .row_stride = 3, .class_stride = 1, .target_stride = 1};
  double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  std::vector<double> rows(2, -1.0);
  cross_entropy<double>(logits.data(), target.data(), layout, 7, LossReduction::None, rows.data());
  EXPECT_NEAR(rows[0], lse - 3, 1e-15);
  EXPECT_EQ(rows[1], 0.0);
  double mean = -1, total = -1;
  cross_entropy<double>(logits.data(), target.data(), layout, 7, LossReduction::Mean, &mean);
  cross_entropy<double>(logits.data(), target.data(), layout, 7, LossReduction::Sum, &total);
  EXPECT_NEAR(mean, lse - 3, 1e-15);  // one counted row
  EXPECT_NEAR(total, lse - 3, 1e-15);
}

TEST(LossKernel, StridedScoresAndTargets) {
  // Scores stored transposed ([C, N] in memory) and targets at every other slot.
  std::vector<float> stored{0.5f, -1.0f, 2.0f, 0.0f, 1.5f, 3.0f};  // [3 classes, 2 rows]
  std::vector<int64_t> target{1, 99, 2, 99};
  LossLayout layout{.rows = 2, .classes = 3, .row_stride = 1, .class_stride = 2, .target_stride = 2};
  std::vector<float> rows(2);
  nll_loss<float>(stored.data(), target.data(), layout, -100, LossReduction::None, rows.data());
  EXPECT_EQ(rows[0], -2.0f);  // row 0 = {0.5, 2.0, 1.5}, class 1
  EXPECT_EQ(rows[1], -3.0f);  // row 1 = {-1.0, 0.0, 3.0}, class 2
  cross_entropy<float>(stored.data(), target.data(), layout, -100, LossReduction::None, rows.data());
  EXPECT_NEAR(rows[1], std::log(std::exp(-1.0) + 1.0 + std::exp(3.0)) - 3.0, 1e-6);
}

TEST(LossKernel, MeanOverNoCountedRowsIsNaN) {
  std::vector<double> logits{1, 2};
  std::vector<int64_t> target{-100};
  LossLayout layout{.rows = 1, .classes = 2, .row_stride = 2, .class_stride = 1, .target_stride = 1};
  double out = 0;
  cross_entropy<double>(logits.data(), target.data(), layout, -100, LossReduction::Mean, &out);
  EXPECT_TRUE(std::isnan(out));
}

TEST(LossKernel, BFloat16LogitsAccumulateInFloat) {
  std::vector<BFloat16> logits;
  for (int i = 0; i < 64; ++i) logits.push_back(BFloat16(static_cast<float>(i % 5)));
  std::vector<int64_t> target{4, 0};
  LossLayout layout{.rows = 2, .classes = 32, .row_stride = 32, .class_stride = 1, .target_stride = 1};
  BFloat16 out;
  cross_entropy<BFloat16>(logits.data(), target.data(), layout, -100, LossReduction::Sum, &out);
  double expected = 0;
  for (int r = 0; r < 2; ++r) {
    double total = 0;
    for (int c = 0; c < 32; ++c) total += std::exp(static_cast<double>((r * 32 + c) % 5));
    expected += std::log(total) - static_cast<double>((r * 32 + target[r]) % 5);
  }
  EXPECT_NEAR(static_cast<float>(out), expected, 0.02 * expected);
}

TEST(LossKernel, OutOfRangeTargetThrowsValueError) {
  std::vector<double> logits{1, 2, 3};
  std::vector<int64_t> target{3};
  LossLayout layout{.rows = 1, .classes = 3, .row_stride = 3, .class_stride = 1, .target_stride = 1};
  double out = 0;
  try {
    cross_entropy<double>(logits.data(), target.data(), layout, -100, LossReduction::Mean, &out);
    FAIL() << "no throw";
  } catch (const ValueError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("cross_entropy: target 3 at row 0 is out of range for 3 classes"), std::string::npos)
        << message;
  }
  EXPECT_THROW(nll_loss<double>(logits.data(), target.data(), layout, -100, LossReduction::Sum, &out), ValueError);
}

}  // namespace
}  // namespace px::kernels
