// The gather / scatter-add / one-hot kernels on raw buffers.

#include <gtest/gtest.h>

#include <vector>

#include "parallax/core/dtype.h"
#include "parallax/core/error.h"
#include "parallax/kernels/embedding.h"

namespace px::kernels {
namespace {

TEST(EmbeddingKernel, GathersRows) {
  std::vector<float> weight{0, 1, 10, 11, 20, 21};  // [3, 2]
  std::vector<int64_t> indices{2, 0, 2};
  std::vector<float> out(6);
  embedding<float>(weight.data(), 3, 2, indices.data(), 3, out.data());
  EXPECT_EQ(out, (std::vector<float>{20, 21, 0, 1, 20, 21}));
}

TEST(EmbeddingKernel, BadIndexThrowsBeforeWritingAnything) {
  std::vector<double> weight{0, 1, 2, 3};  // [2, 2]
  std::vector<int64_t> indices{1, 2};
  std::vector<double> out(4, -7.0);
  try {
    embedding<double>(weight.data(), 2, 2, indices.data(), 2, out.data());
    FAIL() << "no throw";
  } catch (const ValueError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("embedding: index 2 at position 1 is out of range for vocabulary size 2"), std::string::npos)
        << message;
  }
  EXPECT_EQ(out, std::vector<double>(4, -7.0));
}

TEST(EmbeddingKernel, BackwardAccumulatesRepeatedRows) {
  std::vector<double> grad{1, 2, 3, 4, 5, 6};  // [3, 2]
  std::vector<int64_t> indices{1, 0, 1};
  std::vector<double> out(6, 0.0);  // [3, 2]
  embedding_backward<double>(grad.data(), indices.data(), 3, 2, 3, out.data());
  EXPECT_EQ(out, (std::vector<double>{3, 4, 6, 8, 0, 0}));
}

TEST(EmbeddingKernel, BFloat16BackwardAccumulatesInFloat32) {
  // 256 additions of 1 to one row: bfloat16 accumulation would stall at 256 - it has 8 mantissa bits.
  std::vector<BFloat16> grad(300, BFloat16(1.0f));
  std::vector<int64_t> indices(300, 0);
  std::vector<BFloat16> out(1);
  embedding_backward<BFloat16>(grad.data(), indices.data(), 300, 1, 1, out.data());
  EXPECT_EQ(static_cast<float>(out[0]), 300.0f);
}

TEST(EmbeddingKernel, OneHot) {
  std::vector<int64_t> indices{2, 0};
  std::vector<int64_t> out(6, 0);
  one_hot<int64_t>(indices.data(), 2, 3, out.data());
  EXPECT_EQ(out, (std::vector<int64_t>{0, 0, 1, 1, 0, 0}));
  std::vector<int64_t> bad{3};
  EXPECT_THROW(one_hot<int64_t>(bad.data(), 1, 3, out.data()), ValueError);
}

}  // namespace
}  // namespace px::kernels
